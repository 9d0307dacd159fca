"""The page's state for one run: the policies (checked-in, draft, the one in use), the store as read, where the policy in use came from, and the draft kept in the store across reloads."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import streamlit as st
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from coachctx import playground as pg
from coachctx.engine.decision import Decision
from coachctx.engine.policy import Policy
from coachctx.errors import CoachctxError, PolicyError
from coachctx.model import ModelSettings
from coachctx.playground.ui.cache import (
    CHECKED_IN,
    HISTORY_LIMIT,
    checked_in_text,
    draft_check,
    open_store,
    policy_from_text,
    upstream,
)
from coachctx.playground.ui.url import apply_view, current_view, default_view, navigated
from coachctx.tools.store import Label, PolicyStore, Version, default_store_url


@dataclass(frozen=True)
class Policies:
    checked_in: Policy
    checked_in_text: str
    working: Policy
    """The last valid draft: what the decision uses."""
    draft: pg.DraftCheck
    draft_text: str


@dataclass(frozen=True)
class StoreView:
    """The policy store as this run read it: versions (newest first) and labels, or why the
    store cannot be used (then the rest of the page works without it)."""

    url: str
    store: PolicyStore | None
    error: str | None
    versions: tuple[Version, ...] = ()
    labels: Mapping[str, Label] | None = None

    @property
    def label_map(self) -> Mapping[str, Label]:
        return self.labels or {}

    @cached_property
    def _by_number(self) -> dict[int, Version]:
        return {v.number: v for v in self.versions}

    def version(self, number: int) -> Version | None:
        found = self._by_number.get(number)
        if found is None and self.store is not None:  # older than the history the page read
            try:
                found = self.store.get(number)
            except CoachctxError:
                return None
        return found


@dataclass(frozen=True)
class Context:
    """What every tab gets."""

    decision: Decision | None
    decision_error: str | None
    policies: Policies
    model: ModelSettings | None
    view: pg.ViewState
    store: StoreView
    origin: pg.PolicyOrigin


KEPT_WIDGETS = ("policy_yaml", "author", "save_message", "ed_intent", "ed_scope", "impact_source")


def restore_draft(draft_id: str, notes: list[str]) -> None:
    """A reload (or a link) names the draft kept in the policy store: bring it back. An id the
    store does not have is a session that never edited (or another installation's draft): the
    page starts from the checked-in policy and keeps the id."""
    try:
        kept = open_store(default_store_url()).get_draft(draft_id)
    except CoachctxError as e:
        notes.append(f"the edited draft {draft_id} could not be read back ({e}); the page starts from the "
                     "checked-in policy")
        return
    if kept is None:
        return
    ss = st.session_state
    ss["policy_yaml"], ss["draft_base"] = kept.yaml, kept.base
    ss["draft_kept"] = (kept.yaml, kept.base)
    ss["draft_restored"] = kept.updated_at


def init_state(base_text: str, base: Policy) -> None:
    ss = st.session_state
    ss.setdefault("policy_yaml", base_text)
    ss.setdefault("working_yaml", base_text)
    ss.setdefault("draft_base", None)  # the stored version the draft was loaded from or last saved as
    ss.setdefault("draft_id", None)  # where the draft is kept in the store once it differs from the checked-in
    ss.setdefault("author", os.environ.get("COACHCTX_AUTHOR", ""))
    if "url_loaded" not in ss:
        ss["url_loaded"] = True
        view, notes = pg.decode_view(dict(st.query_params), athletes=upstream().athletes(), tiers=list(base.tiers),
                                     default=default_view(base))
        apply_view(view)
        # the id is in the address from the first run on, so the first edit adds no history entry
        ss["draft_id"] = view.draft_id or secrets.token_urlsafe(9)
        if view.draft_id:  # an id made just now names no kept draft: nothing to read back
            restore_draft(ss["draft_id"], notes)
        ss["link_digest"] = view.policy_digest
        ss["url_notes"] = notes
    elif navigated():
        view, _ = pg.decode_view(dict(st.query_params), athletes=upstream().athletes(), tiers=[*base.tiers],
                                 default=current_view())
        apply_view(view)
    # Only the open tab is laid out, and a widget not laid out in a run loses its state: the inputs
    # of other tabs that hold work are written back (each has no default a rewrite would contradict).
    for key in KEPT_WIDGETS:
        if key in ss:
            ss[key] = ss[key]
    # a pasted or typed lone surrogate would break every encoder downstream (hashing, JSON, the store)
    for key in ("question", "policy_yaml"):
        value = ss.get(key)
        if isinstance(value, str) and pg.clean_text(value) != value:
            ss[key] = pg.clean_text(value)


def keep_draft(policies: Policies, sv: StoreView) -> None:
    """Write the draft to the policy store whenever it changed, under an id the URL carries, so
    a reload or a restart restores it. An untouched checked-in policy needs no id."""
    ss = st.session_state
    state = (ss["policy_yaml"], ss.get("draft_base"))
    if state == ss.get("draft_kept"):
        return
    if ss.get("draft_kept") is None and state[0] == policies.checked_in_text:
        return  # nothing edited yet (whatever stored version it equals, `origin_of`): nothing to keep
    if sv.store is None:
        ss["draft_keep_error"] = f"the policy store cannot be used ({sv.error})"
        return
    draft_id = ss.get("draft_id") or secrets.token_urlsafe(9)
    try:
        sv.store.put_draft(draft_id, state[0], state[1])
    except CoachctxError as e:
        ss["draft_keep_error"] = str(e)
        return
    ss["draft_id"], ss["draft_kept"] = draft_id, state
    ss.pop("draft_keep_error", None)


def load_policies() -> Policies:
    ss = st.session_state
    base_text = checked_in_text()
    base = policy_from_text(base_text)
    init_state(base_text, base)
    draft_text = ss["policy_yaml"]
    check = draft_check(draft_text)
    if check.ok:
        ss["working_yaml"] = draft_text
    try:
        working = policy_from_text(ss["working_yaml"])
    except PolicyError:  # the checked-in file changed under us and is now invalid
        ss["working_yaml"] = base_text
        working = base
    return Policies(checked_in=base, checked_in_text=base_text, working=working, draft=check, draft_text=draft_text)


def store_display(url: str) -> str:
    """The store URL without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError):
        return "(an unreadable store URL)"


