"""The Prompt & reply tab: the prompt that would be sent, and an optional streamed reply."""

from __future__ import annotations

import json
from collections.abc import Iterator

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.decision import Decision
from coachctx.engine.policy import Policy
from coachctx.errors import CoachctxError
from coachctx.model import ModelSettings, stream_reply
from coachctx.playground.ui.cache import text_key
from coachctx.playground.ui.state import Context

CONFIG_HELP = (
    "Reply generation needs an OpenAI-compatible endpoint. Configure one of: the environment variables "
    "`OPENAI_API_KEY` (and optionally `OPENAI_BASE_URL` for another compatible server, `COACHCTX_MODEL` for "
    "the model name) before `make run`; the same keys in `.streamlit/secrets.toml`; or a key typed into "
    "the sidebar's password field for this session only. Everything else on this page works without one."
)


def tab_prompt(ctx: Context) -> None:
    d = ctx.decision
    if d is None:
        st.info(ctx.decision_error or "Type a question above to see the prompt.")
        return
    t = d.tokens
    m = st.columns(4)
    m[0].metric("Prompt tokens", t.prompt)
    m[1].metric("Everything-in prompt", t.naive, help="The naive prompt: the same system block plus the whole "
                                                         "fetched bundle as JSON, in tokens.")
    m[2].metric("Saved", f"{t.saved_pct:g}%", delta=f"-{(t.naive or 0) - t.prompt} tokens", delta_color="inverse")
    m[3].metric("Reply limit", f"{d.max_words} words")
    st.caption(f"Counted with tiktoken ({t.encoding}, bundled offline).")
    for message in d.prompt.messages:
        st.markdown(f"**{message.role}**")
        st.code(message.content, language=None, wrap_lines=True)
    with st.expander(f"Everything-in (naive) prompt ({t.naive} tokens): the whole bundle as JSON"):
        for message in d.prompt.naive_messages or ():
            st.markdown(f"**{message.role}**")
            st.code(message.content, language=None, wrap_lines=True)
    st.divider()
    render_reply(d, ctx.model, ctx.policies.working)


def render_reply(d: Decision, config: ModelSettings | None, policy: Policy) -> None:
    st.subheader("Generate a reply (optional)")
    if config is None:
        st.button("Generate reply", key="generate", disabled=True, help=CONFIG_HELP)
        st.info(CONFIG_HELP, icon=":material/key:")
        return
    st.caption(f"Sends the prompt above to `{config.model}` at {config.base_url or 'api.openai.com'} "
               f"(configured via {config.source}).")
    ss = st.session_state
    decision_id = text_key(json.dumps(d.prompt.chat(), ensure_ascii=False))
    if st.button("Generate reply", key="generate", type="primary"):
        pieces: list[str] = []
        failure: list[str] = []

        def relay() -> Iterator[str]:
            # keep what arrived: a stream that stalls or breaks part-way still shows its start
            try:
                for piece in stream_reply(config, d.prompt.chat()):
                    pieces.append(piece)
                    yield piece
            except CoachctxError as e:
                failure.append(str(e))

        st.write_stream(relay())
        ss["reply"] = {"for": decision_id, "text": "".join(pieces), "error": failure[0] if failure else None}
    elif ss.get("reply", {}).get("for") == decision_id and ss["reply"]["text"]:
        st.markdown(ss["reply"]["text"])
    reply = ss.get("reply")
    if not reply or reply.get("for") != decision_id:
        return
    if reply.get("error"):
        if not reply["text"]:
            st.error(f"No reply: {reply['error']}")
            return
        st.error(f"The reply stopped part-way, after {pg.count_words(reply['text'])} words: {reply['error']}. "
                 "What arrived is shown above; it is incomplete, so the checks below describe a partial reply. "
                 "Press Generate reply to try again.", icon=":material/signal_disconnected:")
    report = pg.reply_report(reply["text"], d, policy)
    c1, c2 = st.columns(2)
    c1.metric("Words", f"{report.words} / {report.max_words}",
              delta="within the limit" if report.within_limit else "over the limit",
              delta_color="normal" if report.within_limit else "inverse")
    with c2:
        if not report.clinical:
            st.markdown("Not a clinical question: no referral needed.")
        elif not report.referral_checked:
            st.warning(f"Clinical question ({', '.join(report.clinical_terms)}): the policy lists no referral terms "
                       "(`referral_terms`), so whether the reply ends with a referral is not checked.")
        elif report.referral:
            st.success(f"Clinical question ({', '.join(report.clinical_terms)}): the reply ends with a referral — "
                       f"“{report.referral}”")
        else:
            st.error(f"Clinical question ({', '.join(report.clinical_terms)}), but the reply does not end with a "
                     "referral to a professional.")
