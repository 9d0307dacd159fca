"""The Impact tab: a question log through two policies, and what changes."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import streamlit as st

from coachctx import playground as pg
from coachctx.errors import CoachctxError
from coachctx.playground.ui.cache import SAMPLE_LOG, sample_questions, upload_cap, uploaded_questions
from coachctx.playground.ui.choices import (
    CHECKED_IN_CHOICE,
    DRAFT_CHOICE,
    choice_options,
    choice_title,
    default_index,
    resolve_choice,
)
from coachctx.playground.ui.state import Context
from coachctx.tools.impact import ImpactReport, QuestionSet, run_impact


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
    render_metrics(report, keys)
    render_questions(report, keys)
    if report.skipped:
        with st.expander(f"{len(report.skipped)} row(s) skipped, and why"):
            st.dataframe(pd.DataFrame(report.skipped, columns=["row", "why"]), hide_index=True, width="stretch",
                         key=f"{keys}impact_skipped")
    st.download_button("Download the report (JSON)", key=f"{keys}impact_download", on_click="ignore",
                       data=json.dumps(report.to_json(), ensure_ascii=False, indent=2),
                       file_name=f"coachctx-impact-{report.base_digest}-{report.candidate_digest}.json",
                       mime="application/json", icon=":material/download:")


def render_metrics(report: ImpactReport, keys: str = "") -> None:
    """Accuracy, recall and tokens per policy, and where each routed the labelled rows."""
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


ROWS_PER_PAGE = 25


def render_questions(report: ImpactReport, keys: str = "") -> None:
    """Each question as an expandable row (its full text and what changed), a page at a time, and
    the same as a table."""
    changed_only = st.toggle("Show changed questions only", value=True, key=f"{keys}impact_changed_only")
    frame = pg.impact_frame(report, changed_only=changed_only)
    if frame.empty:
        st.success("No question decides differently under the candidate." if changed_only else "No questions.")
        return
    pages = -(-len(frame) // ROWS_PER_PAGE)
    page = 1
    if pages > 1:
        page = int(st.number_input(f"Page (of {pages}, {ROWS_PER_PAGE} questions each)", min_value=1,
                                   max_value=pages, step=1, key=f"{keys}impact_page.{pages}"))
    first = (page - 1) * ROWS_PER_PAGE
    st.markdown(f"**Questions** {first + 1}–{min(first + ROWS_PER_PAGE, len(frame))} of {len(frame)} — open a row "
                "for the question and what changed in full")
    with st.container(key=f"{keys}impact_rows"):
        for row in frame.iloc[first:first + ROWS_PER_PAGE].to_dict("records"):
            title, body = pg.impact_row(row)
            with st.expander(title):
                st.markdown(body)
    with st.expander(f"All {len(frame)} as a table (changed cells highlighted; sortable)"):
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
