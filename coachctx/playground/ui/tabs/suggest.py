"""The playground's "This should be…" control (Decision and Reproduce tabs) and its Suggest tab.

A coach labels a question the rules missed; the Suggest tab shows the vocabulary edits learned
from every stored label (and, optionally, an uploaded labelled log) over the policy in use, each
with its evidence rows; ticked ones are written into the draft on a click, then the diff, the
impact over the same labelled questions, and a save as a version follow. Nothing is applied or
saved without a click. The app passes in what it owns (the store, the policy in use, how it
renders an impact report); the logic is in `playground/labels.py`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.common_words import question_language
from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.policy import INTENTS, LANGUAGES, Policy, parse_policy
from coachctx.engine.text import tokenise
from coachctx.errors import CoachctxError, TraceError
from coachctx.playground import labels as pl
from coachctx.playground.ui.lazy import keep_states, lazy_expander
from coachctx.playground.ui.state import Context
from coachctx.playground.ui.tabs.impact import render_impact
from coachctx.tools.impact import run_impact
from coachctx.tools.impact_report import ImpactReport
from coachctx.tools.policy_diff import diff_policies
from coachctx.tools.store import MAX_AUTHOR_CHARS, MAX_MESSAGE_CHARS, PolicyStore
from coachctx.tools.suggest import DEFAULT_MAX, Suggestion, suggest

MAX_CONFLICTS_SHOWN: Final = 10
"""How many questions labelled two ways the tab lists."""
NO_LABEL: Final = "(no label)"
NO_LANGUAGE: Final = "(not said)"
BEFORE: Final = "suggest_before"
"""Session key: the draft's text and policy before the first suggestion was applied."""


# --- the author, kept in the session for every label and save ---------------------------------

AUTHOR: Final = "coach_name"
"""Session key: the name last typed in any of these inputs (the Versions tab's author is its
default, never written: two widgets sharing one key race each other in the browser)."""


def _keep_author(widget_key: str) -> None:
    st.session_state[AUTHOR] = st.session_state.get(widget_key) or ""


def session_author() -> str:
    ss = st.session_state
    return str(ss.get(AUTHOR) or ss.get("author") or "").strip()


def author_input(key: str, label: str) -> str:
    """A text input for who is labelling or saving, showing (and setting) the session's name."""
    widget_key = f"{key}.author"
    st.session_state[widget_key] = session_author()
    value = st.text_input(label, key=widget_key, max_chars=MAX_AUTHOR_CHARS, on_change=_keep_author,
                          args=(widget_key,), placeholder="who says so (kept for this session)")
    return str(value or "")


# --- "This should be…": a label for the decision on screen -------------------------------------


def _store_label(key: str, decision: Mapping[str, Any], store: PolicyStore) -> None:
    ss = st.session_state
    label = pl.label_of_decision(decision, intents=ss.get(f"{key}.intents") or [], needs=ss.get(f"{key}.needs") or [],
                                 author=session_author())
    lang = ss.get(f"{key}.lang")
    if lang in LANGUAGES:  # the language a learned term is filed under
        label = dataclasses.replace(label, lang=str(lang))
    try:
        stored = store.add_question_label(label)
    except CoachctxError as e:
        ss[f"{key}.status"] = ("error", f"Not stored: {e}")
        return
    ss[f"{key}.status"] = ("ok", f"Stored label {stored.id}: “{stored.question}” should be "
                                 f"{' or '.join(stored.intents)}. The Suggest tab proposes vocabulary edits from it.")
    ss[f"{key}.intents"], ss[f"{key}.needs"] = [], []


def _language_input(key: str, question: str) -> None:
    """The language the question is written in, guessed from its everyday words until the coach
    picks one: a term learned from the label is filed under it."""
    options = [NO_LANGUAGE, *LANGUAGES]
    widget = f"{key}.lang"
    guessed_for = f"{key}.lang_guessed_for"
    if st.session_state.get(guessed_for) != question:  # a new question: guess again
        st.session_state[guessed_for] = question
        guess = question_language(tokenise(question).words)
        st.session_state[widget] = guess if guess in LANGUAGES else NO_LANGUAGE
    st.selectbox("Written in", options, key=widget,
                 help="Guessed from the question's everyday words; a term learned from this label is filed "
                      "under this language (`vocabulary.<intent>.<language>`).")


