"""coachctx policy playground: try a question against a sample athlete, see every step of the
decision, edit the policy in the browser (with lint), save it as a version, compare and revert
versions, see what a change does to a few hundred logged questions, share a view, reproduce a trace.

The page renders a `Decision`; it decides nothing itself. Run it with `make run`.
Each tab is one function taking the same `Context`; add a tab by adding it to `TABS`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import streamlit as st
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from coachctx import playground as pg
from coachctx import playground_suggest_tab as suggest_tab
from coachctx.engine.decision import Decision
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import COST_MODES, MAX_QUESTION_CHARS, SCOPE_REQUESTS, select
from coachctx.engine.policy import (
    DEFAULT_POLICY_PATH,
    INTENTS,
    SCOPES,
    Policy,
    parse_policy,
    read_policy_text,
)
from coachctx.engine.services import Bundle, FixtureUpstream, fetch_bundle
from coachctx.errors import CoachctxError, PolicyError, TraceError
from coachctx.model import OpenAIClassifier
from coachctx.tools.impact import run_impact
from coachctx.tools.impact_report import ImpactReport
from coachctx.tools.lint import Finding, errors, lint_policy
from coachctx.tools.policy_diff import diff_policies
from coachctx.tools.questions import QuestionSet, read_questions
from coachctx.tools.store import (
    MAX_AUTHOR_CHARS,
    MAX_MESSAGE_CHARS,
    STORE_ENV,
    Label,
    PolicyStore,
    StaleSaveError,
    Version,
    based_on,
    default_store_url,
)
from coachctx.tools.trace import MAX_TRACE_BYTES, parse_trace, replay

CHECKED_IN = "policy/default.yaml"
ICON = Path(__file__).resolve().parent / "assets" / "favicon.png"
# Less empty space above the title, so the decision summary is on the first screen at 1366×768.
PAGE_CSS = ("<style>.st-key-policy_yaml textarea {font-family: 'Source Code Pro', monospace; font-size: 0.85rem;}"
            "[data-testid='stMainBlockContainer'] {padding-top: 3.5rem;}"
            # the YAML keeps its own line breaks (a wrapped line would not match the numbers in errors)
            ".st-key-policy_yaml textarea {white-space: pre; overflow-wrap: normal; overflow-x: auto;}"
            # a multiselect's chips wrap onto more lines instead of scrolling out of sight in a narrow column
            "[data-testid='stMultiSelect'] .react-aria-ComboBox > div > div:first-child {flex-wrap: wrap; "
            "height: auto; max-height: none; overflow: visible;}"
            "[data-testid='stMultiSelect'] .react-aria-ComboBox > div {height: auto; max-height: none;}"
            # each uploader states its limit once, in its label; Streamlit's line would state a second one
            "[data-testid='stFileUploaderDropzoneInstructions'] {display: none;}</style>")
SAMPLE_LOG = Path(__file__).resolve().parent / "sample_logs" / "questions.jsonl"
HISTORY_LIMIT = 500
NO_LABEL = "(no label)"
T = TypeVar("T")
CHECKED_IN_CHOICE, DRAFT_CHOICE = "@checked-in", "@draft"
CONFIG_HELP = (
    "Reply generation needs an OpenAI-compatible endpoint. Configure one of: the environment variables "
    "`OPENAI_API_KEY` (and optionally `OPENAI_BASE_URL` for another compatible server, `COACHCTX_MODEL` for "
    "the model name) before `make run`; the same keys in `.streamlit/secrets.toml`; or a key typed into "
    "the sidebar's password field for this session only. Everything else on this page works without one."
)


# --- cached data: fixtures, parsed policies, decisions -----------------------------------------


@st.cache_resource
def upstream() -> FixtureUpstream:
    return FixtureUpstream()


@st.cache_resource(max_entries=32)
def bundle_for(athlete: str) -> Bundle:
    return fetch_bundle(upstream(), athlete)


@st.cache_resource(max_entries=64)
def policy_from_text(text: str) -> Policy:
    """Parsed once per distinct text; a PolicyError is raised (and not cached) for a bad one."""
    return parse_policy(text)


@st.cache_resource(max_entries=8)
def classifier_for(_config: pg.ModelConfig, cache_key: tuple[str, ...]) -> OpenAIClassifier:
    return OpenAIClassifier(api_key=_config.api_key, base_url=_config.base_url, model=_config.model,
                            timeout_s=_config.timeout_s)


@st.cache_data(max_entries=256, show_spinner="Deciding…")
def decide(question: str, athlete: str, scope: str, tier: str, budget: int | None, cost_mode: str,
           _policy: Policy, digest: str, source: str, version: str | None,
           _config: pg.ModelConfig | None, model_key: tuple[str, ...]) -> Decision:
    """Cached per inputs, policy digest and origin and model configuration, so a model is asked once."""
    classifier = classifier_for(_config, model_key) if _config is not None else None
    return select(question, bundle_for(athlete), _policy, scope=scope, tier=tier, budget=budget,
                  cost_mode=cost_mode, classifier=classifier, policy_source=source,  # type: ignore[arg-type]
                  policy_version=version)


@st.cache_resource(max_entries=4)
def open_store(url: str) -> PolicyStore:
    """One store (connection pool) per URL, shared by every session: saves from any of them,
    or from the CLI, are read back on each rerun."""
    return PolicyStore(url)


@st.cache_resource(max_entries=4)
def sample_questions(path: str, mtime: float) -> QuestionSet:
    return read_questions(path)


@st.cache_resource(max_entries=4)
def uploaded_questions(data: bytes, name: str) -> QuestionSet:
    return pg.parse_question_upload(data, name)


def lint_of(policy: Policy) -> list[Finding]:
    return policy.derived("playground:lint", lint_policy)


def checked_in_text() -> str:
    return read_policy_text(DEFAULT_POLICY_PATH)


def secrets_settings() -> dict[str, str]:
    """Model settings from `.streamlit/secrets.toml`; {} when there is no such file."""
    try:
        return {k: str(st.secrets[k]) for k in pg.MODEL_SETTING_KEYS if k in st.secrets}
    except FileNotFoundError:
        return {}
    except Exception:  # a malformed secrets.toml must not take the page down
        return {}


def upload_cap(limit: int) -> int:
    """Streamlit's own cap (whole MB), set above ours: a file a little over our limit then gets our
    message inline, where the result would be, instead of a red chip explaining only on hover."""
    return 2 * math.ceil(limit / (1024 * 1024))


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


# --- state -------------------------------------------------------------------------------------


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
    model: pg.ModelConfig | None
    view: pg.ViewState
    store: StoreView
    origin: pg.PolicyOrigin


def default_view(base: Policy) -> pg.ViewState:
    athletes = upstream().athletes()
    return pg.ViewState(question=pg.PAIN_QUESTION, athlete="maya" if "maya" in athletes else athletes[0],
                        tier="paid" if "paid" in base.tiers else next(iter(base.tiers)))


def current_view() -> pg.ViewState:
    ss = st.session_state
    return pg.ViewState(question=ss.get("question") or "", athlete=ss["athlete"], scope=ss["scope"], tier=ss["tier"],
                        budget=ss.get("budget"), cost_mode=ss["cost_mode"])


def apply_view(view: pg.ViewState) -> None:
    """Put a view into the input widgets' state; runs before the widgets exist in this run."""
    ss = st.session_state
    ss["question"] = view.question
    ss["athlete"] = view.athlete
    ss["scope"] = view.scope
    ss["tier"] = view.tier
    ss["budget"] = view.budget if view.budget is not None else ss.get("budget", 200)
    ss["cost_mode"] = view.cost_mode


def url_view_params() -> dict[str, str]:
    return {k: str(st.query_params.get(k)) for k in pg.VIEW_KEYS if st.query_params.get(k) is not None}


def navigated() -> bool:
    """True when the address bar no longer shows what this page last wrote there: the user went
    Back or Forward (Streamlit reruns the script with that entry's parameters)."""
    written = st.session_state.get("url_written")
    if written is None:
        return False
    return url_view_params() != {k: v for k, v in written.items() if k in pg.VIEW_KEYS}


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
        restore_draft(ss["draft_id"], notes)
        ss["link_digest"] = view.policy_digest
        ss["url_notes"] = notes
    elif navigated():
        view, _ = pg.decode_view(dict(st.query_params), athletes=upstream().athletes(), tiers=[*base.tiers],
                                 default=current_view())
        apply_view(view)
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
    if ss.get("draft_kept") is None and state == (policies.checked_in_text, None):
        return  # nothing edited yet: nothing to keep
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
    check = pg.check_draft(draft_text, policy_from_text)
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
    origin = pg.policy_origin(policies.working.digest, checked_in_digest=policies.checked_in.digest,
                              checked_in_source=CHECKED_IN, versions=sv.versions, labels=sv.label_map,
                              base=ss.get("draft_base"))
    if ss.get("draft_base") is None and origin.version is not None and policies.draft.ok:
        ss["draft_base"] = int(origin.version)
    return origin


# --- callbacks (they run before the widgets of the next run exist) -----------------------------


def use_example(question: str) -> None:
    st.session_state["question"] = question


def reset_draft() -> None:
    st.session_state["policy_yaml"] = checked_in_text()
    st.session_state["draft_base"] = None
    st.session_state.pop("import_status", None)


