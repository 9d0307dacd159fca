"""The policy form: thresholds, an intent's facts and vocabulary, time-horizon rules; each edit goes through the draft's text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.policy import INTENTS, SCOPES
from coachctx.playground.ui.cache import text_key
from coachctx.playground.ui.editor_callbacks import add_term, edit_setting, edit_table, follow_offer


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

    render_vocabulary(data, intent, k)
    render_scope_rules(data, k)


def render_vocabulary(data: dict[str, Any], intent: str, k: str) -> None:
    """The intent's terms and weights as an editable table, and a term added in one click."""
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



def render_scope_rules(data: dict[str, Any], k: str) -> None:
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
