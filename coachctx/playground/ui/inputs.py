"""The inputs above the tabs (question, athlete, time horizon, tier, cost mode) and the sidebar (the policy in use, the model)."""

from __future__ import annotations

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.pipeline import COST_MODES, MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import CUSTOM_TIER
from coachctx.model import ModelSettings, model_settings
from coachctx.playground.ui.cache import athlete_labels, secrets_settings, upstream
from coachctx.playground.ui.callbacks import use_example
from coachctx.playground.ui.lazy import lazy_popover
from coachctx.playground.ui.state import Policies, StoreView
from coachctx.playground.ui.url import open_tab

WIDTHS = {"scope": 165, "tier": 175, "budget": 140, "cost_mode": 140}
"""Pixels for the boxes beside the athlete's, each wide enough for its longest choice; the athlete's,
whose labels are longest, takes the rest (at 1024 px as wide as it was as a 2.2 : 1.2 : 1.2 : 1 column)."""
EXAMPLES_WIDTH = 150


def render_inputs(policies: Policies) -> pg.ViewState:
    """The question and the four choices, as select boxes: they never clip, from 1024 px up."""
    ss = st.session_state
    if "budget" in ss:  # keep the custom budget while its input is hidden (unrendered widgets lose state)
        ss["budget"] = ss["budget"]
    # rows are horizontal containers, not columns: a column is one more element, and each element
    # costs every rerun its time in the browser
    row = st.container(horizontal=True, vertical_alignment="bottom", wrap=False)
    row.text_input("The athlete's question", key="question", max_chars=MAX_QUESTION_CHARS,
                   placeholder="Type what the athlete asked, e.g. " + pg.PAIN_QUESTION)
    with row:  # the example buttons are built only while the list is open
        if (box := lazy_popover("Examples", key="examples", icon=":material/lightbulb:", width=EXAMPLES_WIDTH)) is not None:
            for i, example in enumerate(pg.EXAMPLE_QUESTIONS):
                box.button(example, key=f"example_{i}", on_click=use_example, args=(example,), type="tertiary")
    tiers = [*policies.working.tiers, CUSTOM_TIER]
    if ss.get("tier") not in tiers:
        ss["tier"] = tiers[0]
    athletes = upstream().athletes()
    choices = st.container(horizontal=True, wrap=False)  # never a second line: the decision stays on the first screen
    athlete = choices.selectbox("Athlete", athletes, key="athlete",
                                format_func=lambda a: athlete_labels().get(a, a),
                                help="Sample athletes (sample_athletes/): each one shows a case — a service down, "
                                     "data never computed, empty fields, another language.")
    scope = choices.selectbox("Time horizon", list(SCOPE_REQUESTS), key="scope", width=WIDTHS["scope"],
                              format_func=lambda s: pg.SCOPE_LABELS.get(s, s),
                              help="scope: 'from the question' (auto) reads words like 'today' or 'next week'; the "
                                   "others force a horizon, whose modifiers promote, demote or drop facts.")
    tier = choices.selectbox(
        "Tier", tiers, key="tier", width=WIDTHS["tier"],
        format_func=lambda t: f"{t} · {policies.working.tiers[t]} tokens" if t in policies.working.tiers
        else "custom budget",
        help="The token budget for the optional (secondary) facts; the essential (primary) ones are "
             "always sent.")
    budget = None
    if tier == CUSTOM_TIER:
        budget = int(choices.number_input("Custom budget (tokens)", min_value=0, max_value=pg.MAX_URL_BUDGET,
                                          step=10, key="budget", width=WIDTHS["budget"]))
    cost_mode = choices.selectbox("Count costs", list(COST_MODES), key="cost_mode", width=WIDTHS["cost_mode"],
                                  format_func=lambda m: pg.COST_LABELS.get(m, m),
                                  help="Which cost the budget spends: estimated (`hand`, from the fragment registry) "
                                       "or measured (`measured`, the rendered line counted with tiktoken). The table "
                                       "shows both.")
    return pg.ViewState(question=ss.get("question") or "", athlete=athlete, scope=scope or "auto",
                        tier=tier or tiers[0], budget=budget, cost_mode=cost_mode or "hand",
                        policy_digest=policies.working.digest, draft_id=ss.get("draft_id"), tab=open_tab())


def render_sidebar(policies: Policies, origin: pg.PolicyOrigin, sv: StoreView) -> ModelSettings | None:
    """The sidebar; returns the model settings when a model is configured."""
    ss = st.session_state
    with st.sidebar:
        working = policies.working
        # a heading and what follows it are one element: each element costs every rerun its time
        st.markdown(f"## Policy in use\n\n{origin.description[:1].upper()}{origin.description[1:]} · fingerprint "
                    f"(digest) `{working.digest}`")
        if working.digest != policies.checked_in.digest:
            st.caption(f"The checked-in policy is `{policies.checked_in.digest}`.")
        live = sv.label_map.get("live")
        if live is not None and origin.version != str(live.version):
            st.caption(f"`live` points at version {live.version}; “Use version {live.version} (live) here” in the "
                       "Versions tab decides with it.")
        if not policies.draft.ok:
            st.error(f"The draft has {len(policies.draft.problems)} problem(s); the decision uses the last valid "
                     "version. See the Policy editor tab.")
        link = ss.get("link_digest")
        if link and link != working.digest and ss.get("draft_restored") is None:
            st.warning(f"The address names policy `{link}`, but this page decides with `{working.digest}`, so "
                       "the decision may differ from the one that address was made for. To decide with that "
                       "policy, import its exported YAML (Policy editor) or load its version (Versions).")
        for note in ss.get("url_notes") or []:
            st.info(f"Address: {note}")
        if ss.get("draft_keep_error"):
            st.warning(f"Your draft is not kept across reloads: {ss['draft_keep_error']}. Export it to keep it.")
        elif ss.get("draft_kept") is not None:
            st.caption(f"Your draft is kept in the policy store (draft `{ss['draft_id']}`, in the address): a "
                       "reload or a restart brings it back. Save it as a version to share it.")
        st.markdown(":small[:gray[Share this view: copy the address bar. It holds the question, athlete, time "
                    "horizon, tier and cost mode, and the draft (on this server) or the policy digest.]]"
                    "\n\n## Model (optional)")
        st.text_input("OpenAI API key for this session", type="password", key="typed_api_key",
                      help="Kept in this browser session only; never written anywhere.")
        # the environment first, then secrets.toml; a key typed here wins over both
        settings = model_settings(secrets=secrets_settings(), typed_key=ss.get("typed_api_key"))
        config = settings if settings.configured else None
        if config is None:
            st.caption("No model configured: unsure routing falls back to keyword scores, and reply generation "
                       "is off. Everything else works.")
        else:
            st.caption(f"Model `{config.model}` at {config.base_url or 'api.openai.com'} (from {config.source}).")
            st.checkbox("Ask the model when the rules are unsure", value=True, key="use_model")
    return config