def on_policy_upload() -> None:
    upload = st.session_state.get("policy_upload")
    if upload is None:
        return
    data = upload.getvalue()
    try:
        text, policy = pg.import_policy_bytes(data, upload.name)
    except PolicyError as e:
        readable = data.decode("utf-8", errors="replace") if len(data) <= pg.MAX_IMPORT_BYTES else ""
        st.session_state["import_text"] = readable
        st.session_state["import_status"] = ("error", f"{upload.name} was not imported; the draft is unchanged.",
                                             pg.problems_of(e, readable))
        return
    st.session_state["policy_yaml"] = text
    st.session_state["draft_base"] = stored_base(text)
    st.session_state["import_status"] = ("ok", f"Imported {upload.name} (digest {policy.digest}) as the draft.", [])


def stored_base(text: str) -> int | None:
    """The version an exported file says it came from (`coachctx policy show`), if this store has it."""
    number = based_on(text)
    if number is None:
        return None
    try:
        open_store(default_store_url()).get(number)
    except CoachctxError:
        return None
    return number


# --- version callbacks: the store refuses what would lose work; the message says what to do ----


def set_status(kind: str, message: str, detail: dict[str, Any] | None = None) -> None:
    st.session_state["versions_status"] = {"kind": kind, "message": message, **(detail or {})}


def save_draft(url: str) -> None:
    ss = st.session_state
    label = ss.get("save_label")
    label = None if label in (None, NO_LABEL) else str(label)
    base = ss.get("draft_base")
    try:
        version = open_store(url).save(ss["policy_yaml"], message=ss.get("save_message") or "",
                                       author=ss.get("author") or "", label=label, base=base, source="the draft")
    except StaleSaveError as e:
        message = str(e) if e.base is not None else (
            f"refused: {e.label!r} points at version {e.head}, and your draft is not based on a stored version, so "
            f"saving it there could undo what version {e.head} changed; load version {e.head}, redo your change "
            "there and save again")
        set_status("stale", message, {"label": e.label, "head": e.head, "base": e.base})
        return
    except CoachctxError as e:
        set_status("error", f"Not saved: {e}")
        return
    moved = f"; {label} now points at it" if label else " (no label moved)"
    set_status("ok", f"Saved version {version.number} (digest `{version.digest}`, parent "
                     f"{version.parent if version.parent is not None else 'none'}){moved}. The draft is now based on "
                     f"version {version.number}.")
    ss["draft_base"] = version.number
    ss["save_message"] = ""


def load_into_draft(url: str, number: int) -> None:
    ss = st.session_state
    try:
        version = open_store(url).get(number)
    except CoachctxError as e:
        set_status("error", f"Not loaded: {e}")
        return
    ss["draft_undo"] = {"text": ss["policy_yaml"], "base": ss.get("draft_base")}
    ss["policy_yaml"] = version.yaml
    ss["draft_base"] = number
    ss.pop("save_label", None)  # a new base: the save label's default is worked out again
    set_status("ok", f"The page now decides with version {number} (it is your draft: saving builds on it). The "
                     "draft you had is kept for one undo.")


def undo_load() -> None:
    ss = st.session_state
    undo = ss.pop("draft_undo", None)
    if undo:
        ss["policy_yaml"], ss["draft_base"] = undo["text"], undo["base"]
        set_status("ok", "Restored the draft you had before loading a version.")


def move_label(url: str, label: str, expected: int | None, widget_key: str | None, target: int | None = None,
               how: str = "moved") -> None:
    """Point `label` at `target` (or the version chosen in `widget_key`), if it still points at
    `expected`. The page keeps deciding with the draft; the status offers to use the version here."""
    ss = st.session_state
    if target is None and widget_key is not None:
        target = ss.get(widget_key)
    if target is None:
        return
    try:
        open_store(url).set_label(label, int(target), author=ss.get("author") or "", expected=expected)
    except StaleSaveError as e:
        set_status("error", f"Not {how}: {label} no longer points at version {expected}; it was moved to version "
                            f"{e.head} meanwhile. The page now shows where it points; choose again.")
        return
    except CoachctxError as e:
        set_status("error", f"Not {how}: {e}")
        return
    set_status("ok", f"{label} now points at version {target} (it pointed at {expected}). Every move is in the "
                     "label's log below.", {"use": int(target)})


def set_editor_status(feedback: pg.EditFeedback) -> None:
    st.session_state["editor_status"] = feedback


def write_draft(path: tuple[str | int, ...], value: Any) -> bool:
    """Set `value` at `path` in the draft text, keeping its comments; False when the draft
    cannot be edited by the form (it does not parse)."""
    ss = st.session_state
    try:
        ss["policy_yaml"] = pg.edit_draft_text(ss["policy_yaml"], path, value)
    except CoachctxError as e:  # a draft the form cannot edit (it does not parse, or has a list where a mapping goes)
        set_editor_status(pg.EditFeedback("warning", f"Not changed: {e}"))
        return False
    return True


def where_words(path: tuple[str | int, ...]) -> str:
    return pg.describe_path(".".join(str(p) for p in path))


def edit_setting(path: tuple[str | int, ...], widget_key: str) -> None:
    """A form control changed: write its value into the draft YAML at `path`, and say what it did."""
    ss = st.session_state
    data = pg.draft_data(ss["policy_yaml"])
    if data is None:
        return
    value = ss[widget_key]
    if len(path) == 3 and path[0] == "intents" and path[2] in ("primary", "secondary", "exclude"):
        feedback = pg.list_edit_feedback(data, str(path[1]), str(path[2]), list(value))
    else:
        old = pg.draft_value(data, path)
        feedback = (pg.EditFeedback("info", f"No change: {where_words(path)} is already {pg.show_value(value)}.")
                    if old == value else
                    pg.EditFeedback("ok", f"Set {where_words(path)} to {pg.show_value(value)} (was "
                                          f"{pg.show_value(old)})."))
    if feedback.kind != "info" and not write_draft(path, value):
        return
    set_editor_status(feedback)


def follow_offer(path: tuple[str | int, ...], value: Any, done: str) -> None:
    if write_draft(path, value):
        set_editor_status(pg.EditFeedback("ok", done))


def edit_table(path: tuple[str | int, ...], widget_key: str, base_rows: list[dict[str, Any]],
               rebuild: Callable[[list[dict[str, Any]]], Any]) -> None:
    ss = st.session_state
    data = pg.draft_data(ss["policy_yaml"])
    if data is None:
        return
    edits = ss[widget_key]
    value = rebuild(pg.apply_table_edits(base_rows, edits))
    if pg.draft_value(data, path) == value:
        set_editor_status(pg.EditFeedback("info", f"No change to {where_words(path)}: the table reads as before "
                                                  "(a row needs every column filled in to count)."))
        return
    if write_draft(path, value):
        n = len(edits.get("edited_rows") or {}), len(edits.get("added_rows") or []), len(edits.get("deleted_rows") or [])
        set_editor_status(pg.EditFeedback("ok", f"Updated {where_words(path)}: {n[0]} row(s) edited, {n[1]} added, "
                                                f"{n[2]} deleted."))


def add_term(intent: str, key: str) -> None:
    ss = st.session_state
    term = " ".join(str(ss.get(f"{key}.term") or "").split())
    data = pg.draft_data(ss["policy_yaml"])
    if data is None:
        return
    if not term:
        set_editor_status(pg.EditFeedback("info", "Type a term first, then press Add term."))
        return
    language = ss.get(f"{key}.language") or "en"
    weight = float(ss.get(f"{key}.weight") or 1.0)
    found = pg.find_term(data, intent, term)
    if found is not None:
        where, had = found
        set_editor_status(pg.EditFeedback("info", f"No change: “{term}” is already a term of {intent} ({where}, "
                                                  f"weight {pg.show_value(had)}). Change its weight in the table."))
        return
    try:
        ss["policy_yaml"] = pg.add_term_text(ss["policy_yaml"], intent, language, term, weight)
    except PolicyError as e:
        set_editor_status(pg.EditFeedback("warning", f"Not added: {e}"))
        return
    ss[f"{key}.term"] = ""
    set_editor_status(pg.EditFeedback("ok", f"Added “{term}” to {intent}'s vocabulary ({language}, weight "
                                            f"{weight:g}). Only that line of the YAML changed."))


def open_trace_inputs(inputs: Mapping[str, Any], tiers: list[str]) -> None:
    ss = st.session_state
    ss["question"] = pg.clean_text(str(inputs.get("question", "")))[:MAX_QUESTION_CHARS]
    kept = []
    athlete = str(inputs.get("athlete"))
    if upstream().has(athlete):
        ss["athlete"] = athlete
    else:
        kept.append(f"the trace's athlete {athlete!r} is not a sample athlete here, so the question opens with "
                    f"{ss.get('athlete')}")
    if inputs.get("scope") in SCOPE_REQUESTS:
        ss["scope"] = inputs["scope"]
    tier = inputs.get("tier")
    if isinstance(inputs.get("budget"), int):
        ss["tier"], ss["budget"] = "custom", inputs["budget"]
    elif tier in tiers:
        ss["tier"] = tier
    elif tier is not None:
        kept.append(f"the trace's tier {tier!r} is not in the policy in use, so the question opens on {ss.get('tier')}")
    if inputs.get("cost_mode") in COST_MODES:
        ss["cost_mode"] = inputs["cost_mode"]
    ss["trace_opened"] = kept