def render_label_control(decision: Mapping[str, Any], *, key: str, store: PolicyStore | None,
                         store_error: str | None) -> None:
    """“This should be…”: the intent(s) the question should have gone to and, optionally, the
    facts the answer needed, stored as a label in the policy store."""
    try:
        facts = pg.decision_facts(decision)
    except TraceError as e:
        st.warning(f"This decision cannot be labelled: {e}", icon=":material/flag:")
        return
    routed = f"{facts.intent} ({pg.SOURCE_WORDS.get(facts.source, facts.source)})"
    keep_states([f"{key}.intents", f"{key}.needs", f"{key}.lang"])  # the picks outlive closing the box
    box = lazy_expander(f"This should be… (routed to {routed}; label it if that is wrong)", key=f"{key}.box",
                        icon=":material/flag:")
    if box is None:
        return
    with box:
        if store is None:
            st.warning(f"Labels are kept in the policy store, which cannot be used: {store_error}")
            return
        c1, c2 = st.columns(2)
        c1.multiselect("This question should go to", INTENTS, key=f"{key}.intents",
                       help="Any of these is a correct route (the corpus's `intents`).")
        c2.multiselect("The answer needed (optional)", FRAGMENT_NAMES, key=f"{key}.needs",
                       format_func=lambda f: f"{pg.fragment_title(f)} ({f})",
                       help="Facts an expert coach would insist are in the prompt (the corpus's `needs`).")
        _language_input(key, facts.question)
        author_input(key, "Labelled by")
        ss = st.session_state
        missing = "pick the intent(s) first" if not ss.get(f"{key}.intents") else (
            "type your name first" if not session_author() else None)
        st.button("Store this label", key=f"{key}.store", on_click=_store_label, args=(key, dict(decision), store),
                  disabled=missing is not None, icon=":material/bookmark_add:", help=missing)
        status = ss.get(f"{key}.status")
        if status:
            (st.success if status[0] == "ok" else st.error)(status[1])


# --- the Suggest tab ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SuggestInputs:
    """What the app hands the tab."""

    store: PolicyStore | None
    store_error: str | None
    policy: Policy
    """The policy in use: the draft's last valid state."""
    draft_ok: bool
    labels: Mapping[str, Any]
    """The store's version labels (name -> Label), for the save's label choice."""
    cost_mode: str
    render_impact: Callable[[ImpactReport, str], None]
    """`render_impact(report, key_prefix)`: the Impact tab's view, under widget keys of its own."""


def _suggestions(log: pl.LabelledLog, policy: Policy) -> list[Suggestion]:
    """Memoised in the session per (policy, rows): a rerun for a tick box does not learn again."""
    ss = st.session_state
    key = (policy.digest, hashlib.sha256(repr(log.rows).encode()).hexdigest())
    cached = ss.get("suggest_cache")
    if cached is None or cached[0] != key:
        cached = ss["suggest_cache"] = (key, suggest(log.rows, policy, limit=DEFAULT_MAX))
    found: list[Suggestion] = cached[1]
    return found


def _apply(picked: list[Suggestion], draft_policy: Policy) -> None:
    ss = st.session_state
    edits = [s.edit for s in picked]
    before = ss["policy_yaml"]
    try:
        ss["policy_yaml"] = pl.apply_to_draft(before, draft_policy, edits)
    except CoachctxError as e:
        ss["suggest_status"] = ("error", f"Nothing applied: {e}")
        return
    if BEFORE not in ss:  # the comparison is against the draft before the first applied suggestion
        ss[BEFORE] = {"text": before, "edits": []}
    ss[BEFORE]["edits"] = [*ss[BEFORE]["edits"], *edits]
    ss["suggest_save_message"] = pl.save_message(ss[BEFORE]["edits"])
    for s in picked:
        ss.pop(f"suggest_pick.{pl.edit_key(s.edit)}", None)
    ss["suggest_status"] = ("ok", f"Applied {len(edits)} edit(s) to the draft: "
                                  + "; ".join(e.describe() for e in edits)
                                  + ". Only those lines of the YAML changed; its comments are kept.")


def _upload() -> tuple[list[Any], str]:
    upload = st.file_uploader(f"Also learn from a labelled log (optional: .jsonl, .yaml or .csv with `question` and "
                              f"`intents`, or `explain --json` lines; at most "
                              f"{pg.human_size(pl.MAX_LABELS_UPLOAD_BYTES)})",
                              type=[s.lstrip(".") for s in pl.UPLOAD_SUFFIXES], key="suggest_upload")
    if upload is None:
        return [], ""
    try:
        return pl.read_labelled_upload(upload.getvalue(), upload.name), upload.name
    except CoachctxError as e:
        st.error(f"Cannot use {upload.name}: {e}", icon=":material/error:")
        return [], ""


