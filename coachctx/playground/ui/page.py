"""The page: the header, the inputs, the decision, and the open tab (only that one is built on a rerun)."""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.common_words import glued_parts
from coachctx.engine.decision import Decision
from coachctx.engine.policy import CUSTOM_TIER
from coachctx.errors import CoachctxError, PolicyError
from coachctx.model import ModelSettings
from coachctx.playground.chart import CSS as CHART_CSS
from coachctx.playground.decision_html import CSS as DECISION_CSS
from coachctx.playground.fact_rows import CSS as FACT_ROWS_CSS
from coachctx.playground.fact_rows import KEEP_OPEN as KEEP_FACTS_OPEN
from coachctx.playground.ui.cache import ROOT, decide
from coachctx.playground.ui.inputs import render_inputs, render_sidebar
from coachctx.playground.ui.state import (
    Context,
    Policies,
    StoreView,
    keep_draft,
    load_policies,
    load_store,
    origin_of,
)
from coachctx.playground.ui.tabs.decision import tab_decision
from coachctx.playground.ui.tabs.impact import tab_impact
from coachctx.playground.ui.tabs.policy import LINE_NUMBERS, tab_policy
from coachctx.playground.ui.tabs.prompt import tab_prompt
from coachctx.playground.ui.tabs.suggest import tab_suggest
from coachctx.playground.ui.tabs.trace import tab_trace
from coachctx.playground.ui.tabs.versions import tab_versions
from coachctx.playground.ui.url import open_tab, write_query_params

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
            + FACT_ROWS_CSS + CHART_CSS + DECISION_CSS +
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
        with st.spinner("Asking the model…") if routing_model is not None else contextlib.nullcontext():
            d = decide(view.question, view.athlete, view.scope, view.tier, view.budget if view.tier == CUSTOM_TIER else None,
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
        frame = read_frame()
    except PolicyError as e:
        st.caption(SUBTITLE)
        st.error(f"The checked-in policy is invalid, so the playground cannot start:\n\n{e}")
        st.stop()
    policies, origin = frame.policies, frame.origin
    st.caption(f"{SUBTITLE}  \nDeciding with {origin.description}"
               + (" · the draft has problems, so its last valid state decides" if not policies.draft.ok else "")
               + f" · fingerprint `{policies.working.digest}`. More in the sidebar (») and the Versions tab.")
    config = render_sidebar(policies, origin, frame.store)
    st.html(UNSAVED_GUARD % ("true" if frame.unsaved else "false") + LINE_NUMBERS + KEEP_FACTS_OPEN,
            unsafe_allow_javascript=True)
    body({"frame": frame, "drawn": frame.key, "model": config})
    _freeze_startup_heap()


@dataclass(frozen=True)
class Frame:
    """What the page around the inputs and tabs shows: the policies, the store, where the policy in
    use came from. `key` holds everything the header and the sidebar are drawn from."""

    policies: Policies
    store: StoreView
    origin: pg.PolicyOrigin
    unsaved: bool
    key: tuple[object, ...]


def read_frame() -> Frame:
    policies = load_policies()
    store = load_store()
    keep_draft(policies, store)
    origin = origin_of(policies, store)
    unsaved = not policies.draft.ok or origin.source.startswith(pg.DRAFT_SOURCE)
    ss = st.session_state
    key = (policies.working.digest, policies.checked_in.digest, policies.draft.ok, len(policies.draft.problems),
           origin, unsaved, store.label_map.get("live"),
           *(repr(ss.get(k)) for k in SIDEBAR_STATE))
    return Frame(policies, store, origin, unsaved, key)


SIDEBAR_STATE = ("link_digest", "draft_restored", "url_notes", "draft_keep_error", "draft_kept", "draft_id")
"""The session values the sidebar reads besides the policies and the store."""


@st.fragment
def body(shared: dict[str, Any]) -> None:
    """The inputs, the decision and the open tab: what a question changes. A change to a widget in
    here (the question, a choice, anything in a tab) reruns only this part, so the header and the
    sidebar are neither built nor sent again; when what they show changed (the policy was edited or
    saved, the draft kept), the whole page is drawn again instead.

    `shared` is the dict the last whole run passed: a rerun of this part alone gets the same one, so
    what the whole run read is used once and then read afresh."""
    frame = shared.pop("frame", None) or read_frame()
    if frame.key != shared["drawn"]:
        st.rerun(scope="app")
    view = render_inputs(frame.policies)
    decision, error = compute_decision(view, frame.policies, frame.origin, shared["model"])
    if error and view.question.strip():
        st.error(error)
    write_query_params(view)
    ctx = Context(decision=decision, decision_error=error, policies=frame.policies, model=shared["model"], view=view,
                  store=frame.store, origin=frame.origin)
    # The tabs are a strip of buttons and only the open tab is built: a rerun after a question change
    # lays out neither the other six nor st.tabs' seven tab panels (about 30 ms of every rerun, most
    # of it the browser's). The strip's value is the open tab's label, as st.tabs' was.
    st.segmented_control("Tab", list(pg.TAB_NAMES.values()), key="tab", required=True, label_visibility="collapsed",
                         width="stretch")
    TABS[open_tab()](ctx)


@functools.cache
def _freeze_startup_heap() -> None:
    """Once per process, after the first page: move what startup built (modules, the compiled
    policy, the word lists) out of the garbage collector's sight. Streamlit runs a full collection
    after every script run, and walking those few hundred thousand long-lived objects took most of
    a rerun (0.1-0.5 s). Frozen objects are still freed when their last reference goes; only a
    reference cycle among them would outlive its use. The word list for words run together is
    loaded first: the first question that needs it would otherwise load it (about 30 ms) and
    leave it in the collector's sight."""
    glued_parts()
    gc.collect()
    gc.freeze()