# --- the page ----------------------------------------------------------------------------------


def render_inputs(policies: Policies) -> pg.ViewState:
    """The question and the four choices, as select boxes: they never clip, from 1024 px up."""
    ss = st.session_state
    if "budget" in ss:  # keep the custom budget while its input is hidden (unrendered widgets lose state)
        ss["budget"] = ss["budget"]
    q, examples = st.columns([5, 1.2], vertical_alignment="bottom")
    q.text_input("The athlete's question", key="question", max_chars=MAX_QUESTION_CHARS,
                 placeholder="Type what the athlete asked, e.g. " + pg.PAIN_QUESTION)
    with examples.popover("Examples", icon=":material/lightbulb:", width="stretch"):
        for i, example in enumerate(pg.EXAMPLE_QUESTIONS):
            st.button(example, key=f"example_{i}", on_click=use_example, args=(example,), type="tertiary")
    tiers = [*policies.working.tiers, "custom"]
    if ss.get("tier") not in tiers:
        ss["tier"] = tiers[0]
    athletes = upstream().athletes()
    c1, c2, c3, c4 = st.columns([2.2, 1.2, 1.2, 1.0])
    athlete = c1.selectbox("Athlete", athletes, key="athlete",
                           format_func=lambda a: pg.athlete_label(a, bundle_for(a), upstream().describe(a)),
                           help="Sample athletes (sample_athletes/): each one shows a case — a service down, "
                                "data never computed, empty fields, another language.")
    scope = c2.selectbox("Time horizon", list(SCOPE_REQUESTS), key="scope",
                         format_func=lambda s: pg.SCOPE_LABELS.get(s, s),
                         help="scope: 'from the question' (auto) reads words like 'today' or 'next week'; the "
                              "others force a horizon, whose modifiers promote, demote or drop facts.")
    with c3:
        tier = st.selectbox(
            "Tier", tiers, key="tier",
            format_func=lambda t: f"{t} · {policies.working.tiers[t]} tokens" if t in policies.working.tiers
            else "custom budget",
            help="The token budget for the optional (secondary) facts; the essential (primary) ones are "
                 "always sent.")
        budget = None
        if tier == "custom":
            budget = int(st.number_input("Custom budget (tokens)", min_value=0, max_value=pg.MAX_URL_BUDGET,
                                         step=10, key="budget"))
    cost_mode = c4.selectbox("Count costs", list(COST_MODES), key="cost_mode",
                             format_func=lambda m: pg.COST_LABELS.get(m, m),
                             help="Which cost the budget spends: estimated (`hand`, from the fragment registry) "
                                  "or measured (`measured`, the rendered line counted with tiktoken). The table "
                                  "shows both.")
    return pg.ViewState(question=ss.get("question") or "", athlete=athlete, scope=scope or "auto",
                        tier=tier or tiers[0], budget=budget, cost_mode=cost_mode or "hand",
                        policy_digest=policies.working.digest, draft_id=ss.get("draft_id"))


def render_sidebar(policies: Policies, origin: pg.PolicyOrigin, sv: StoreView) -> pg.ModelConfig | None:
    ss = st.session_state
    with st.sidebar:
        st.header("Policy in use")
        working = policies.working
        st.markdown(f"{origin.description[:1].upper()}{origin.description[1:]} · fingerprint (digest) `{working.digest}`")
        if working.digest != policies.checked_in.digest:
            st.caption(f"The checked-in policy is `{policies.checked_in.digest}`.")
        live = sv.label_map.get("live")
        if live is not None and origin.version != str(live.version):
            st.caption(f"`live` points at version {live.version}; “Use version {live.version} (live) here” in the "
                       "Versions tab decides with it.")
        if not policies.draft.ok:
            st.error(f"The draft has {len(policies.draft.problems)} problem(s); the decision uses the last valid "
                     "version. See the Policy editor tab.")
        link = ss.get("link_digest")
        if link and link != working.digest and ss.get("draft_restored") is None:
            st.warning(f"The address names policy `{link}`, but this page decides with `{working.digest}`, so "
                       "the decision may differ from the one that address was made for. To decide with that "
                       "policy, import its exported YAML (Policy editor) or load its version (Versions).")
        for note in ss.get("url_notes") or []:
            st.info(f"Address: {note}")
        if ss.get("draft_keep_error"):
            st.warning(f"Your draft is not kept across reloads: {ss['draft_keep_error']}. Export it to keep it.")
        elif ss.get("draft_kept") is not None:
            st.caption(f"Your draft is kept in the policy store (draft `{ss['draft_id']}`, in the address): a "
                       "reload or a restart brings it back. Save it as a version to share it.")
        st.caption("Share this view: copy the address bar. It holds the question, athlete, time horizon, tier "
                   "and cost mode, and the draft (on this server) or the policy digest.")

        st.header("Model (optional)")
        st.text_input("OpenAI API key for this session", type="password", key="typed_api_key",
                      help="Kept in this browser session only; never written anywhere.")
        config = pg.resolve_model_config(os.environ, secrets_settings(), ss.get("typed_api_key"))
        if config is None:
            st.caption("No model configured: unsure routing falls back to keyword scores, and reply generation "
                       "is off. Everything else works.")
        else:
            st.caption(f"Model `{config.model}` at {config.base_url or 'api.openai.com'} (from {config.source}).")
            st.checkbox("Ask the model when the rules are unsure", value=True, key="use_model")
    return config


def write_query_params(view: pg.ViewState) -> None:
    """Keep the address bar on this view. Streamlit adds a history entry per change, and Back
    reruns the page with the older entry, which `init_state` puts back into the inputs."""
    wanted = pg.encode_view(view)
    current = {k: st.query_params.get(k) for k in pg.URL_KEYS if st.query_params.get(k) is not None}
    if current != wanted:
        st.query_params.from_dict(wanted)
    st.session_state["url_written"] = wanted


