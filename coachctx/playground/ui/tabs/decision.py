"""The Decision tab: how the question was routed, which facts are sent and withheld and why."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from coachctx import playground as pg
from coachctx.engine.decision import Decision
from coachctx.playground.decision_html import fragment_lists_html, headline_html
from coachctx.playground.fact_rows import fact_rows_html
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
    i = d.intent
    st.subheader("1 · Routing: which intent is this question?")
    left, right = st.columns([3, 2])
    with left:
        # the chart and its key are one element of plain HTML (chart.py): no Vega view to build per question
        st.html(pg.routing_chart_html(d) + '<p class="coachctx-chart-key">Confident only if the top score ≥ '
                f"threshold {i.threshold:g} (red line) and it leads the runner-up by ≥ margin {i.required_margin:g} "
                "(a runner-up inside the orange band means unsure).</p>")
    with right:
        notes, after = routing_notes(d), [pg.matched_terms_table(d), time_horizon(d)]
        if i.matched_nothing:
            st.markdown("\n\n".join(notes))
            st.info(f"No vocabulary matched. Scripts seen in the question: {', '.join(i.scripts) or 'none'}. "
                    "Add terms in this language to the vocabulary (Policy editor) to route it by rules.")
            notes = []
        # one element for the notes beside the chart (each element costs every rerun its time)
        st.markdown("\n\n".join(part for part in [*notes, *after] if part))


def routing_notes(d: Decision) -> list[str]:
    """Why this route, the contenders when it was unsure, and what the model said."""
    i = d.intent
    notes = [f"**Why:** {i.reason}"]
    if i.source != "rules" and len(i.contenders) > 1:
        notes.append(f"**Possible intents** (contenders): {', '.join(i.contenders)} — routing is uncertain, "
                     "so every one of them gets its essential facts, and a fact one of them needs is kept even "
                     "if another excludes it.")
    elif i.source != "rules":
        notes.append(f"**Possible intents** (contenders): only {i.contenders[0]} — no other intent is "
                     "within the margin.")
    if i.model is not None:
        notes.append(f"**Model:** {pg.model_answer(i.model)}")
    return notes


def time_horizon(d: Decision) -> str:
    scope = d.scope
    if not scope.effective:
        return "**Time horizon:** none — no scope words in the question, so no scope modifiers apply"
    how = (f"inferred from {', '.join(repr(w) for w in scope.inferred_from)}" if scope.inferred_from
           else "chosen above")
    return f"**Time horizon:** {scope.effective} ({how})"


def render_selection(d: Decision) -> None:
    st.markdown("### 2 · Selection: what the model sees, and why\n\n"
                f"Tier **{d.tier}**: {d.budget}-token budget for secondary context, "
                f"{d.tokens.budget_spent} spent · costs counted **{pg.COST_LABELS.get(d.tokens.cost_mode, d.tokens.cost_mode)}** "
                f"(`{d.tokens.cost_mode}`). "
                "Primary context is never cut by the budget.")
    # the two lists side by side, then the eleven rows (fact_rows.py): one element each; the table
    # and the services are built only while open
    st.html(fragment_lists_html(d))
    st.html(fact_rows_html(d))
    if (table := lazy_expander("The same as a table (sortable; scroll right for every column)",
                               key="facts_table")) is not None:
        with table:
            render_fragments_table(d)
    if (services := lazy_expander("Services for this athlete", key="services_box")) is not None:
        services.markdown("\n".join(f"- {line}" for line in pg.service_status_lines(d)))


def render_download(d: Decision, ctx: Context) -> None:
    budget = ctx.view.budget if ctx.view.tier == "custom" else None
    bundle = bundle_for(d.athlete)
    # the trace is written when the button is clicked, not on every rerun
    st.download_button(
        "Download this decision as a trace", key="download_trace", icon=":material/download:", on_click="ignore",
        data=lambda: pg.decision_trace_json(d, bundle, cost_mode=d.tokens.cost_mode, budget=budget),
        file_name=f"coachctx-trace-{d.athlete}-{d.policy.digest}.json", mime="application/json")
    version = d.policy.version
    st.caption(f"The trace holds the inputs, this decision and the athlete's data snapshot; it records the policy "
               f"as `{d.policy.source}`" + (f", stored version {version}" if version else "")
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
