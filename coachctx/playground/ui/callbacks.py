"""Callbacks: they run before the widgets of the next run exist, so they may set any widget's state. Draft, import and version actions."""

from __future__ import annotations

from typing import Any

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.pipeline import COST_MODES, MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import CUSTOM_TIER
from coachctx.errors import CoachctxError, PolicyError
from coachctx.playground.ui.cache import checked_in_text, open_store, upstream
from coachctx.tools.store import StaleSaveError, based_on, default_store_url
from coachctx.tools.trace import TraceInputs

NO_LABEL = "(no label)"


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


def open_trace_inputs(asked: TraceInputs, tiers: list[str]) -> None:
    ss = st.session_state
    ss["question"] = pg.clean_text(asked.question)[:MAX_QUESTION_CHARS]
    kept = []
    if asked.athlete is not None and upstream().has(asked.athlete):
        ss["athlete"] = asked.athlete
    else:
        kept.append(f"the trace's athlete {asked.athlete!r} is not a sample athlete here, so the question opens "
                    f"with {ss.get('athlete')}")
    if asked.scope in SCOPE_REQUESTS:
        ss["scope"] = asked.scope
    if asked.budget is not None:
        ss["tier"], ss["budget"] = CUSTOM_TIER, asked.budget
    elif asked.tier in tiers:
        ss["tier"] = asked.tier
    elif asked.tier is not None:
        kept.append(f"the trace's tier {asked.tier!r} is not in the policy in use, so the question opens on "
                    f"{ss.get('tier')}")
    if asked.cost_mode in COST_MODES:
        ss["cost_mode"] = asked.cost_mode
    ss["trace_opened"] = kept