def tab_decision(ctx: Context) -> None:
    d = ctx.decision
    if d is None:
        st.info(ctx.decision_error or "Type a question above to see the decision.")
        return
    i = d.intent
    st.markdown(pg.routing_headline(d))
    m = st.columns(5)
    m[0].metric("Decided by", pg.SOURCE_WORDS.get(i["source"], i["source"]),
                help=f"Routing source `{i['source']}`: keywords (`rules`) were decisive, the model chose "
                     "(`model`), or the rules were unsure and no model answered (`fallback`: a best guess from "
                     "the keyword scores).")
    m[1].metric("Facts sent", f"{len(d.selected)} of {len(d.fragments)}",
                help="Fragments: the eleven facts the services can supply about an athlete.")
    m[2].metric("Coverage", f"{d.coverage:.0%}", help="Share of the requested facts the services supplied.")
    m[3].metric("Confidence", f"{d.confidence:.0%}",
                help="Coverage × routing factor: 1.0 keywords, 0.85 model, 0.6 best guess, 0.4 nothing matched.")
    m[4].metric("Prompt tokens", d.tokens["prompt"], help="A prompt with everything in it (the naive prompt: the "
                f"whole bundle as JSON) would be {d.tokens['naive']} tokens.",
                delta=f"{d.tokens['saved_pct']:g}% smaller", delta_color="off", delta_arrow="off")
    st.markdown(pg.decision_summary(d))
    if d.warnings:
        for w in d.warnings:
            st.warning(f"**Audit warning:** {w}", icon=":material/warning:")
    else:
        st.success("Audit: no warnings for this decision.", icon=":material/verified:")

    st.subheader("1 · Routing: which intent is this question?")
    left, right = st.columns([3, 2])
    with left:
        st.altair_chart(pg.routing_chart(d), width="stretch")
        st.caption(f"Confident only if the top score ≥ threshold {i['threshold']:g} (red line) and it leads the "
                   f"runner-up by ≥ margin {i['required_margin']:g} (a runner-up inside the orange band means unsure).")
    with right:
        st.markdown(f"**Why:** {i['reason']}")
        if i["source"] != "rules" and len(i["contenders"]) > 1:
            st.markdown(f"**Possible intents** (contenders): {', '.join(i['contenders'])} — routing is uncertain, "
                        "so every one of them gets its essential facts, and a fact one of them needs is kept even "
                        "if another excludes it.")
        elif i["source"] != "rules":
            st.markdown(f"**Possible intents** (contenders): only {i['contenders'][0]} — no other intent is "
                        "within the margin.")
        if i.get("model"):
            st.markdown(f"**Model:** {pg.model_answer(i['model'])}")
        if i.get("matched_nothing"):
            st.info(f"No vocabulary matched. Scripts seen in the question: {', '.join(i.get('scripts') or []) or 'none'}. "
                    "Add terms in this language to the vocabulary (Policy editor) to route it by rules.")
        terms = pg.matched_terms_frame(d)
        if not terms.empty:
            st.dataframe(terms, hide_index=True, width="stretch",
                         column_config={"weight": st.column_config.NumberColumn(format="%.2g")})
        scope = d.scope
        if scope["effective"]:
            how = (f"inferred from {', '.join(repr(w) for w in scope['inferred_from'])}" if scope["inferred_from"]
                   else "chosen above")
            st.markdown(f"**Time horizon:** {scope['effective']} ({how})")
        else:
            st.markdown("**Time horizon:** none — no scope words in the question, so no scope modifiers apply")

    suggest_tab.render_label_control(d.to_json(), key="label_decision", store=ctx.store.store,
                                     store_error=ctx.store.error)

    st.subheader("2 · Selection: what the model sees, and why")
    st.markdown(f"Tier **{d.tier}**: {d.budget}-token budget for secondary context, "
                f"{d.tokens.get('budget_spent', 0)} spent · costs counted **{pg.COST_LABELS.get(d.tokens['cost_mode'], d.tokens['cost_mode'])}** "
                f"(`{d.tokens['cost_mode']}`). "
                "Primary context is never cut by the budget.")
    sent, held = st.columns(2)
    with sent, st.container(key="sent_fragments"):
        st.markdown(f"**:green[Sent to the model ({len(d.selected)})]**, in prompt order")
        st.markdown("\n".join(f"- **{pg.fragment_title(f.name)}** — {pg.explain_fragment(f, d)}"
                              for f in d.fragments if f.status == "selected") or "_nothing_")
    with held, st.container(key="withheld_fragments"):
        withheld = [f for f in d.fragments if f.status == "withheld"]
        st.markdown(f"**:red[Withheld ({len(withheld)})]**")
        st.markdown("\n".join(f"- **{pg.fragment_title(f.name)}** — {pg.explain_fragment(f, d)}"
                              for f in withheld) or "_nothing_")

    st.markdown("**All eleven facts** — status and why first; scroll right for costs, the line sent and the "
                "technical names")
    frame = pg.fragments_frame(d)
    st.dataframe(
        frame.style.apply(_status_colors, axis=1), hide_index=True, width="stretch", key="fragments_table",
        height=35 * (len(frame) + 1) + 12,
        column_config={
            "#": st.column_config.NumberColumn("#", width=30, help="Prompt order"),
            "fact": st.column_config.TextColumn("fact", width="medium", pinned=True,
                                                help="The fact in plain words; its technical (fragment) name is "
                                                     "in the last column"),
            "status": st.column_config.TextColumn("status", width="small"),
            "why": st.column_config.TextColumn("why", width="large",
                                               help="The full sentences are in the lists above"),
            "role": st.column_config.TextColumn("role", help="primary: always sent when available; secondary: "
                                                             "sent while the tier's budget lasts"),
            "cost": st.column_config.NumberColumn("cost", help=f"Tokens the budget counted ({d.tokens['cost_mode']})"),
            "line": st.column_config.TextColumn("line sent to the model", width="large"),
            "hand": st.column_config.NumberColumn("estimated", help="Hand-assigned cost from the fragment registry "
                                                                    "(`hand`)"),
            "measured": st.column_config.NumberColumn("measured", help="The rendered line counted with tiktoken"),
            "reasons": st.column_config.TextColumn("reason codes", help="As in the Decision JSON"),
            "fragment": st.column_config.TextColumn("fragment (technical name)"),
        },
    )
    with st.expander("Services for this athlete"):
        st.markdown("\n".join(f"- {line}" for line in pg.service_status_lines(d)))

    budget = ctx.view.budget if ctx.view.tier == "custom" else None
    st.download_button(
        "Download this decision as a trace", key="download_trace", icon=":material/download:", on_click="ignore",
        data=pg.decision_trace_json(d, bundle_for(d.athlete), cost_mode=d.tokens["cost_mode"], budget=budget),
        file_name=f"coachctx-trace-{d.athlete}-{d.policy['digest']}.json", mime="application/json")
    version = d.policy.get("version")
    st.caption(f"The trace holds the inputs, this decision and the athlete's data snapshot; it records the policy "
               f"as `{d.policy['source']}`" + (f", stored version {version}" if version else "")
               + f" (fingerprint `{d.policy['digest']}`). `coachctx replay TRACE` or the Reproduce tab decides it again.")


def _status_colors(row: pd.Series) -> list[str]:
    color = "background-color: rgba(46, 160, 67, 0.12)" if str(row["status"]).endswith("selected") \
        else "background-color: rgba(128, 128, 128, 0.10)"
    return [color] * len(row)


def tab_prompt(ctx: Context) -> None:
    d = ctx.decision
    if d is None:
        st.info(ctx.decision_error or "Type a question above to see the prompt.")
        return
    t = d.tokens
    m = st.columns(4)
    m[0].metric("Prompt tokens", t["prompt"])
    m[1].metric("Everything-in prompt", t["naive"], help="The naive prompt: the same system block plus the whole "
                                                         "fetched bundle as JSON, in tokens.")
    m[2].metric("Saved", f"{t['saved_pct']:g}%", delta=f"-{t['naive'] - t['prompt']} tokens", delta_color="inverse")
    m[3].metric("Reply limit", f"{d.max_words} words")
    st.caption(f"Counted with tiktoken ({t.get('encoding', 'cl100k_base')}, bundled offline).")
    for message in d.prompt["messages"]:
        st.markdown(f"**{message['role']}**")
        st.code(message["content"], language=None, wrap_lines=True)
    with st.expander(f"Everything-in (naive) prompt ({t['naive']} tokens): the whole bundle as JSON"):
        for message in d.prompt["naive_messages"]:
            st.markdown(f"**{message['role']}**")
            st.code(message["content"], language=None, wrap_lines=True)
    st.divider()
    render_reply(d, ctx.model)


def render_reply(d: Decision, config: pg.ModelConfig | None) -> None:
    st.subheader("Generate a reply (optional)")
    if config is None:
        st.button("Generate reply", key="generate", disabled=True, help=CONFIG_HELP)
        st.info(CONFIG_HELP, icon=":material/key:")
        return
    st.caption(f"Sends the prompt above to `{config.model}` at {config.base_url or 'api.openai.com'} "
               f"(configured via {config.source}).")
    ss = st.session_state
    decision_id = text_key(json.dumps(d.prompt["messages"], ensure_ascii=False))
    if st.button("Generate reply", key="generate", type="primary"):
        pieces: list[str] = []
        failure: list[str] = []

        def relay() -> Iterator[str]:
            # keep what arrived: a stream that stalls or breaks part-way still shows its start
            try:
                for piece in pg.stream_reply(config, d.prompt["messages"]):
                    pieces.append(piece)
                    yield piece
            except CoachctxError as e:
                failure.append(str(e))

        st.write_stream(relay())
        ss["reply"] = {"for": decision_id, "text": "".join(pieces), "error": failure[0] if failure else None}
    elif ss.get("reply", {}).get("for") == decision_id and ss["reply"]["text"]:
        st.markdown(ss["reply"]["text"])
    reply = ss.get("reply")
    if not reply or reply.get("for") != decision_id:
        return
    if reply.get("error"):
        if not reply["text"]:
            st.error(f"No reply: {reply['error']}")
            return
        st.error(f"The reply stopped part-way, after {pg.count_words(reply['text'])} words: {reply['error']}. "
                 "What arrived is shown above; it is incomplete, so the checks below describe a partial reply. "
                 "Press Generate reply to try again.", icon=":material/signal_disconnected:")
    report = pg.reply_report(reply["text"], d)
    c1, c2 = st.columns(2)
    c1.metric("Words", f"{report.words} / {report.max_words}",
              delta="within the limit" if report.within_limit else "over the limit",
              delta_color="normal" if report.within_limit else "inverse")
    with c2:
        if not report.clinical:
            st.markdown("Not a clinical question: no referral needed.")
        elif report.referral:
            st.success(f"Clinical question ({', '.join(report.clinical_terms)}): the reply ends with a referral — "
                       f"“{report.referral}”")
        else:
            st.error(f"Clinical question ({', '.join(report.clinical_terms)}), but the reply does not end with a "
                     "referral to a professional.")


def tab_policy(ctx: Context) -> None:
    p = ctx.policies
    st.markdown("Edit the policy here; the decision view follows every **valid** draft. An invalid draft never "
                "replaces the policy in use. The form changes only the lines it edits: the YAML's comments stay.")
    form, text = st.columns([1, 1.3], gap="large")
    with text:
        st.text_area("Policy YAML (the draft)", key="policy_yaml", height=560)
        if p.draft.ok and p.draft.policy is not None:
            st.success(f"Valid · fingerprint `{p.draft.policy.digest}` · the decision uses it: {ctx.origin.description}")
        else:
            st.error(f"This draft has {len(p.draft.problems)} problem(s), so the decision still uses the last valid "
                     f"policy (fingerprint `{p.working.digest}`). Fix:")
            render_problems(p.draft.problems, p.draft_text)
        render_lint(p.draft.policy)
        st.button("Reset the draft to the checked-in policy", on_click=reset_draft, key="reset_draft")
    with form:
        render_policy_form(p.draft_text)

    reference, reference_text, reference_name = p.checked_in, p.checked_in_text, "the checked-in policy"
    base = st.session_state.get("draft_base")
    loaded = ctx.store.version(base) if base is not None else None
    if loaded is not None:
        try:
            reference, reference_text = policy_from_text(loaded.yaml), loaded.yaml
            reference_name = f"version {loaded.number}"
        except PolicyError:
            pass  # a version today's code no longer accepts: compare with the checked-in file instead
    st.subheader(f"Draft vs {reference_name}")
    st.caption("What the draft changes, per intent, vocabulary, time horizon and threshold. Compare any two "
               "versions in the Versions tab.")
    if p.draft.policy is None:
        st.caption("The draft does not validate; this is the raw text diff.")
        diff = pg.unified_diff(reference_text, p.draft_text, before_name=reference_name)
    else:
        changes = diff_policies(reference, p.draft.policy)
        if changes.same:
            st.markdown(f"No differences: the draft decides exactly like {reference_name}.")
        else:
            st.markdown(pg.diff_markdown(changes, reference_name, "the draft"))
            with st.expander("As a table, with each change's place in the YAML"):
                st.dataframe(pg.diff_frame(changes), hide_index=True, width="stretch", key="policy_changes")
        diff = pg.yaml_diff(reference, p.draft.policy, before_name=reference_name)
    if diff:
        with st.expander("Line diff"):
            st.code(diff, language="diff")

    st.subheader("Export and import")
    ex, im = st.columns(2)
    with ex:
        st.download_button("Download policy YAML", data=pg.export_policy_yaml(p.working, st.session_state["working_yaml"]),
                           file_name=f"coachctx-policy-{p.working.digest}.yaml", mime="application/x-yaml",
                           on_click="ignore", key="export_policy", icon=":material/download:")
        st.caption(f"Exports the policy in use (fingerprint `{p.working.digest}`) as written, comments included; "
                   "`coachctx check-policy FILE` accepts it and importing it back gives the same fingerprint.")
    with im:
        st.file_uploader(f"Import a policy (.yaml, at most {pg.human_size(pg.MAX_IMPORT_BYTES)})",
                         type=["yaml", "yml"], key="policy_upload", on_change=on_policy_upload,
                         max_upload_size=upload_cap(pg.MAX_IMPORT_BYTES))
        status = st.session_state.get("import_status")
        if status:
            kind, message, problems = status
            (st.success if kind == "ok" else st.error)(message)
            render_problems(problems, st.session_state.get("import_text", ""))