def _delete_label(store: PolicyStore) -> None:
    ss = st.session_state
    label_id = ss.get("suggest_delete_pick")
    try:
        gone = label_id is not None and store.delete_question_label(int(label_id))
    except CoachctxError as e:
        ss["suggest_status"] = ("error", f"Not deleted: {e}")
        return
    ss["suggest_status"] = ("ok", f"Deleted label {label_id}.") if gone else (
        "error", f"Label {label_id} was already gone (deleted elsewhere?).")
    ss.pop("suggest_delete_pick", None)


def _render_delete(store: PolicyStore, labels: list[Any]) -> None:
    """A label stored by mistake (a wrong intent, a test question) is deleted by its id."""
    with st.expander("Delete a stored label", key="suggest_delete_box", icon=":material/delete:"):
        by_id = {label.id: label for label in labels}
        st.selectbox("Label", list(by_id), key="suggest_delete_pick",
                     format_func=lambda i: f"{i}: “{by_id[i].question[:80]}” → {' or '.join(by_id[i].intents)} "
                                           f"(by {by_id[i].author})")
        st.button("Delete this label", key="suggest_delete", on_click=_delete_label, args=(store,),
                  icon=":material/delete:", help="Removes it from the policy store; suggestions no longer learn from it.")


def render_suggest_tab(inputs: SuggestInputs) -> None:
    ss = st.session_state
    st.markdown("Label questions the rules got wrong (**This should be…** on the Decision and Reproduce tabs). "
                "Here, every stored label is learned from: each suggestion is a vocabulary edit measured on the "
                "labelled questions with the edit made — the rows it **fixes**, the rows it **breaks**, the rows "
                "it **moves to the rules** (a model call saved) — and any lint finding it would add. A model's "
                "label counts half a coach's. Nothing changes until you tick a suggestion and apply it.")
    if inputs.store is None:
        st.warning(f"Labels are kept in the policy store, which cannot be used: {inputs.store_error}")
        return
    try:
        labels = inputs.store.question_labels()
    except CoachctxError as e:
        st.error(f"Cannot read the labels: {e}")
        return
    for key in ("suggest_status", "suggest_save_status"):
        status = ss.pop(key, None)
        if status:
            (st.success if status[0] == "ok" else st.error)(status[1])
    uploaded, upload_name = _upload()
    log = pl.labelled_log(labels, uploaded, upload_name)
    st.markdown(f"**Labelled questions** ({len(labels)} stored"
                + (f", {len(uploaded)} from {upload_name}" if uploaded else "") + ")")
    if labels:
        st.dataframe(pl.labels_frame(labels), hide_index=True, width="stretch", key="suggest_labels")
        from coachctx.cli.labels import labels_jsonl
        st.download_button("Download the labels (JSONL)", data=labels_jsonl(labels), file_name="coachctx-labels.jsonl",
                           mime="application/x-ndjson", on_click="ignore", key="suggest_labels_download",
                           icon=":material/download:", help="`coachctx labels import FILE` reads it back; "
                                                            "`coachctx suggest FILE` learns from it.")
        _render_delete(inputs.store, labels)
    if not log.rows:
        st.info("No labelled questions yet. On the Decision tab, open “This should be…” under the routing, pick the "
                "intent the question should have gone to and store the label.")
        return

    _render_conflicts(log)
    too_large = log.too_large()
    if too_large is not None:
        st.warning(too_large, icon=":material/warning:")
        return
    found = _suggestions(log, inputs.policy)
    st.subheader(f"Suggestions for the policy in use ({len(found)})")
    if not found:
        st.success("Nothing to suggest: no vocabulary edit fixes more of these rows than it breaks.")
    picked = []
    for i, s in enumerate(found):
        with st.container(key=f"suggestion_{i}", border=True):
            fixes = f"fixes {len(s.fixes)}, breaks {len(s.breaks)}, moves {len(s.to_rules)} to the rules"
            if st.checkbox(f"**{s.edit.describe()}** · gain {s.gain:g} · {fixes}",
                           key=f"suggest_pick.{pl.edit_key(s.edit)}"):
                picked.append(s)
            st.markdown("\n".join(f"- {line}" for line in pl.evidence_lines(s, log)))
    if found:
        st.button(f"Apply {len(picked)} ticked suggestion(s) to the draft", key="suggest_apply", type="primary",
                  on_click=_apply, args=(picked, inputs.policy), disabled=not picked or not inputs.draft_ok,
                  icon=":material/playlist_add_check:",
                  help=None if inputs.draft_ok else "The draft has problems (Policy editor tab); fix them first.")
    _render_after(inputs, log)


