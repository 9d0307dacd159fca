"""The page: the header, the inputs, the decision, and the open tab (only that one is built on a rerun)."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Mapping

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.decision import Decision
from coachctx.errors import CoachctxError, PolicyError
from coachctx.model import ModelSettings
from coachctx.playground.fact_rows import CSS as FACT_ROWS_CSS
from coachctx.playground.fact_rows import KEEP_OPEN as KEEP_FACTS_OPEN
from coachctx.playground.ui.cache import ROOT, decide
from coachctx.playground.ui.inputs import render_inputs, render_sidebar
from coachctx.playground.ui.state import Context, Policies, keep_draft, load_policies, load_store, origin_of
from coachctx.playground.ui.tabs.decision import tab_decision
from coachctx.playground.ui.tabs.impact import tab_impact
from coachctx.playground.ui.tabs.policy import LINE_NUMBERS, tab_policy
from coachctx.playground.ui.tabs.prompt import tab_prompt
from coachctx.playground.ui.tabs.suggest import tab_suggest
from coachctx.playground.ui.tabs.trace import tab_trace
from coachctx.playground.ui.tabs.versions import tab_versions
from coachctx.playground.ui.url import write_query_params

ICON = ROOT / "assets" / "favicon.png"


# Less empty space above the title, so the decision summary is on the first screen at 1366×768.
PAGE_CSS = ("<style>.st-key-policy_yaml textarea {font-family: 'Source Code Pro', monospace; font-size: 0.85rem;}"
            "[data-testid='stMainBlockContainer'] {padding-top: 3.5rem;}"
            # the YAML keeps its own line breaks (a wrapped line would not match the numbers in errors)
            ".st-key-policy_yaml textarea {white-space: pre; overflow-wrap: normal; overflow-x: auto;}"
            # a multiselect's chips wrap onto more lines instead of scrolling out of sight in a narrow column
            "[data-testid='stMultiSelect'] .react-aria-ComboBox > div > div:first-child {flex-wrap: wrap; "
            "height: auto; max-height: none; overflow: visible;}"
            "[data-testid='stMultiSelect'] .react-aria-ComboBox > div {height: auto; max-height: none;}"
            # the line numbers beside the YAML (tabs/policy.py keeps them in step with the text)
            ".st-key-policy_yaml textarea {padding-left: 4.2em;}"
            ".coachctx-gutter {position: absolute; left: 0; top: 0; bottom: 0; width: 3.4em; overflow: hidden; "
            "white-space: pre; text-align: right; padding-right: 0.5em; box-sizing: border-box; z-index: 1; "
            "color: rgba(49, 51, 63, 0.5); border-right: 1px solid rgba(49, 51, 63, 0.15); pointer-events: none; "
            "user-select: none;}"
            # the page's own scripts take no room (an empty element still gets a gap)
            "[data-testid='stElementContainer']:has(> [data-testid='stHtml'] > script:first-child) {display: none;}"
            + FACT_ROWS_CSS +
            # each uploader states its limit once, in its label; Streamlit's line would state a second one
            "[data-testid='stFileUploaderDropzoneInstructions'] {display: none;}</style>")


SUBTITLE = ("What may the coaching assistant see about this athlete for this question — and why? "
            "Every fact below comes from the engine's Decision; no model is needed.")


TabRenderer = Callable[[Context], None]
# Every tab, in the order of `pg.TAB_NAMES` (its label and its name in the address). Another tab is
# one more entry in both.
TABS: Mapping[str, TabRenderer] = {
    "decision": tab_decision,
    "prompt": tab_prompt,
    "policy": tab_policy,
    "versions": tab_versions,
    "impact": tab_impact,
    "suggest": tab_suggest,
    "trace": tab_trace,
}


def compute_decision(view: pg.ViewState, policies: Policies, origin: pg.PolicyOrigin,
                     config: ModelSettings | None) -> tuple[Decision | None, str | None]:
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

    try:
        policies = load_policies()
    except PolicyError as e:
        st.caption(SUBTITLE)
        st.error(f"The checked-in policy is invalid, so the playground cannot start:\n\n{e}")
        st.stop()
    store = load_store()
    keep_draft(policies, store)
    origin = origin_of(policies, store)
    unsaved = not policies.draft.ok or origin.source.startswith(pg.DRAFT_SOURCE)
    st.caption(f"{SUBTITLE}  \nDeciding with {origin.description}"
               + (" · the draft has problems, so its last valid state decides" if not policies.draft.ok else "")
               + f" · fingerprint `{policies.working.digest}`. More in the sidebar (») and the Versions tab.")
    view = render_inputs(policies)
    config = render_sidebar(policies, origin, store)
    decision, error = compute_decision(view, policies, origin, config)
    if error and view.question.strip():
        st.error(error)
    write_query_params(view)
    st.html(UNSAVED_GUARD % ("true" if unsaved else "false") + LINE_NUMBERS + KEEP_FACTS_OPEN,
            unsafe_allow_javascript=True)
    ctx = Context(decision=decision, decision_error=error, policies=policies, model=config, view=view, store=store,
                  origin=origin)
    # only the open tab is built: a rerun after a question change does not lay out the other five
    tabs = st.tabs(list(pg.TAB_NAMES.values()), key="tab", on_change="rerun")
    for render, tab in zip(TABS.values(), tabs, strict=True):
        if tab.open:
            with tab:
                render(ctx)
    _freeze_startup_heap()


@functools.cache
def _freeze_startup_heap() -> None:
    """Once per process, after the first page: move what startup built (modules, the compiled
    policy, the word lists) out of the garbage collector's sight. Streamlit runs a full collection
    after every script run, and walking those few hundred thousand long-lived objects took most of
    a rerun (0.1-0.5 s). Frozen objects are still freed when their last reference goes; only a
    reference cycle among them would outlive its use."""
    gc.collect()
    gc.freeze()