def render_problems(problems: Sequence[pg.Problem], text: str) -> None:
    """Each problem once: where (a line, or a place in the policy and its line), what, and the
    lines around it with their numbers."""
    for problem in problems:
        where = problem.where if problem.where.startswith("line ") or problem.line is None else \
            f"{problem.where} (line {problem.line})"
        st.markdown(f"- **{where}**: {problem.message}" + (f"  \n  `{problem.path}`" if problem.path and
                                                           not problem.path.startswith("line ") else ""))
        snippet = pg.line_snippet(text, problem.line) if problem.line else ""
        if snippet:
            st.code(snippet, language=None)


def render_lint(policy: Policy | None) -> None:
    """Lint findings for a valid draft, beside the editor: errors (the policy works against
    itself) in red, warnings (a gap worth a look) in amber."""
    with st.container(key="lint"):
        if policy is None:
            st.caption("Lint runs once the draft is valid.")
            return
        findings = lint_of(policy)
        found_errors = errors(findings)
        warnings = [f for f in findings if f.severity != "error"]
        if not findings:
            st.caption(":material/check: Lint: no findings — no conflicting excludes, shared terms, unreachable "
                       "fragments or weak vocabularies.")
            return
        st.markdown(f"**Lint:** {len(found_errors)} error(s), {len(warnings)} warning(s) — the draft is valid and "
                    "usable; these say where it may work against itself.")
        for f in found_errors:
            st.error(f"**Error · {f.code}** at `{f.path}`: {f.message}", icon=":material/error:")
        for f in warnings:
            st.warning(f"**Warning · {f.code}** at `{f.path}`: {f.message}", icon=":material/warning:")


def _mapping(value: Any) -> dict[str, Any]:
    """The form reads drafts that may be invalid: anything that is not a mapping reads as empty."""
    return value if isinstance(value, dict) else {}


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else default


def render_editor_status() -> None:
    """What the last form edit did (or why it did nothing), with its one-click follow-up."""
    feedback: pg.EditFeedback | None = st.session_state.get("editor_status")
    if feedback is None:
        return
    show = {"ok": st.success, "info": st.info, "warning": st.warning}.get(feedback.kind, st.info)
    show(feedback.message, icon={"ok": ":material/check:", "info": ":material/info:"}.get(feedback.kind,
                                                                                           ":material/warning:"))
    if feedback.offer is not None:
        label, path, value = feedback.offer
        st.button(label, key="editor_offer", on_click=follow_offer, args=(path, value, f"Done: {label.lower()}."),
                  icon=":material/add:")


FIELD_LABELS: Mapping[str, tuple[str, str]] = {
    "primary": ("Essential facts (primary)", "Always sent when the service supplied them; never cut by the budget."),
    "secondary": ("Optional facts (secondary)", "Sent in this order while the tier's token budget lasts."),
    "exclude": ("Withheld facts (exclude)", "Withheld when routing is certain, even if another intent with "
                                            "evidence would bring them. A fact the intent does not ask for is "
                                            "not sent either way."),
}


def render_policy_form(draft_text: str) -> None:
    data = pg.draft_data(draft_text)
    if data is None:
        st.info("The form needs YAML that parses; fix the syntax error shown under the text.")
        return
    render_editor_status()
    k = f"ed.{text_key(draft_text)}"  # new widgets after every draft change, seeded from the draft
    st.markdown("**Routing thresholds**")
    routing = _mapping(data.get("routing"))
    c1, c2 = st.columns(2)
    c1.number_input("Confidence threshold", min_value=0.0, step=0.5, key=f"{k}.threshold",
                    value=_number(routing.get("confident_threshold"), 1.0),
                    help="routing.confident_threshold: the top intent's keyword score must reach this.",
                    on_change=edit_setting, args=(("routing", "confident_threshold"), f"{k}.threshold"))
    c2.number_input("Margin over the runner-up", min_value=0.0, step=0.5, key=f"{k}.margin",
                    value=_number(routing.get("margin"), 1.0),
                    help="routing.margin: the top intent must lead the next one by at least this.",
                    on_change=edit_setting, args=(("routing", "margin"), f"{k}.margin"))

    st.markdown("**Intent**")
    intent = st.selectbox("Intent to edit", list(INTENTS), key="ed_intent")
    spec = _mapping(_mapping(data.get("intents")).get(intent))
    for field in ("primary", "secondary", "exclude"):
        values = spec.get(field)
        current = [f for f in values if isinstance(f, str)] if isinstance(values, list) else []
        options = [*FRAGMENT_NAMES, *[f for f in current if f not in FRAGMENT_NAMES]]
        label, help_text = FIELD_LABELS[field]
        st.multiselect(label, options, default=current, key=f"{k}.{intent}.{field}",
                       format_func=lambda f: pg.FRAGMENT_TITLES.get(f, f),
                       on_change=edit_setting, args=(("intents", intent, field), f"{k}.{intent}.{field}"),
                       help=f"{help_text} In the YAML: intents.{intent}.{field}.")
    max_words = spec.get("max_words")
    st.number_input("Longest reply (words)", min_value=1, max_value=2000, step=10, key=f"{k}.{intent}.max_words",
                    value=max_words if isinstance(max_words, int) and 1 <= max_words <= 2000 else 200,
                    help=f"intents.{intent}.max_words",
                    on_change=edit_setting, args=(("intents", intent, "max_words"), f"{k}.{intent}.max_words"))

    st.markdown(f"**Words that point to {intent}** (the vocabulary: terms and weights; edit cells, add or delete "
                "rows)")
    vocab = pg.vocabulary_rows(data, intent)
    st.data_editor(vocab, key=f"{k}.vocab.{intent}", num_rows="dynamic", hide_index=True, width="stretch",
                   height=220, on_change=edit_table,
                   args=(("vocabulary", intent), f"{k}.vocab.{intent}", vocab.to_dict("records"),
                         pg.vocabulary_from_rows),
                   column_config={"weight": st.column_config.NumberColumn(min_value=0.0, step=0.5)})
    a1, a2 = st.columns([2, 1])
    a1.text_input("New term", key=f"add.{intent}.term", placeholder="e.g. twinge")
    a2.selectbox("Language", list(pg.LANGUAGE_NAMES), key=f"add.{intent}.language",
                 format_func=lambda code: f"{code} · {pg.LANGUAGE_NAMES[code]}")
    b1, b2 = st.columns([1, 1], vertical_alignment="bottom")
    b1.number_input("Weight", min_value=0.5, max_value=100.0, step=0.5, value=1.0, key=f"add.{intent}.weight")
    b2.button("Add term", key=f"add.{intent}.go", on_click=add_term, args=(intent, f"add.{intent}"),
              icon=":material/add:", width="stretch")

    st.markdown("**Time-horizon rules** (scope modifiers: what a horizon promotes, demotes or drops, and why)")
    scope = st.selectbox("Time horizon", list(SCOPES), key="ed_scope", format_func=lambda s: pg.SCOPE_LABELS.get(s, s))
    mods = pg.modifier_rows(data, scope)
    st.data_editor(
        mods, key=f"{k}.mods.{scope}", num_rows="dynamic", hide_index=True, width="stretch", on_change=edit_table,
        args=(("scopes", scope, "modifiers"), f"{k}.mods.{scope}", mods.to_dict("records"), pg.modifiers_from_rows),
        column_config={
            "action": st.column_config.SelectboxColumn(options=["promote", "demote", "drop"], required=True),
            "fragment": st.column_config.SelectboxColumn(options=list(FRAGMENT_NAMES), required=True),
            "reason": st.column_config.TextColumn(width="large"),
            "intents": st.column_config.TextColumn(help="Comma-separated intents; empty means all intents"),
        })


