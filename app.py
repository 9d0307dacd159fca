"""coachctx policy playground: try a question against a sample athlete, see every step of the
decision, edit the policy in the browser, export it, share a view, reproduce a trace.

The page renders a `Decision`; it decides nothing itself. Run it with `make run`.
Each tab is one function taking the same `Context`; add a tab by adding it to `TABS`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from coachctx import playground as pg
from coachctx.classifier import OpenAIClassifier
from coachctx.decision import Decision
from coachctx.errors import CoachctxError, PolicyError, TraceError
from coachctx.fragments import FRAGMENT_NAMES
from coachctx.pipeline import COST_MODES, MAX_QUESTION_CHARS, SCOPE_REQUESTS, select
from coachctx.policy import DEFAULT_POLICY_PATH, INTENTS, SCOPES, Policy, parse_policy, read_policy_text
from coachctx.services import Bundle, FixtureUpstream, fetch_bundle
from coachctx.trace import MAX_TRACE_BYTES, parse_trace, replay

CHECKED_IN = "policy/default.yaml"
CONFIG_HELP = (
    "Reply generation needs an OpenAI-compatible endpoint. Configure one of: the environment variables "
    "`OPENAI_API_KEY` (and optionally `OPENAI_BASE_URL` for another compatible server, `COACHCTX_MODEL` for "
    "the model name) before `make run`; the same keys in `.streamlit/secrets.toml`; or a key typed into "
    "the sidebar's password field for this session only. Everything else on this page works without one."
)


# --- cached data: fixtures, parsed policies, decisions -----------------------------------------


@st.cache_resource
def upstream() -> FixtureUpstream:
    return FixtureUpstream()


@st.cache_resource(max_entries=32)
def bundle_for(athlete: str) -> Bundle:
    return fetch_bundle(upstream(), athlete)


@st.cache_resource(max_entries=64)
def policy_from_text(text: str) -> Policy:
    """Parsed once per distinct text; a PolicyError is raised (and not cached) for a bad one."""
    return parse_policy(text)


@st.cache_resource(max_entries=8)
def classifier_for(_config: pg.ModelConfig, cache_key: tuple[str, ...]) -> OpenAIClassifier:
    return OpenAIClassifier(api_key=_config.api_key, base_url=_config.base_url, model=_config.model,
                            timeout_s=_config.timeout_s)


@st.cache_data(max_entries=256, show_spinner="Deciding…")
def decide(question: str, athlete: str, scope: str, tier: str, budget: int | None, cost_mode: str,
           _policy: Policy, digest: str, _config: pg.ModelConfig | None, model_key: tuple[str, ...]) -> Decision:
    """Cached per inputs, policy digest and model configuration, so a model is asked once."""
    classifier = classifier_for(_config, model_key) if _config is not None else None
    return select(question, bundle_for(athlete), _policy, scope=scope, tier=tier, budget=budget,
                  cost_mode=cost_mode, classifier=classifier, policy_source="playground draft")  # type: ignore[arg-type]


def checked_in_text() -> str:
    return read_policy_text(DEFAULT_POLICY_PATH)


def secrets_settings() -> dict[str, str]:
    """Model settings from `.streamlit/secrets.toml`; {} when there is no such file."""
    try:
        return {k: str(st.secrets[k]) for k in pg.MODEL_SETTING_KEYS if k in st.secrets}
    except FileNotFoundError:
        return {}
    except Exception:  # a malformed secrets.toml must not take the page down
        return {}


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


# --- state -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policies:
    checked_in: Policy
    checked_in_text: str
    working: Policy
    """The last valid draft: what the decision uses."""
    draft: pg.DraftCheck
    draft_text: str


@dataclass(frozen=True)
class Context:
    """What every tab gets."""

    decision: Decision | None
    decision_error: str | None
    policies: Policies
    model: pg.ModelConfig | None
    view: pg.ViewState


def init_state(base_text: str, base: Policy) -> None:
    ss = st.session_state
    ss.setdefault("policy_yaml", base_text)
    ss.setdefault("working_yaml", base_text)
    if "url_loaded" in ss:
        return
    ss["url_loaded"] = True
    default = pg.ViewState(question=pg.PAIN_QUESTION, athlete="maya" if upstream().has("maya")
                           else upstream().athletes()[0], tier="paid" if "paid" in base.tiers else next(iter(base.tiers)))
    view, notes = pg.decode_view(dict(st.query_params), athletes=upstream().athletes(), tiers=list(base.tiers),
                                 default=default)
    ss["question"] = view.question
    ss["athlete"] = view.athlete
    ss["scope"] = view.scope
    ss["tier"] = view.tier
    ss["budget"] = view.budget if view.budget is not None else 200
    ss["cost_mode"] = view.cost_mode
    ss["link_digest"] = view.policy_digest if st.query_params.get("q") is not None else None
    ss["url_notes"] = notes


def load_policies() -> Policies:
    ss = st.session_state
    base_text = checked_in_text()
    base = policy_from_text(base_text)
    init_state(base_text, base)
    draft_text = ss["policy_yaml"]
    check = pg.check_draft(draft_text, policy_from_text)
    if check.ok:
        ss["working_yaml"] = draft_text
    try:
        working = policy_from_text(ss["working_yaml"])
    except PolicyError:  # the checked-in file changed under us and is now invalid
        ss["working_yaml"] = base_text
        working = base
    return Policies(checked_in=base, checked_in_text=base_text, working=working, draft=check, draft_text=draft_text)


# --- callbacks (they run before the widgets of the next run exist) -----------------------------


def use_example(question: str) -> None:
    st.session_state["question"] = question


def reset_draft() -> None:
    st.session_state["policy_yaml"] = checked_in_text()
    st.session_state.pop("import_status", None)


def on_policy_upload() -> None:
    upload = st.session_state.get("policy_upload")
    if upload is None:
        return
    data = upload.getvalue()
    try:
        text, policy = pg.import_policy_bytes(data, upload.name)
    except PolicyError as e:
        readable = data.decode("utf-8", errors="replace") if len(data) <= pg.MAX_IMPORT_BYTES else ""
        st.session_state["import_status"] = ("error", f"{upload.name} was not imported; the draft is unchanged.",
                                             pg.problems_of(e, readable))
        return
    st.session_state["policy_yaml"] = text
    st.session_state["import_status"] = ("ok", f"Imported {upload.name} (digest {policy.digest}) as the draft.", [])


def edit_setting(path: tuple[str | int, ...], widget_key: str) -> None:
    """A form control changed: write its value into the draft YAML at `path`."""
    data = pg.draft_data(st.session_state["policy_yaml"])
    if data is None:
        return
    st.session_state["policy_yaml"] = pg.draft_to_yaml(pg.with_setting(data, path, st.session_state[widget_key]))


def edit_table(path: tuple[str | int, ...], widget_key: str, base_rows: list[dict[str, Any]],
               rebuild: Callable[[list[dict[str, Any]]], Any]) -> None:
    data = pg.draft_data(st.session_state["policy_yaml"])
    if data is None:
        return
    rows = pg.apply_table_edits(base_rows, st.session_state[widget_key])
    st.session_state["policy_yaml"] = pg.draft_to_yaml(pg.with_setting(data, path, rebuild(rows)))


def add_term(intent: str, key: str) -> None:
    ss = st.session_state
    term = str(ss.get(f"{key}.term") or "").strip()
    data = pg.draft_data(ss["policy_yaml"])
    if not term or data is None:
        return
    language = ss.get(f"{key}.language") or "en"
    weight = float(ss.get(f"{key}.weight") or 1.0)
    terms = dict(_mapping(_mapping(_mapping(data.get("vocabulary")).get(intent)).get(language)))
    terms[term] = weight
    ss["policy_yaml"] = pg.draft_to_yaml(pg.with_setting(data, ("vocabulary", intent, language), terms))
    ss[f"{key}.term"] = ""


def open_trace_inputs(inputs: Mapping[str, Any], tiers: list[str]) -> None:
    ss = st.session_state
    ss["question"] = str(inputs.get("question", ""))
    if upstream().has(str(inputs.get("athlete"))):
        ss["athlete"] = str(inputs["athlete"])
    if inputs.get("scope") in SCOPE_REQUESTS:
        ss["scope"] = inputs["scope"]
    tier = inputs.get("tier")
    if isinstance(inputs.get("budget"), int):
        ss["tier"], ss["budget"] = "custom", inputs["budget"]
    elif tier in tiers:
        ss["tier"] = tier
    if inputs.get("cost_mode") in COST_MODES:
        ss["cost_mode"] = inputs["cost_mode"]


# --- the page ----------------------------------------------------------------------------------


def render_inputs(policies: Policies) -> pg.ViewState:
    ss = st.session_state
    if "budget" in ss:  # keep the custom budget while its input is hidden (unrendered widgets lose state)
        ss["budget"] = ss["budget"]
    st.text_input("The athlete's question", key="question", max_chars=MAX_QUESTION_CHARS,
                  placeholder="Type what the athlete asked, e.g. " + pg.PAIN_QUESTION)
    st.caption("Try an example:")
    with st.container(horizontal=True, gap="small"):
        for i, q in enumerate(pg.EXAMPLE_QUESTIONS):
            st.button(q, key=f"example_{i}", on_click=use_example, args=(q,), type="tertiary")
    tiers = [*policies.working.tiers, "custom"]
    if ss.get("tier") not in tiers:
        ss["tier"] = tiers[0]
    athletes = upstream().athletes()
    c1, c2, c3, c4 = st.columns([0.9, 1.5, 1.5, 1.0])
    with c1:
        athlete = st.selectbox("Sample athlete", athletes, key="athlete",
                               help="Fixture data from sample_athletes/: four services per athlete.")
        st.caption(upstream().describe(athlete))
    with c2:
        scope = st.segmented_control("Time horizon (scope)", list(SCOPE_REQUESTS), key="scope", required=True,
                                     help="auto infers the horizon from words in the question, like 'today' or "
                                          "'next week'; the others force one.")
    with c3:
        tier = st.segmented_control(
            "Tier (token budget for secondary context)", tiers, key="tier", required=True,
            format_func=lambda t: f"{t} · {policies.working.tiers[t]}" if t in policies.working.tiers else t)
        budget = None
        if tier == "custom":
            budget = int(st.number_input("Custom budget (tokens)", min_value=0, max_value=pg.MAX_URL_BUDGET,
                                         step=10, key="budget"))
    with c4:
        cost_mode = st.segmented_control("Fragment costs", list(COST_MODES), key="cost_mode", required=True,
                                         help="Which cost the budget spends: hand-assigned (the registry) or "
                                              "measured (the rendered line counted with tiktoken). The table "
                                              "shows both.")
    return pg.ViewState(question=ss.get("question") or "", athlete=athlete, scope=scope or "auto",
                        tier=tier or tiers[0], budget=budget, cost_mode=cost_mode or "hand",
                        policy_digest=policies.working.digest)


def render_sidebar(policies: Policies) -> pg.ModelConfig | None:
    ss = st.session_state
    with st.sidebar:
        st.header("Policy in use")
        working = policies.working
        if working.digest == policies.checked_in.digest:
            st.markdown(f"Checked-in policy `{CHECKED_IN}` · digest `{working.digest}`")
        else:
            st.markdown(f"**Your draft** · digest `{working.digest}`  \n(checked-in is `{policies.checked_in.digest}`)")
        if not policies.draft.ok:
            st.error(f"The draft has {len(policies.draft.problems)} problem(s); the decision uses the last valid "
                     "version. See the Policy editor tab.")
        link = ss.get("link_digest")
        if link and link != working.digest:
            st.warning(f"This link was shared with policy `{link}`, but this page uses `{working.digest}`. "
                       "The decision may differ from what the sender saw; import their exported YAML to match.")
        for note in ss.get("url_notes") or []:
            st.info(f"Link: {note}")
        st.caption("Share this view: copy the address bar. It holds the question, athlete, scope, tier, cost "
                   "mode and the policy digest.")

        st.header("Model (optional)")
        st.text_input("OpenAI API key for this session", type="password", key="typed_api_key",
                      help="Kept in this browser session only; never written anywhere.")
        config = pg.resolve_model_config(os.environ, secrets_settings(), ss.get("typed_api_key"))
        if config is None:
            st.caption("No model configured: unsure routing falls back to keyword scores, and reply generation "
                       "is off. Everything else works.")
        else:
            st.caption(f"Model `{config.model}` at {config.base_url or 'api.openai.com'} (from {config.source}).")
            st.checkbox("Ask the model when the rules are unsure", value=True, key="use_model")
    return config


def write_query_params(view: pg.ViewState) -> None:
    wanted = pg.encode_view(view)
    current = {k: st.query_params.get(k) for k in pg.URL_KEYS if st.query_params.get(k) is not None}
    if current != wanted:
        st.query_params.from_dict(wanted)


def tab_decision(ctx: Context) -> None:
    d = ctx.decision
    if d is None:
        st.info(ctx.decision_error or "Type a question above to see the decision.")
        return
    i = d.intent
    st.markdown(pg.routing_headline(d))
    m = st.columns(5)
    m[0].metric("Decided by", i["source"])
    m[1].metric("Fragments sent", f"{len(d.selected)} of {len(d.fragments)}")
    m[2].metric("Coverage", f"{d.coverage:.0%}", help="Share of requested fragments the services supplied.")
    m[3].metric("Confidence", f"{d.confidence:.0%}",
                help="Coverage × routing factor: 1.0 rules, 0.85 model, 0.6 fallback, 0.4 nothing matched.")
    m[4].metric("Prompt tokens", d.tokens["prompt"], help="The naive prompt (whole bundle as JSON) would be "
                f"{d.tokens['naive']} tokens.", delta=f"{d.tokens['saved_pct']:g}% smaller than naive",
                delta_color="off", delta_arrow="off")
    if d.warnings:
        for w in d.warnings:
            st.warning(f"**Audit warning:** {w}", icon=":material/warning:")
    else:
        st.success("Audit: no warnings for this decision.", icon=":material/verified:")

    st.subheader("1 · Routing: which intent is this question?")
    left, right = st.columns([3, 2])
    with left:
        st.altair_chart(pg.routing_chart(d), width="stretch")
        st.caption(f"Confident only if the top score ≥ threshold {i['threshold']:g} (red line) and it leads the "
                   f"runner-up by ≥ margin {i['required_margin']:g} (a runner-up inside the orange band means unsure).")
    with right:
        st.markdown(f"**Why:** {i['reason']}")
        if i["source"] != "rules" and len(i["contenders"]) > 1:
            st.markdown(f"**Contenders:** {', '.join(i['contenders'])} — routing is uncertain, so the selection "
                        "takes every contender's primary fragments and keeps what a contender needs even if "
                        "another excludes it.")
        elif i["source"] != "rules":
            st.markdown(f"**Contenders:** only {i['contenders'][0]} — no other intent is within the margin.")
        if i.get("model"):
            model = i["model"]
            st.markdown(f"**Model answer:** `{model.get('raw')}` in {model.get('latency_ms')} ms")
        if i.get("matched_nothing"):
            st.info(f"No vocabulary matched. Scripts seen in the question: {', '.join(i.get('scripts') or []) or 'none'}. "
                    "Add terms in this language to the vocabulary (Policy editor) to route it by rules.")
        terms = pg.matched_terms_frame(d)
        if not terms.empty:
            st.dataframe(terms, hide_index=True, width="stretch",
                         column_config={"weight": st.column_config.NumberColumn(format="%.2g")})
        scope = d.scope
        if scope["effective"]:
            how = (f"inferred from {', '.join(repr(w) for w in scope['inferred_from'])}" if scope["inferred_from"]
                   else "chosen above")
            st.markdown(f"**Time horizon:** {scope['effective']} ({how})")
        else:
            st.markdown("**Time horizon:** none — no scope words in the question, so no scope modifiers apply")

    st.subheader("2 · Selection: what the model sees, and why")
    st.markdown(f"Tier **{d.tier}**: {d.budget}-token budget for secondary context, "
                f"{d.tokens.get('budget_spent', 0)} spent · costs counted **{d.tokens['cost_mode']}**. "
                "Primary context is never cut by the budget.")
    sent, held = st.columns(2)
    with sent, st.container(key="sent_fragments"):
        st.markdown(f"**:green[Sent to the model ({len(d.selected)})]**, in prompt order")
        st.markdown("\n".join(f"- **{f.name}** — {pg.explain_fragment(f, d)}"
                              for f in d.fragments if f.status == "selected") or "_nothing_")
    with held, st.container(key="withheld_fragments"):
        withheld = [f for f in d.fragments if f.status == "withheld"]
        st.markdown(f"**:red[Withheld ({len(withheld)})]**")
        st.markdown("\n".join(f"- **{f.name}** — {pg.explain_fragment(f, d)}" for f in withheld) or "_nothing_")

    st.markdown("**All eleven fragments** — status, role, reasons, both costs and the line each one renders")
    frame = pg.fragments_frame(d)
    st.dataframe(
        frame.style.apply(_status_colors, axis=1), hide_index=True, width="stretch", key="fragments_table",
        height=35 * (len(frame) + 1) + 12,
        column_order=["#", "fragment", "status", "role", "reasons", "cost", "hand", "measured", "line", "why",
                      "service"],
        column_config={
            "#": st.column_config.NumberColumn("#", width=30, help="Prompt order"),
            "reasons": st.column_config.TextColumn("reasons", width="medium",
                                                   help="Reason codes; the sentences above give details"),
            "cost": st.column_config.NumberColumn("cost", help=f"Cost the budget used ({d.tokens['cost_mode']})"),
            "hand": st.column_config.NumberColumn("hand", help="Hand-assigned cost from the fragment registry"),
            "measured": st.column_config.NumberColumn("measured", help="The rendered line counted with tiktoken"),
            "line": st.column_config.TextColumn("line sent to the model", width="large"),
            "why": st.column_config.TextColumn("why", width="large"),
        },
    )
    with st.expander("Services for this athlete"):
        st.markdown("\n".join(f"- {line}" for line in pg.service_status_lines(d)))


def _status_colors(row: pd.Series) -> list[str]:
    color = "background-color: rgba(46, 160, 67, 0.12)" if str(row["status"]).endswith("selected") \
        else "background-color: rgba(128, 128, 128, 0.10)"
    return [color] * len(row)


def tab_prompt(ctx: Context) -> None:
    d = ctx.decision
    if d is None:
        st.info(ctx.decision_error or "Type a question above to see the prompt.")
        return
    t = d.tokens
    m = st.columns(4)
    m[0].metric("Prompt tokens", t["prompt"])
    m[1].metric("Naive prompt tokens", t["naive"], help="Same system block plus the whole fetched bundle as JSON.")
    m[2].metric("Saved", f"{t['saved_pct']:g}%", delta=f"-{t['naive'] - t['prompt']} tokens", delta_color="inverse")
    m[3].metric("Reply limit", f"{d.max_words} words")
    st.caption(f"Counted with tiktoken ({t.get('encoding', 'cl100k_base')}, bundled offline).")
    for message in d.prompt["messages"]:
        st.markdown(f"**{message['role']}**")
        st.code(message["content"], language=None, wrap_lines=True)
    with st.expander(f"Naive prompt ({t['naive']} tokens): the whole bundle as JSON"):
        for message in d.prompt["naive_messages"]:
            st.markdown(f"**{message['role']}**")
            st.code(message["content"], language=None, wrap_lines=True)
    st.divider()
    render_reply(d, ctx.model)


def render_reply(d: Decision, config: pg.ModelConfig | None) -> None:
    st.subheader("Generate a reply (optional)")
    if config is None:
        st.button("Generate reply", key="generate", disabled=True, help=CONFIG_HELP)
        st.info(CONFIG_HELP, icon=":material/key:")
        return
    st.caption(f"Sends the prompt above to `{config.model}` at {config.base_url or 'api.openai.com'} "
               f"(configured via {config.source}).")
    ss = st.session_state
    decision_id = text_key(json.dumps(d.prompt["messages"], ensure_ascii=False))
    if st.button("Generate reply", key="generate", type="primary"):
        try:
            text = st.write_stream(pg.stream_reply(config, d.prompt["messages"]))
        except CoachctxError as e:
            st.error(f"No reply: {e}")
            return
        ss["reply"] = {"for": decision_id, "text": text if isinstance(text, str) else "".join(map(str, text))}
    elif ss.get("reply", {}).get("for") == decision_id:
        st.markdown(ss["reply"]["text"])
    reply = ss.get("reply")
    if not reply or reply.get("for") != decision_id:
        return
    report = pg.reply_report(reply["text"], d)
    c1, c2 = st.columns(2)
    c1.metric("Words", f"{report.words} / {report.max_words}",
              delta="within the limit" if report.within_limit else "over the limit",
              delta_color="normal" if report.within_limit else "inverse")
    with c2:
        if not report.clinical:
            st.markdown("Not a clinical question: no referral needed.")
        elif report.referral:
            st.success(f"Clinical question ({', '.join(report.clinical_terms)}): the reply ends with a referral — "
                       f"“{report.referral}”")
        else:
            st.error(f"Clinical question ({', '.join(report.clinical_terms)}), but the reply does not end with a "
                     "referral to a professional.")


def tab_policy(ctx: Context) -> None:
    p = ctx.policies
    st.markdown("Edit the policy here; the decision view follows every **valid** draft. An invalid draft never "
                "replaces the policy in use. Form controls rewrite the YAML (its comments are dropped).")
    form, text = st.columns([1, 1.3], gap="large")
    with text:
        st.text_area("Policy YAML (the draft)", key="policy_yaml", height=560)
        if p.draft.ok and p.draft.policy is not None:
            same = p.draft.policy.digest == p.checked_in.digest
            st.success(f"Valid · digest `{p.draft.policy.digest}`"
                       + (" · same as the checked-in policy" if same else " · the decision uses this draft"))
        else:
            st.error(f"This draft has {len(p.draft.problems)} problem(s), so the decision still uses the last valid "
                     f"policy (digest `{p.working.digest}`). Fix:")
            for problem in p.draft.problems:
                line = f" (line {problem.line})" if problem.line else ""
                st.markdown(f"- **{problem.where}**{line}: {problem.message}  \n  `{problem.path or 'document'}`")
        st.button("Reset the draft to the checked-in policy", on_click=reset_draft, key="reset_draft")
    with form:
        render_policy_form(p.draft_text)

    st.subheader("Draft vs checked-in policy")
    if p.draft.policy is None:
        st.caption("The draft does not validate; this is the raw text diff.")
        diff = pg.unified_diff(p.checked_in_text, p.draft_text)
    else:
        changes = pg.policy_changes(p.checked_in, p.draft.policy)
        if changes.empty:
            st.markdown("No differences: the draft decides exactly like the checked-in policy.")
        else:
            st.dataframe(changes, hide_index=True, width="stretch", key="policy_changes")
        diff = pg.policy_diff(p.checked_in, p.draft.policy)
    if diff:
        with st.expander("Line diff"):
            st.code(diff, language="diff")

    st.subheader("Export and import")
    ex, im = st.columns(2)
    with ex:
        st.download_button("Download policy YAML", data=pg.export_policy_yaml(p.working),
                           file_name=f"coachctx-policy-{p.working.digest}.yaml", mime="application/x-yaml",
                           on_click="ignore", key="export_policy", icon=":material/download:")
        st.caption(f"Exports the policy in use (digest `{p.working.digest}`); `coachctx check-policy FILE` accepts "
                   "it and importing it back gives the same digest.")
    with im:
        st.file_uploader(f"Import a policy YAML (at most {pg.MAX_IMPORT_BYTES // 1024} KB)", type=["yaml", "yml"],
                         key="policy_upload", on_change=on_policy_upload, max_upload_size=1)
        status = st.session_state.get("import_status")
        if status:
            kind, message, problems = status
            (st.success if kind == "ok" else st.error)(message)
            for problem in problems:
                line = f" (line {problem.line})" if problem.line else ""
                st.markdown(f"- **{problem.where}**{line}: {problem.message}")


def _mapping(value: Any) -> dict[str, Any]:
    """The form reads drafts that may be invalid: anything that is not a mapping reads as empty."""
    return value if isinstance(value, dict) else {}


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else default


def render_policy_form(draft_text: str) -> None:
    data = pg.draft_data(draft_text)
    if data is None:
        st.info("The form needs YAML that parses; fix the syntax error shown next to the text area.")
        return
    k = f"ed.{text_key(draft_text)}"  # new widgets after every draft change, seeded from the draft
    st.markdown("**Routing thresholds**")
    routing = _mapping(data.get("routing"))
    c1, c2 = st.columns(2)
    c1.number_input("Confidence threshold", min_value=0.0, step=0.5, key=f"{k}.threshold",
                    value=_number(routing.get("confident_threshold"), 1.0),
                    on_change=edit_setting, args=(("routing", "confident_threshold"), f"{k}.threshold"))
    c2.number_input("Margin over the runner-up", min_value=0.0, step=0.5, key=f"{k}.margin",
                    value=_number(routing.get("margin"), 1.0),
                    on_change=edit_setting, args=(("routing", "margin"), f"{k}.margin"))

    st.markdown("**Intent**")
    intent = st.selectbox("Intent to edit", list(INTENTS), key="ed_intent")
    spec = _mapping(_mapping(data.get("intents")).get(intent))
    for field in ("primary", "secondary", "exclude"):
        values = spec.get(field)
        current = [f for f in values if isinstance(f, str)] if isinstance(values, list) else []
        options = [*FRAGMENT_NAMES, *[f for f in current if f not in FRAGMENT_NAMES]]
        st.multiselect(f"{field}", options, default=current, key=f"{k}.{intent}.{field}",
                       on_change=edit_setting, args=(("intents", intent, field), f"{k}.{intent}.{field}"),
                       help={"primary": "Always sent when available; never cut by the budget.",
                             "secondary": "Sent in this order while the tier's budget lasts.",
                             "exclude": "Withheld when routing is certain."}[field])
    max_words = spec.get("max_words")
    st.number_input("max words in a reply", min_value=1, max_value=2000, step=10, key=f"{k}.{intent}.max_words",
                    value=max_words if isinstance(max_words, int) and 1 <= max_words <= 2000 else 200,
                    on_change=edit_setting, args=(("intents", intent, "max_words"), f"{k}.{intent}.max_words"))

    st.markdown(f"**Vocabulary of {intent}** (terms and weights; edit cells, add or delete rows)")
    vocab = pg.vocabulary_rows(data, intent)
    st.data_editor(vocab, key=f"{k}.vocab.{intent}", num_rows="dynamic", hide_index=True, width="stretch",
                   height=220, on_change=edit_table,
                   args=(("vocabulary", intent), f"{k}.vocab.{intent}", vocab.to_dict("records"),
                         pg.vocabulary_from_rows),
                   column_config={"weight": st.column_config.NumberColumn(min_value=0.0, step=0.5)})
    a1, a2, a3, a4 = st.columns([2, 1, 1, 1], vertical_alignment="bottom")
    a1.text_input("New term", key=f"add.{intent}.term", placeholder="e.g. niggle")
    a2.selectbox("Language", ["en", "es", "de", "fr", "pt", "it", "ja", "zh", "ko", "ru"], key=f"add.{intent}.language")
    a3.number_input("Weight", min_value=0.5, max_value=100.0, step=0.5, value=1.0, key=f"add.{intent}.weight")
    a4.button("Add term", key=f"add.{intent}.go", on_click=add_term, args=(intent, f"add.{intent}"))

    st.markdown("**Scope modifiers** (what a time horizon promotes, demotes or drops, and why)")
    scope = st.selectbox("Time horizon", list(SCOPES), key="ed_scope")
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


def tab_trace(ctx: Context) -> None:
    st.markdown("Upload a decision trace written by `coachctx explain QUESTION --athlete ID --trace-out FILE`. "
                "The page decides again from the trace's own data snapshot under the policy in use "
                f"(digest `{ctx.policies.working.digest}`) and highlights what changed.")
    upload = st.file_uploader("Decision trace (JSON)", type=["json"], key="trace_upload",
                              max_upload_size=max(1, MAX_TRACE_BYTES // (1024 * 1024)))
    if upload is None:
        return
    try:
        trace = parse_trace(upload.getvalue(), upload.name)
        result = replay(trace, ctx.policies.working, policy_source="playground draft")
    except (TraceError, CoachctxError) as e:
        st.error(f"Cannot reproduce this trace: {e}")
        return
    inputs = trace.inputs
    raw_policy = trace.decision.get("policy")
    recorded_digest = raw_policy.get("digest") if isinstance(raw_policy, Mapping) else None
    st.markdown(f"**Question:** {inputs.get('question')}  \n**Athlete:** {inputs.get('athlete')} · scope "
                f"{inputs.get('scope')} · tier {inputs.get('tier')} · costs {inputs.get('cost_mode', 'hand')}  \n"
                f"**Policy:** recorded `{recorded_digest}`, now `{result.decision.policy['digest']}`")
    if result.same:
        st.success("Same decision: the policy in use decides exactly as recorded.")
    else:
        st.error(f"{len(result.differences)} difference(s) between the recorded decision and the policy in use.")
        st.dataframe(pg.differences_frame(result.differences).style.apply(
            lambda row: ["background-color: rgba(214, 39, 40, 0.12)"] * len(row), axis=1),
            hide_index=True, width="stretch", key="trace_differences")
    frame = pg.trace_fragments_frame(trace.decision, result.decision)
    st.markdown("**Fragment by fragment** (changed rows highlighted)")
    st.dataframe(frame.style.apply(
        lambda row: (["background-color: rgba(214, 39, 40, 0.15)"] if row["changed"] else [""]) * len(row), axis=1),
        hide_index=True, width="stretch", key="trace_fragments", height=35 * (len(frame) + 1) + 12)
    st.button("Open this question in the playground", key="open_trace", on_click=open_trace_inputs,
              args=(dict(inputs), list(ctx.policies.working.tiers)),
              help="Copies the trace's question, athlete, scope, tier and cost mode into the inputs above. The "
                   "Decision tab then uses today's sample data for that athlete, not the trace's snapshot.")
    with st.expander("Recorded decision (JSON)"):
        st.json(dict(trace.decision), expanded=False)
    with st.expander("Decision under the policy in use (JSON)"):
        st.json(result.decision.to_json(), expanded=False)


TabRenderer = Callable[[Context], None]
# Every tab, in order. Another tab (Versions, Impact, ...) is one more entry here.
TABS: list[tuple[str, TabRenderer]] = [
    ("Decision", tab_decision),
    ("Prompt & reply", tab_prompt),
    ("Policy editor", tab_policy),
    ("Reproduce a trace", tab_trace),
]


def compute_decision(view: pg.ViewState, policies: Policies,
                     config: pg.ModelConfig | None) -> tuple[Decision | None, str | None]:
    if not view.question.strip():
        return None, "Type a question above (or click an example) to see the decision."
    routing_model = config if config is not None and st.session_state.get("use_model", True) else None
    try:
        d = decide(view.question, view.athlete, view.scope, view.tier, view.budget if view.tier == "custom" else None, view.cost_mode, policies.working,
                   policies.working.digest, routing_model, routing_model.cache_key if routing_model else ())
    except CoachctxError as e:
        return None, str(e)
    st.session_state["decision"] = d.to_json()
    return d, None


def main() -> None:
    st.set_page_config(page_title="coachctx policy playground", page_icon=":material/sprint:", layout="wide")
    st.html("<style>.st-key-policy_yaml textarea {font-family: 'Source Code Pro', monospace; "
            "font-size: 0.85rem;}</style>")
    st.title("coachctx policy playground")
    st.caption("What may the coaching assistant see about this athlete for this question — and why? "
               "Every fact below comes from the engine's Decision; no model is needed.")
    try:
        policies = load_policies()
    except PolicyError as e:
        st.error(f"The checked-in policy is invalid, so the playground cannot start:\n\n{e}")
        st.stop()
    view = render_inputs(policies)
    config = render_sidebar(policies)
    decision, error = compute_decision(view, policies, config)
    if error and view.question.strip():
        st.error(error)
    write_query_params(view)
    ctx = Context(decision=decision, decision_error=error, policies=policies, model=config, view=view)
    for (_, render), tab in zip(TABS, st.tabs([name for name, _ in TABS]), strict=True):
        with tab:
            render(ctx)


main()