def _render_conflicts(log: pl.LabelledLog) -> None:
    """The questions labelled one way in some rows and another way in others, above the suggestions."""
    conflicts = pl.conflict_lines(log)
    if conflicts:
        shown = conflicts[:MAX_CONFLICTS_SHOWN]
        more = [f"and {len(conflicts) - len(shown)} more"] if len(conflicts) > len(shown) else []
        st.warning(f"{len(conflicts)} question(s) are labelled one way in some rows and another way in others. No "
                   "edit can route a question both ways, and a suggestion that fixes one side says nothing of the "
                   "other: delete the labels that are wrong.\n\n" + "\n".join(f"- {line}" for line in [*shown, *more]))


def _render_after(inputs: SuggestInputs, log: pl.LabelledLog) -> None:
    """Once suggestions are applied: what changed, its impact on the same labelled questions, and
    the save."""
    ss = st.session_state
    before = ss.get(BEFORE)
    if not before:
        return
    try:
        base = parse_policy(before["text"], "the draft before the suggestions")
    except CoachctxError:
        base = None
    if base is None:
        ss.pop(BEFORE, None)
        return
    st.subheader("What the applied suggestions change")
    with st.container(key="suggest_diff"):
        st.markdown(pg.diff_markdown(diff_policies(base, inputs.policy), "the draft before", "the draft now"))
    st.subheader("Impact on the labelled questions")
    questions = log.questions()
    key = (base.digest, inputs.policy.digest, hashlib.sha256(repr(questions).encode()).hexdigest(), inputs.cost_mode)
    if st.button("Check the impact", key="suggest_impact_run", icon=":material/play_arrow:"):
        ss["suggest_impact"] = (key, run_impact(questions, base, inputs.policy, base_name="before the suggestions",
                                                candidate_name="draft", cost_mode=inputs.cost_mode))  # type: ignore[arg-type]
    result = ss.get("suggest_impact")
    if result is not None and result[0] == key:
        inputs.render_impact(result[1], "suggest_")
    elif result is not None:
        st.caption("The draft or the labels changed since the last check; check again.")
    _render_save(inputs)


def _save(store: PolicyStore) -> None:
    ss = st.session_state
    label = ss.get("suggest_save_label")
    label = None if label in (None, NO_LABEL) else str(label)
    try:
        version = store.save(ss["policy_yaml"], message=ss.get("suggest_save_message") or "",
                             author=session_author(), label=label, base=ss.get("draft_base"), source="the draft")
    except CoachctxError as e:  # a StaleSaveError's message says who saved what, and what to do
        ss["suggest_save_status"] = ("error", f"Not saved: {e}")
        return
    ss["draft_base"] = version.number
    ss.pop(BEFORE, None)
    ss.pop("suggest_impact", None)
    moved = f"; {label} now points at it" if label else ""
    ss["suggest_save_status"] = ("ok", f"Saved version {version.number} (digest `{version.digest}`){moved}. The "
                                       f"draft is now based on version {version.number}.")


def _render_save(inputs: SuggestInputs) -> None:
    ss = st.session_state
    store = inputs.store
    assert store is not None
    st.subheader("Save the draft as a version")
    st.text_input("Message for the version", key="suggest_save_message", max_chars=MAX_MESSAGE_CHARS)
    options = [NO_LABEL, *dict.fromkeys(["live", "draft", *inputs.labels])]
    wanted = pg.default_save_label(inputs.labels, ss.get("draft_base"))
    st.selectbox("Then point this label at it", options, key="suggest_save_label",
                 index=options.index(wanted) if wanted in options else 0,
                 help="A label only moves if it still points at the version your draft is based on.")
    author_input("suggest_save", "Saved by")
    st.button("Save the draft as a version", key="suggest_save", type="primary", on_click=_save, args=(store,),
              disabled=not inputs.draft_ok, icon=":material/save:")


def tab_suggest(ctx: Context) -> None:
    """The Suggest tab: suggestions from the stored labels over the policy in use."""
    render_suggest_tab(SuggestInputs(
        store=ctx.store.store, store_error=ctx.store.error, policy=ctx.policies.working, draft_ok=ctx.policies.draft.ok,
        labels=ctx.store.label_map, cost_mode=ctx.view.cost_mode, render_impact=render_impact))