def tab_trace(ctx: Context) -> None:
    st.markdown("Upload a decision trace written by `coachctx explain QUESTION --athlete ID --trace-out FILE`. "
                "The page decides again from the trace's own data snapshot under the policy in use "
                f"(fingerprint `{ctx.policies.working.digest}`) and highlights what changed.")
    upload = st.file_uploader(f"Decision trace (.json, at most {pg.human_size(MAX_TRACE_BYTES)})", type=["json"],
                              key="trace_upload", max_upload_size=upload_cap(MAX_TRACE_BYTES))
    if upload is None:
        return
    try:
        data = upload.getvalue()
        pg.check_upload_size(upload.name, len(data), MAX_TRACE_BYTES, "a trace")
        trace = parse_trace(data, upload.name)
        result = replay(trace, ctx.policies.working, policy_source=ctx.origin.source,
                        policy_version=ctx.origin.version)
    except (TraceError, CoachctxError) as e:
        st.error(f"Cannot reproduce this trace: {e}", icon=":material/error:")
        return
    inputs = pg.cleaned(trace.inputs)  # a trace's JSON may carry lone surrogates (\ud800): shown, not crashed on
    raw_policy = trace.decision.get("policy")
    recorded_digest = raw_policy.get("digest") if isinstance(raw_policy, Mapping) else None
    st.markdown(f"**Question:** {inputs.get('question')}  \n**Athlete:** {inputs.get('athlete')} · scope "
                f"{inputs.get('scope')} · tier {inputs.get('tier')} · costs {inputs.get('cost_mode', 'hand')}  \n"
                f"**Policy:** recorded `{recorded_digest}`, now `{result.decision.policy['digest']}`")
    if result.same:
        st.success("Same decision: the policy in use decides exactly as recorded.")
    else:
        st.error(f"{len(result.differences)} difference(s) between the recorded decision and the policy in use.")
        st.dataframe(pg.differences_frame(pg.cleaned(result.differences)).style.apply(
            lambda row: ["background-color: rgba(214, 39, 40, 0.12)"] * len(row), axis=1),
            hide_index=True, width="stretch", key="trace_differences")
    frame = pg.trace_fragments_frame(pg.cleaned(trace.decision), result.decision)
    st.markdown("**Fragment by fragment** (changed rows highlighted)")
    st.dataframe(frame.style.apply(
        lambda row: (["background-color: rgba(214, 39, 40, 0.15)"] if row["changed"] else [""]) * len(row), axis=1),
        hide_index=True, width="stretch", key="trace_fragments", height=35 * (len(frame) + 1) + 12)
    suggest_tab.render_label_control(pg.cleaned(dict(trace.decision)), key="label_trace", store=ctx.store.store,
                                     store_error=ctx.store.error)
    known = upstream().has(str(inputs.get("athlete")))
    if not known:
        st.warning(f"The trace's athlete {str(inputs.get('athlete'))!r} is not one of the sample athletes here, so "
                   "opening the question decides it for the athlete chosen above, with that athlete's data. The "
                   "comparison on this tab uses the trace's own snapshot.", icon=":material/person_off:")
    for note in st.session_state.pop("trace_opened", None) or []:
        st.info(f"Opened the question above; {note}.")
    st.button("Open this question in the playground", key="open_trace", on_click=open_trace_inputs,
              args=(dict(inputs), list(ctx.policies.working.tiers)),
              help="Copies the trace's question, athlete, scope, tier and cost mode into the inputs above. The "
                   "Decision tab then uses today's sample data for that athlete, not the trace's snapshot.")
    with st.expander("Recorded decision (JSON)"):
        st.json(pg.cleaned(dict(trace.decision)), expanded=False)
    with st.expander("Decision under the policy in use (JSON)"):
        st.json(pg.cleaned(result.decision.to_json()), expanded=False)


# --- versions: save, history, labels, revert, compare ------------------------------------------


def choice_options(sv: StoreView, *, labels: bool) -> list[str]:
    """Policies a coach can pick: the checked-in file, the draft, labels (optional), versions."""
    out = [CHECKED_IN_CHOICE, DRAFT_CHOICE]
    if labels:
        out += [f"label:{name}" for name in sv.label_map]
    return out + [f"v{v.number}" for v in sv.versions]


def choice_title(choice: str, ctx: Context) -> str:
    if choice == CHECKED_IN_CHOICE:
        return f"the checked-in policy ({CHECKED_IN})"
    if choice == DRAFT_CHOICE:
        return "your draft" + ("" if ctx.policies.draft.ok else " (its last valid state)")
    if choice.startswith("label:"):
        name = choice.removeprefix("label:")
        label = ctx.store.label_map.get(name)
        return f"label {name} → version {label.version}" if label else f"label {name}"
    v = ctx.store.version(int(choice[1:]))
    return pg.version_title(v, ctx.store.label_map) if v is not None else choice


def resolve_choice(choice: str, ctx: Context) -> tuple[Policy, str]:
    """(policy, a short name for it). Raises CoachctxError for a version that cannot be read."""
    if choice == CHECKED_IN_CHOICE:
        return ctx.policies.checked_in, "checked-in"
    if choice == DRAFT_CHOICE:
        return ctx.policies.working, "draft"
    if ctx.store.store is None:
        raise CoachctxError(f"the policy store is not available: {ctx.store.error}")
    if choice.startswith("label:"):
        name = choice.removeprefix("label:")
        version = ctx.store.store.resolve(name)
        return policy_from_text(version.yaml), f"{name} (v{version.number})"
    version = ctx.store.store.get(int(choice[1:]))
    return policy_from_text(version.yaml), f"v{version.number}"


def default_index(options: Sequence[T], *preferred: T | None) -> int:
    for choice in preferred:
        if choice is not None and choice in options:
            return options.index(choice)
    return 0


def render_versions_status(ctx: Context) -> None:
    status = st.session_state.get("versions_status")
    if not status:
        return
    kind, message = status["kind"], status["message"]
    if kind == "ok":
        st.success(message, icon=":material/check_circle:")
        use = status.get("use")
        if isinstance(use, int) and ctx.origin.version != str(use):
            st.button(f"Use version {use} here", key="use_moved", on_click=load_into_draft, args=(ctx.store.url, use),
                      icon=":material/input:", help=f"The page decides with your draft; this makes version {use} "
                                                   "the draft (your current draft is kept for one undo).")
    elif kind != "stale":
        st.error(message, icon=":material/error:")
    else:
        head_version = ctx.store.version(status["head"]) if isinstance(status.get("head"), int) else None
        if status.get("base") is None or head_version is None:
            why = f"{status.get('label')} already points at another version"
        else:
            who = head_version.author
            you = (st.session_state.get("author") or "").strip()
            saver = f"you ({who}) saved" if you and you == who else f"{who} saved"
            why = (f"{saver} version {head_version.number} on {status.get('label')} at "
                   f"{head_version.created_at:%H:%M} UTC ({head_version.created_at:%Y-%m-%d}), after the version "
                   f"{status.get('base')} your draft is based on")
        st.error(f"**Not saved — {why}.** {message}.  \n**Nothing is lost:** your draft is "
                 "unchanged on this page, and the newer version stays where it is. To keep your work as it is, save "
                 f"it with “{NO_LABEL}” (it becomes a version of its own); to build on the newer one, compare below, "
                 "use it here and redo your change.", icon=":material/group:")
        head, base = status.get("head"), status.get("base")
        theirs = ctx.store.version(head) if isinstance(head, int) else None
        mine = ctx.store.version(base) if isinstance(base, int) else None
        if theirs is not None and mine is not None:
            try:
                changes = diff_policies(policy_from_text(mine.yaml), policy_from_text(theirs.yaml))
            except PolicyError:
                return
            with st.expander(f"What version {theirs.number} ({theirs.author}) changed since your version "
                             f"{mine.number}", expanded=True):
                st.markdown(pg.diff_markdown(changes, f"version {mine.number}", f"version {theirs.number}"))


