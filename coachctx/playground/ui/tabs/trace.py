"""The Reproduce tab: a decision trace decided again under the policy in use, differences highlighted."""

from __future__ import annotations

import dataclasses

import streamlit as st

from coachctx import playground as pg
from coachctx.errors import CoachctxError, TraceError
from coachctx.playground.ui.cache import upload_cap, upstream
from coachctx.playground.ui.callbacks import open_trace_inputs
from coachctx.playground.ui.state import Context
from coachctx.playground.ui.tabs.suggest import render_label_control
from coachctx.tools.trace import MAX_TRACE_BYTES, parse_trace, replay


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
        recorded = pg.cleaned(dict(trace.decision))  # a trace's JSON may carry lone surrogates (\ud800)
        facts = pg.decision_facts(recorded, f"{trace.source}: decision")
        fragments = pg.recorded_fragments(recorded, f"{trace.source}: decision")
        result = replay(trace, ctx.policies.working, policy_source=ctx.origin.source,
                        policy_version=ctx.origin.version)
    except (TraceError, CoachctxError) as e:
        st.error(f"Cannot reproduce this trace: {e}", icon=":material/error:")
        return
    asked = dataclasses.replace(trace.asked, question=pg.clean_text(trace.asked.question))
    st.markdown(f"**Question:** {asked.question}  \n**Athlete:** {asked.athlete} · scope {asked.scope} · tier "
                f"{asked.tier} · costs {result.decision.tokens.cost_mode}  \n"
                f"**Policy:** recorded `{facts.digest}`, now `{result.decision.policy.digest}`")
    if result.same:
        st.success("Same decision: the policy in use decides exactly as recorded.")
    else:
        st.error(f"{len(result.differences)} difference(s) between the recorded decision and the policy in use.")
        st.dataframe(pg.differences_frame(pg.cleaned(result.differences)).style.apply(
            lambda row: ["background-color: rgba(214, 39, 40, 0.12)"] * len(row), axis=1),
            hide_index=True, width="stretch", key="trace_differences")
    frame = pg.trace_fragments_frame(fragments, result.decision)
    st.markdown("**Fragment by fragment** (changed rows highlighted)")
    st.dataframe(frame.style.apply(
        lambda row: (["background-color: rgba(214, 39, 40, 0.15)"] if row["changed"] else [""]) * len(row), axis=1),
        hide_index=True, width="stretch", key="trace_fragments", height=35 * (len(frame) + 1) + 12)
    render_label_control(recorded, key="label_trace", store=ctx.store.store, store_error=ctx.store.error)
    if asked.athlete is None or not upstream().has(asked.athlete):
        st.warning(f"The trace's athlete {asked.athlete!r} is not one of the sample athletes here, so "
                   "opening the question decides it for the athlete chosen above, with that athlete's data. The "
                   "comparison on this tab uses the trace's own snapshot.", icon=":material/person_off:")
    for note in st.session_state.pop("trace_opened", None) or []:
        st.info(f"Opened the question above; {note}.")
    st.button("Open this question in the playground", key="open_trace", on_click=open_trace_inputs,
              args=(asked, list(ctx.policies.working.tiers)),
              help="Copies the trace's question, athlete, scope, tier and cost mode into the inputs above. The "
                   "Decision tab then uses today's sample data for that athlete, not the trace's snapshot.")
    with st.expander("Recorded decision (JSON)"):
        st.json(recorded, expanded=False)
    with st.expander("Decision under the policy in use (JSON)"):
        st.json(pg.cleaned(result.decision.to_json()), expanded=False)