def load_store() -> StoreView:
    """Read versions and labels afresh on every run: another coach (or the CLI) may have saved."""
    url = default_store_url()
    try:
        store = open_store(url)
        versions = tuple(store.history(limit=HISTORY_LIMIT))
        labels = store.labels()
    except CoachctxError as e:
        return StoreView(url=url, store=None, error=str(e))
    return StoreView(url=url, store=store, error=None, versions=versions, labels=labels)


def origin_of(policies: Policies, sv: StoreView) -> pg.PolicyOrigin:
    """Where the policy in use came from. A draft that equals a stored version and was based on
    none (the checked-in policy, saved earlier as version 1) is from then on based on it, so
    the coach's edits are saved on top of it and a save after another coach's is refused."""
    ss = st.session_state

    def origin(base: int | None) -> pg.PolicyOrigin:
        return pg.policy_origin(policies.working.digest, checked_in_digest=policies.checked_in.digest,
                                checked_in_source=CHECKED_IN, versions=sv.versions, labels=sv.label_map, base=base)

    found = origin(ss.get("draft_base"))
    if ss.get("draft_base") is None and found.version is not None and policies.draft.ok:
        ss["draft_base"] = int(found.version)
        # and said as the next run will say it: a page drawn with the origin of before would be
        # drawn again, whole, at the first question (a fragment rerun finding the header stale)
        found = origin(ss["draft_base"])
    return found
