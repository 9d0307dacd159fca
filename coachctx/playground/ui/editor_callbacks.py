"""The policy form's callbacks: each edit writes one value into the draft's YAML text and says what it did."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from coachctx import playground as pg
from coachctx.errors import CoachctxError, PolicyError


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
