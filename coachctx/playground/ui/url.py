"""The view in the address bar: the inputs written there on every run, and put back from it when the user goes Back or Forward."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.policy import Policy
from coachctx.playground.ui.cache import upstream


def default_view(base: Policy) -> pg.ViewState:
    athletes = upstream().athletes()
    return pg.ViewState(question=pg.PAIN_QUESTION, athlete="maya" if "maya" in athletes else athletes[0],
                        tier="paid" if "paid" in base.tiers else next(iter(base.tiers)))


def current_view() -> pg.ViewState:
    ss = st.session_state
    return pg.ViewState(question=ss.get("question") or "", athlete=ss["athlete"], scope=ss["scope"], tier=ss["tier"],
                        budget=ss.get("budget"), cost_mode=ss["cost_mode"], tab=open_tab())


def open_tab() -> str:
    """The open tab's short name (the tabs widget holds its label)."""
    label = st.session_state.get("tab")
    return next((name for name, shown in pg.TAB_NAMES.items() if shown == label), "decision")


def apply_view(view: pg.ViewState) -> None:
    """Put a view into the input widgets' state; runs before the widgets exist in this run."""
    ss = st.session_state
    ss["question"] = view.question
    ss["athlete"] = view.athlete
    ss["scope"] = view.scope
    ss["tier"] = view.tier
    ss["budget"] = view.budget if view.budget is not None else ss.get("budget", 200)
    ss["cost_mode"] = view.cost_mode
    ss["tab"] = pg.TAB_NAMES[view.tab]


def url_view_params() -> dict[str, str]:
    return {k: str(st.query_params.get(k)) for k in pg.VIEW_KEYS if st.query_params.get(k) is not None}


def navigated() -> bool:
    """True when the address bar no longer shows what this page last wrote there: the user went
    Back or Forward (Streamlit reruns the script with that entry's parameters)."""
    written = st.session_state.get("url_written")
    if written is None:
        return False
    return url_view_params() != {k: v for k, v in written.items() if k in pg.VIEW_KEYS}


# The first screen's address replaces the one the browser opened instead of adding an entry
# after it: that entry shows the same view, so the first Back would change nothing.
REPLACE_ADDRESS = "<script>window.history.replaceState(window.history.state, '', %s);</script>"


def write_query_params(view: pg.ViewState) -> None:
    """Keep the address bar on this view. Streamlit adds a history entry per change, and Back
    reruns the page with the older entry, which `init_state` puts back into the inputs; the
    first run's address replaces the opened one (Streamlit would add an entry)."""
    wanted = pg.encode_view(view)
    current = {k: st.query_params.get(k) for k in pg.URL_KEYS if st.query_params.get(k) is not None}
    if current != wanted:
        if st.session_state.get("url_written") is None:
            address = "?" + urlencode(wanted)
            st.html(REPLACE_ADDRESS % json.dumps(address), unsafe_allow_javascript=True)
        else:
            st.query_params.from_dict(wanted)
    st.session_state["url_written"] = wanted