def tab_versions(ctx: Context) -> None:
    sv, ss = ctx.store, st.session_state
    where = "from `$COACHCTX_STORE`" if os.environ.get(STORE_ENV, "").strip() else \
        f"the default; set `{STORE_ENV}` to a SQLAlchemy URL (or a SQLite file) that several app instances share"
    st.markdown(f"**Policy store:** `{store_display(sv.url)}` ({where}).")
    if sv.store is None:
        st.error(f"The policy store cannot be used: {sv.error}  \nEverything else on this page works without it; "
                 "versions, labels and reverts need it.", icon=":material/database:")
        return
    base = ss.get("draft_base")
    st.markdown(f"**The decision uses** {ctx.origin.description} (fingerprint `{ctx.policies.working.digest}`)."
                + (f" Saving builds on version {base}." if base is not None else
                   " The draft is not based on a stored version yet."))
    live = sv.label_map.get("live")
    if live is not None and ctx.origin.version != str(live.version):
        c1, c2 = st.columns([3, 1], vertical_alignment="center")
        c1.caption(f"`live` (what serves athletes) points at version {live.version}; the page decides with "
                   f"{ctx.origin.description}.")
        c2.button(f"Use version {live.version} (live) here", key="use_live", on_click=load_into_draft,
                  args=(sv.url, live.version), icon=":material/input:")
    render_versions_status(ctx)
    st.columns([1, 2])[0].text_input("Your name (recorded with every save and label move)", key="author",
                                     max_chars=MAX_AUTHOR_CHARS)

    left, right = st.columns(2, gap="large")
    with left:
        render_save(ctx)
    with right:
        render_labels(ctx)

    st.subheader("History")
    if not sv.versions:
        st.info("No versions yet. Save the draft above to start the history (the checked-in policy is a good "
                "version 1).")
    else:
        st.dataframe(pg.history_frame(sv.versions, sv.label_map), hide_index=True, width="stretch",
                     key="history_table", column_config={"message": st.column_config.TextColumn(width="large")})
        if len(sv.versions) >= HISTORY_LIMIT:
            st.caption(f"The newest {HISTORY_LIMIT} versions; `coachctx policy history` lists them all.")
        numbers = [v.number for v in sv.versions]
        c1, c2, c3 = st.columns([3, 1.2, 1.5], vertical_alignment="bottom")
        chosen = c1.selectbox("Decide with a stored version", numbers, key="load_ref",
                              index=default_index(numbers, base),
                              format_func=lambda n: choice_title(f"v{n}", ctx))
        c2.button("Use this version here", key="load_go", on_click=load_into_draft, args=(sv.url, chosen),
                  help="Makes this version your draft: the page decides with it, and saving builds on it.")
        if ss.get("draft_undo"):
            c3.button("Undo: restore the previous draft", key="undo_load", on_click=undo_load)

    st.subheader("Compare two policies")
    render_compare(ctx)


def render_save(ctx: Context) -> None:
    sv, ss = ctx.store, st.session_state
    st.subheader("Save the draft as a version")
    st.text_input("What changed and why", key="save_message", max_chars=MAX_MESSAGE_CHARS,
                  placeholder="e.g. training may see recovery readiness: sleep matters for intensity")
    labels = list(dict.fromkeys(["live", "draft", *sv.label_map]))
    options = [NO_LABEL, *labels]
    base = ss.get("draft_base")
    label = st.selectbox("Then point this label at it", options, key="save_label",
                         index=default_index(options, pg.default_save_label(sv.label_map, base), NO_LABEL),
                         help="live: what serves athletes; draft: work in progress. A label only moves if it "
                              "still points at the version your draft is based on, so nobody's save is "
                              "overwritten.")
    head = sv.label_map[label].version if label in sv.label_map else None
    if label != NO_LABEL:
        st.caption(f"{label} now points at version {head}." if head is not None else
                   f"{label} does not exist yet: this save creates it.")
    if head is not None and head != base:
        st.warning(f"{label} points at version {head}, but your draft is based on "
                   f"{f'version {base}' if base is not None else 'no stored version'}: this save would be refused. "
                   f"Load version {head} and redo your change, or save with “{NO_LABEL}”.",
                   icon=":material/call_split:")
    draft = ctx.policies.draft
    if draft.policy is not None:
        found = errors(lint_of(draft.policy))
        if found:
            st.caption(f":material/warning: The draft has {len(found)} lint error(s) (see the Policy editor); "
                       "it can still be saved.")
    st.button("Save as a new version", key="save_version", type="primary", on_click=save_draft, args=(sv.url,),
              disabled=not draft.ok, icon=":material/save:",
              help=None if draft.ok else "The draft has problems (Policy editor tab); only a valid draft is saved.")
    if not draft.ok:
        st.caption("Only a valid draft can be saved; fix the problems shown in the Policy editor.")


def render_labels(ctx: Context) -> None:
    sv = ctx.store
    st.subheader("Labels and revert")
    if not sv.label_map:
        st.info("No labels yet: save a version with the label live (what serves athletes) or draft.")
        return
    digests = {v.number: v.digest for v in sv.versions}
    st.dataframe(pg.labels_frame(sv.label_map, digests), hide_index=True, width="stretch", key="labels_table")
    names = list(sv.label_map)
    label = st.selectbox("Label", names, key="move_label", index=default_index(names, "live"))
    head = sv.label_map[label].version
    assert sv.store is not None
    moves = sv.store.label_log(label)
    previous = pg.previous_version(moves)
    if previous is not None:
        last = moves[0]
        st.button(f"Revert {label} to version {previous}", key="revert_go", icon=":material/undo:",
                  on_click=move_label, args=(sv.url, label, head, None, previous, "reverted"),
                  help=f"Undo {label}'s last move: {pg.describe_move(last)}. No version is deleted; the revert "
                       "is logged.")
        st.caption(f"Revert undoes the last move: {pg.describe_move(last)}.")
    else:
        st.caption(f"{label} has not moved since it was created, so there is nothing to revert.")
    numbers = [v.number for v in sv.versions]
    widget_key = f"move_to.{label}.{head}"  # a fresh choice whenever the label moves
    target = st.selectbox(f"Or point {label} at any version", numbers, key=widget_key,
                          index=default_index(numbers, head), format_func=lambda n: choice_title(f"v{n}", ctx))
    st.button(f"Point {label} at version {target}", key="move_go", on_click=move_label,
              args=(sv.url, label, head, widget_key), disabled=target == head, icon=":material/label:",
              help=f"Moves the label only: what {label} serves changes; the page keeps deciding with your draft.")
    with st.expander(f"Every move of {label}"):
        st.dataframe(pg.label_moves_frame(moves), hide_index=True, width="stretch", key="label_moves")


def render_compare(ctx: Context) -> None:
    sv, ss = ctx.store, st.session_state
    options = choice_options(sv, labels=False)
    base = ss.get("draft_base")
    live = sv.label_map.get("live")
    c1, c2 = st.columns(2)
    a = c1.selectbox("From", options, key="diff_a", format_func=lambda c: choice_title(c, ctx),
                     index=default_index(options, f"v{base}" if base is not None else None,
                                         f"v{live.version}" if live else None, CHECKED_IN_CHOICE))
    b = c2.selectbox("To", options, key="diff_b", format_func=lambda c: choice_title(c, ctx),
                     index=default_index(options, DRAFT_CHOICE))
    try:
        (pa, na), (pb, nb) = resolve_choice(a, ctx), resolve_choice(b, ctx)
    except CoachctxError as e:
        st.error(f"Cannot compare: {e}")
        return
    changes = diff_policies(pa, pb)
    with st.container(key="version_diff"):
        st.markdown(pg.diff_markdown(changes, na, nb))
    if not changes.same:
        with st.expander("Line diff (canonical YAML)"):
            st.code(pg.yaml_diff(pa, pb, before_name=na, after_name=nb), language="diff")


# --- impact: what a change does to logged questions --------------------------------------------


