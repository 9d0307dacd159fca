"""The Decision tab: how the question was routed, which facts are sent and withheld and why."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from coachctx import playground as pg
from coachctx.engine.decision import Decision
from coachctx.engine.policy import CUSTOM_TIER
from coachctx.playground.decision_html import headline_html, routing_html, selection_html
from coachctx.playground.ui.cache import bundle_for
from coachctx.playground.ui.lazy import lazy_expander
from coachctx.playground.ui.state import Context
from coachctx.playground.ui.tabs.suggest import render_label_control


def tab_decision(ctx: Context) -> None:
    d = ctx.decision
    if d is None:
        st.info(ctx.decision_error or "Type a question above to see the decision.")
        return
    render_headline(d)
    render_routing(d)
    render_selection(d)
    # the decision as JSON, as the page keeps it (compute_decision): not serialised a second time
    render_label_control(st.session_state["decision"], key="label_decision", store=ctx.store.store, store_error=ctx.store.error)
    render_download(d, ctx)


def render_headline(d: Decision) -> None:
    """What a coach reads first: how it was decided, the figures, what is sent and withheld, the
    audit; one element (decision_html.py)."""
    st.html(headline_html(d))


def render_routing(d: Decision) -> None:
    st.html(routing_html(d))


def render_selection(d: Decision) -> None:
    st.html(selection_html(d))
    # the same facts as a sortable table, built only while open
    if (table := lazy_expander("The same as a table (sortable; scroll right for every column)",
                               key="facts_table")) is not None:
        with table:
            render_fragments_table(d)


def render_download(d: Decision, ctx: Context) -> None:
    budget = ctx.view.budget if ctx.view.tier == CUSTOM_TIER else None
    bundle = bundle_for(d.athlete)
    # the trace is written when the button is clicked, not on every rerun
    st.download_button(
        "Download this decision as a trace", key="download_trace", icon=":material/download:", on_click="ignore",
        data=lambda: pg.decision_trace_json(d, bundle, cost_mode=d.tokens.cost_mode, budget=budget),
        file_name=f"coachctx-trace-{d.athlete}-{d.policy.digest}.json", mime="application/json",
        help=f"The trace holds the inputs, this decision and the athlete's data snapshot; it records the policy "
             f"as `{d.policy.source}`" + (f", stored version {d.policy.version}" if d.policy.version else "")
             + f" (fingerprint `{d.policy.digest}`). `coachctx replay TRACE` or the Reproduce tab decides it again.")


def render_fragments_table(d: Decision) -> None:
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
            "why": st.column_config.TextColumn("why", width="large", help="In full in the rows above"),
            "role": st.column_config.TextColumn("role", help="primary: always sent when available; secondary: "
                                                             "sent while the tier's budget lasts"),
            "cost": st.column_config.NumberColumn("cost", help=f"Tokens the budget counted ({d.tokens.cost_mode})"),
            "line": st.column_config.TextColumn("line sent to the model", width="large"),
            "hand": st.column_config.NumberColumn("estimated", help="Hand-assigned cost from the fragment registry "
                                                                    "(`hand`)"),
            "measured": st.column_config.NumberColumn("measured", help="The rendered line counted with tiktoken"),
            "reasons": st.column_config.TextColumn("reason codes", help="As in the Decision JSON"),
            "fragment": st.column_config.TextColumn("fragment (technical name)"),
        },
    )


def _status_colors(row: pd.Series) -> list[str]:
    color = "background-color: rgba(46, 160, 67, 0.12)" if str(row["status"]).endswith("selected") \
        else "background-color: rgba(128, 128, 128, 0.10)"
    return [color] * len(row)