def tab_impact(ctx: Context) -> None:
    ss = st.session_state
    st.markdown("Run a set of questions through two policies and see what changes: per question the intent, the "
                "fragments sent and the tokens under each, and — where rows carry labels — route accuracy, needs "
                "recall and a confusion table per policy. Nothing calls a model: a question the rules are unsure "
                "of takes the keyword fallback and counts as *unsure*.")
    options = choice_options(ctx.store, labels=True)
    c1, c2 = st.columns(2)
    base_choice = c1.selectbox("Base (what runs now)", options, key="impact_base",
                               format_func=lambda c: choice_title(c, ctx),
                               index=default_index(options, "label:live", CHECKED_IN_CHOICE))
    candidate_choice = c2.selectbox("Candidate (the change you consider)", options, key="impact_candidate",
                                    format_func=lambda c: choice_title(c, ctx),
                                    index=default_index(options, DRAFT_CHOICE))
    source = st.radio("Questions", ["sample", "upload"], key="impact_source", horizontal=True,
                      format_func=lambda s: "the bundled sample log (sample_logs/questions.jsonl)" if s == "sample"
                      else "upload a question set")
    questions, questions_id = impact_questions(source)
    if questions is None:
        return
    labelled = sum(1 for q in questions.questions if q.intents)
    rows = len(questions.questions) + len(questions.skipped)
    st.caption(f"{rows} rows: {len(questions.questions)} questions, {labelled} of them with intent labels"
               + (f"; {len(questions.skipped)} row(s) unreadable" if questions.skipped else "")
               + ". A run also skips rows it cannot decide (an unknown athlete, say); every skipped row is listed "
                 "after the run. Rows naming no athlete are decided for maya, on the paid tier.")
    try:
        (base, base_name), (candidate, candidate_name) = resolve_choice(base_choice, ctx), \
            resolve_choice(candidate_choice, ctx)
    except CoachctxError as e:
        st.error(f"Cannot run: {e}")
        return
    key = (base.digest, candidate.digest, questions_id, ctx.view.cost_mode)
    if base.digest == candidate.digest:
        st.info("Base and candidate are the same policy: nothing can change. Pick another pair to compare.")
    if st.button("Run impact analysis", key="impact_run", type="primary", icon=":material/play_arrow:"):
        bar = st.progress(0.0, text="Deciding every question under both policies…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"{done} of {total} questions decided under both policies")

        report = run_impact(questions, base, candidate, base_name=base_name, candidate_name=candidate_name,
                            cost_mode=ctx.view.cost_mode, progress=progress)  # type: ignore[arg-type]
        bar.progress(1.0, text=f"Done: {len(report.rows)} of {rows} rows decided, {len(report.skipped)} skipped, in "
                               f"{report.seconds:.1f} s")
        ss["impact_result"] = {"key": key, "report": report}
    result = ss.get("impact_result")
    if not result:
        st.info("Pick a base and a candidate, then run. The candidate is usually your draft; the base what is live.")
        return
    if result["key"] != key:
        st.warning("The policies, the questions or the cost mode changed since this run; run it again to see the "
                   "impact of what is selected now. Below: the last run.", icon=":material/history:")
    render_impact(result["report"])


def impact_questions(source: str) -> tuple[QuestionSet | None, tuple[str, ...]]:
    if source == "sample":
        if not SAMPLE_LOG.is_file():
            st.error(f"The sample log {SAMPLE_LOG.name} is missing; `python sample_logs/make_log.py` writes it.")
            return None, ()
        return sample_questions(str(SAMPLE_LOG), SAMPLE_LOG.stat().st_mtime), ("sample", str(SAMPLE_LOG.stat().st_mtime))
    limit = pg.MAX_QUESTIONS_UPLOAD_BYTES
    upload = st.file_uploader(f"Question set (.yaml like dev.yaml, or a .jsonl / .csv log with a `question` column "
                              f"and optional athlete, scope, tier, intents, needs; at most {pg.human_size(limit)})",
                              type=["yaml", "yml", "jsonl", "ndjson", "csv"], key="impact_upload",
                              max_upload_size=upload_cap(limit))
    if upload is None:
        st.info("Upload a question set to run it.")
        return None, ()
    data = upload.getvalue()
    try:
        questions = uploaded_questions(data, upload.name)
    except CoachctxError as e:
        st.error(f"Cannot use {upload.name}: {e}", icon=":material/error:")
        return None, ()
    return questions, ("upload", upload.name, hashlib.sha256(data).hexdigest())


def _highlight_changes(row: pd.Series) -> list[str]:
    changed = pg.changed_cells(row.to_dict())
    return ["background-color: rgba(255, 165, 0, 0.22)" if c in changed else "" for c in row.index]


def render_impact(report: ImpactReport, keys: str = "") -> None:
    """The report; `keys` prefixes its widget keys, so another tab can show a report of its own."""
    s = report.summary()
    st.markdown(f"**Base:** {report.base_name} (`{report.base_digest}`) · **Candidate:** {report.candidate_name} "
                f"(`{report.candidate_digest}`)")
    m = st.columns(5)
    m[0].metric("Questions decided", s["questions"], help="Rows decided under both policies; skipped rows are "
                                                          "listed at the end.")
    m[1].metric("Changed", s["changed"], help="Any difference: intent, scope, fragments, a withheld reason, tokens.")
    m[2].metric("Intent changed", s["intent_changed"])
    m[3].metric("Selection changed", s["selection_changed"])
    m[4].metric("Skipped rows", s["skipped"])
    for note in report.notes:
        st.info(note)
    st.markdown("**Per policy**")
    st.dataframe(pg.impact_metrics_frame(report), hide_index=True, width="stretch", key=f"{keys}impact_metrics")
    b, c = report.base_metrics, report.candidate_metrics
    if b.route_labelled:
        st.markdown(f"**Confusion per intent** over {b.route_labelled} labelled rows: rows are the labelled intent, "
                    "columns where the policy routed it (a row accepting several intents counts as correct when "
                    "routed to any of them). Cells that differ between the two are highlighted.")
        base_frame, candidate_frame = pg.confusion_frame(b), pg.confusion_frame(c)
        differs = base_frame != candidate_frame

        def mark(frame: pd.DataFrame) -> pd.DataFrame:
            return differs.replace({True: "background-color: rgba(255, 165, 0, 0.30)", False: ""})

        # one above the other: side by side, seven columns each do not fit at 1024 px
        for name, frame, key in ((f"base: {report.base_name}", base_frame, f"{keys}confusion_base"),
                                 (f"candidate: {report.candidate_name}", candidate_frame, f"{keys}confusion_candidate")):
            st.caption(name)
            st.dataframe(frame.style.apply(mark, axis=None), hide_index=True, width="stretch", key=key)
    else:
        st.caption("No row carries intent labels, so there is no accuracy or confusion table.")

    changed_only = st.toggle("Show changed questions only", value=True, key=f"{keys}impact_changed_only")
    frame = pg.impact_frame(report, changed_only=changed_only)
    st.markdown(f"**Questions** ({len(frame)} shown; changed cells highlighted)")
    if frame.empty:
        st.success("No question decides differently under the candidate." if changed_only else "No questions.")
    else:
        st.dataframe(frame.style.apply(_highlight_changes, axis=1), hide_index=True, width="stretch",
                     key=f"{keys}impact_table",
                     column_order=["question", "changes", "base_intent", "candidate_intent", "base_tokens",
                                   "candidate_tokens", "base_selected", "candidate_selected", "athlete", "row"],
                     column_config={
                         "question": st.column_config.TextColumn(width="medium", pinned=True),
                         "base_intent": "base intent", "candidate_intent": "candidate intent",
                         "base_selected": st.column_config.TextColumn("base sends", width="medium"),
                         "candidate_selected": st.column_config.TextColumn("candidate sends", width="medium"),
                         "base_tokens": "base tokens", "candidate_tokens": "candidate tokens",
                         "changes": st.column_config.TextColumn("what changed", width="large")})
    if report.skipped:
        with st.expander(f"{len(report.skipped)} row(s) skipped, and why"):
            st.dataframe(pd.DataFrame(report.skipped, columns=["row", "why"]), hide_index=True, width="stretch",
                         key=f"{keys}impact_skipped")
    st.download_button("Download the report (JSON)", key=f"{keys}impact_download", on_click="ignore",
                       data=json.dumps(report.to_json(), ensure_ascii=False, indent=2),
                       file_name=f"coachctx-impact-{report.base_digest}-{report.candidate_digest}.json",
                       mime="application/json", icon=":material/download:")


def tab_suggest(ctx: Context) -> None:
    suggest_tab.render_suggest_tab(suggest_tab.SuggestInputs(
        store=ctx.store.store, store_error=ctx.store.error, policy=ctx.policies.working, draft_ok=ctx.policies.draft.ok,
        labels=ctx.store.label_map, cost_mode=ctx.view.cost_mode, render_impact=render_impact))


TabRenderer = Callable[[Context], None]
# Every tab, in order. Another tab is one more entry here.
TABS: list[tuple[str, TabRenderer]] = [
    ("Decision", tab_decision),
    ("Prompt & reply", tab_prompt),
    ("Policy editor", tab_policy),
    ("Versions", tab_versions),
    ("Impact", tab_impact),
    ("Suggest", tab_suggest),
    ("Reproduce a trace", tab_trace),
]


def compute_decision(view: pg.ViewState, policies: Policies, origin: pg.PolicyOrigin,
                     config: pg.ModelConfig | None) -> tuple[Decision | None, str | None]:
    if not view.question.strip():
        return None, "Type a question above (or click an example) to see the decision."
    routing_model = config if config is not None and st.session_state.get("use_model", True) else None
    try:
        d = decide(view.question, view.athlete, view.scope, view.tier, view.budget if view.tier == "custom" else None,
                   view.cost_mode, policies.working, policies.working.digest, origin.source, origin.version,
                   routing_model, routing_model.cache_key if routing_model else ())
    except CoachctxError as e:
        return None, str(e)
    st.session_state["decision"] = d.to_json()
    return d, None


# The browser asks before leaving (closing the tab, following a link away) while the draft holds
# edits that no saved version has. A reload asks too, and keeps the draft when confirmed.
UNSAVED_GUARD = """<script>
window.coachctxUnsaved = %s;
if (!window.coachctxGuard) {
  window.coachctxGuard = true;
  window.addEventListener("beforeunload", (event) => {
    if (window.coachctxUnsaved) { event.preventDefault(); event.returnValue = ""; }
  });
}
</script>"""


def main() -> None:
    # a local icon: a Material icon name makes the browser fetch it from Google on every rerun
    st.set_page_config(page_title="coachctx policy playground", page_icon=ICON, layout="wide",
                       initial_sidebar_state="collapsed")
    st.html(PAGE_CSS)
    st.markdown("#### coachctx policy playground")
    st.caption("What may the coaching assistant see about this athlete for this question — and why? "
               "Every fact below comes from the engine's Decision; no model is needed.")

    try:
        policies = load_policies()
    except PolicyError as e:
        st.error(f"The checked-in policy is invalid, so the playground cannot start:\n\n{e}")
        st.stop()
    store = load_store()
    keep_draft(policies, store)
    origin = origin_of(policies, store)
    unsaved = not policies.draft.ok or origin.source.startswith(pg.DRAFT_SOURCE)
    st.caption(f"Deciding with {origin.description}"
               + (" · the draft has problems, so its last valid state decides" if not policies.draft.ok else "")
               + f" · fingerprint `{policies.working.digest}`. More in the sidebar (») and the Versions tab.")
    view = render_inputs(policies)
    config = render_sidebar(policies, origin, store)
    decision, error = compute_decision(view, policies, origin, config)
    if error and view.question.strip():
        st.error(error)
    write_query_params(view)
    st.html(UNSAVED_GUARD % ("true" if unsaved else "false"), unsafe_allow_javascript=True)
    ctx = Context(decision=decision, decision_error=error, policies=policies, model=config, view=view, store=store,
                  origin=origin)
    for (_, render), tab in zip(TABS, st.tabs([name for name, _ in TABS]), strict=True):
        with tab:
            render(ctx)


main()
