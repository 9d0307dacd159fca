"""The Versions tab: save the draft, labels and revert, history, compare two policies."""

from __future__ import annotations

import os

import streamlit as st

from coachctx import playground as pg
from coachctx.errors import CoachctxError, PolicyError
from coachctx.playground.ui.cache import HISTORY_LIMIT, lint_of, policy_from_text
from coachctx.playground.ui.callbacks import NO_LABEL, load_into_draft, move_label, save_draft, undo_load
from coachctx.playground.ui.choices import (
    CHECKED_IN_CHOICE,
    DRAFT_CHOICE,
    choice_options,
    choice_title,
    default_index,
    resolve_choice,
)
from coachctx.playground.ui.state import Context, store_display
from coachctx.tools.lint import errors
from coachctx.tools.policy_diff import diff_policies
from coachctx.tools.store import MAX_AUTHOR_CHARS, MAX_MESSAGE_CHARS, STORE_ENV


def render_versions_status(ctx: Context) -> None:
    status = st.session_state.get("versions_status")
    if not status:
        return
    kind, message = status["kind"], status["message"]
    if kind == "ok":
        st.success(message, icon=":material/check_circle:")
        use = status.get("use")
        if isinstance(use, int) and ctx.origin.version != str(use):
            st.button(f"Use version {use} here", key="use_moved", on_click=load_into_draft, args=(ctx.store.url, use),
                      icon=":material/input:", help=f"The page decides with your draft; this makes version {use} "
                                                   "the draft (your current draft is kept for one undo).")
    elif kind != "stale":
        st.error(message, icon=":material/error:")
    else:
        head_version = ctx.store.version(status["head"]) if isinstance(status.get("head"), int) else None
        if status.get("base") is None or head_version is None:
            why = f"{status.get('label')} already points at another version"
        else:
            who = head_version.author
            you = (st.session_state.get("author") or "").strip()
            saver = f"you ({who}) saved" if you and you == who else f"{who} saved"
            why = (f"{saver} version {head_version.number} on {status.get('label')} at "
                   f"{head_version.created_at:%H:%M} UTC ({head_version.created_at:%Y-%m-%d}), after the version "
                   f"{status.get('base')} your draft is based on")
        st.error(f"**Not saved — {why}.** {message}.  \n**Nothing is lost:** your draft is "
                 "unchanged on this page, and the newer version stays where it is. To keep your work as it is, save "
                 f"it with “{NO_LABEL}” (it becomes a version of its own); to build on the newer one, compare below, "
                 "use it here and redo your change.", icon=":material/group:")
        head, base = status.get("head"), status.get("base")
        theirs = ctx.store.version(head) if isinstance(head, int) else None
        mine = ctx.store.version(base) if isinstance(base, int) else None
        if theirs is not None and mine is not None:
            try:
                changes = diff_policies(policy_from_text(mine.yaml), policy_from_text(theirs.yaml))
            except PolicyError:
                return
            with st.expander(f"What version {theirs.number} ({theirs.author}) changed since your version "
                             f"{mine.number}", expanded=True):
                st.markdown(pg.diff_markdown(changes, f"version {mine.number}", f"version {theirs.number}"))


def tab_versions(ctx: Context) -> None:
    sv, ss = ctx.store, st.session_state
    where = "from `$COACHCTX_STORE`" if os.environ.get(STORE_ENV, "").strip() else \
        f"the default; set `{STORE_ENV}` to a SQLAlchemy URL (or a SQLite file) that several app instances share"
    st.markdown(f"**Policy store:** `{store_display(sv.url)}` ({where}).")
    if sv.store is None:
        st.error(f"The policy store cannot be used: {sv.error}  \nEverything else on this page works without it; "
                 "versions, labels and reverts need it.", icon=":material/database:")
        return
    base = ss.get("draft_base")
    st.markdown(f"**The decision uses** {ctx.origin.description} (fingerprint `{ctx.policies.working.digest}`)."
                + (f" Saving builds on version {base}." if base is not None else
                   " The draft is not based on a stored version yet."))
    live = sv.label_map.get("live")
    if live is not None and ctx.origin.version != str(live.version):
        c1, c2 = st.columns([3, 1], vertical_alignment="center")
        c1.caption(f"`live` (what serves athletes) points at version {live.version}; the page decides with "
                   f"{ctx.origin.description}.")
        c2.button(f"Use version {live.version} (live) here", key="use_live", on_click=load_into_draft,
                  args=(sv.url, live.version), icon=":material/input:")
    render_versions_status(ctx)
    st.columns([1, 2])[0].text_input("Your name (recorded with every save and label move)", key="author",
                                     max_chars=MAX_AUTHOR_CHARS)

    left, right = st.columns(2, gap="large")
    with left:
        render_save(ctx)
    with right:
        render_labels(ctx)

    st.subheader("History")
    if not sv.versions:
        st.info("No versions yet. Save the draft above to start the history (the checked-in policy is a good "
                "version 1).")
    else:
        st.dataframe(pg.history_frame(sv.versions, sv.label_map), hide_index=True, width="stretch",
                     key="history_table", column_config={"message": st.column_config.TextColumn(width="large")})
        if len(sv.versions) >= HISTORY_LIMIT:
            st.caption(f"The newest {HISTORY_LIMIT} versions; `coachctx policy history` lists them all.")
        numbers = [v.number for v in sv.versions]
        c1, c2, c3 = st.columns([3, 1.2, 1.5], vertical_alignment="bottom")
        chosen = c1.selectbox("Decide with a stored version", numbers, key="load_ref",
                              index=default_index(numbers, base),
                              format_func=lambda n: choice_title(f"v{n}", ctx))
        c2.button("Use this version here", key="load_go", on_click=load_into_draft, args=(sv.url, chosen),
                  help="Makes this version your draft: the page decides with it, and saving builds on it.")
        if ss.get("draft_undo"):
            c3.button("Undo: restore the previous draft", key="undo_load", on_click=undo_load)

    st.subheader("Compare two policies")
    render_compare(ctx)


def render_save(ctx: Context) -> None:
    sv, ss = ctx.store, st.session_state
    st.subheader("Save the draft as a version")
    st.text_input("What changed and why", key="save_message", max_chars=MAX_MESSAGE_CHARS,
                  placeholder="e.g. training may see recovery readiness: sleep matters for intensity")
    labels = list(dict.fromkeys(["live", "draft", *sv.label_map]))
    options = [NO_LABEL, *labels]
    base = ss.get("draft_base")
    label = st.selectbox("Then point this label at it", options, key="save_label",
                         index=default_index(options, pg.default_save_label(sv.label_map, base), NO_LABEL),
                         help="live: what serves athletes; draft: work in progress. A label only moves if it "
                              "still points at the version your draft is based on, so nobody's save is "
                              "overwritten.")
    head = sv.label_map[label].version if label in sv.label_map else None
    if label != NO_LABEL:
        st.caption(f"{label} now points at version {head}." if head is not None else
                   f"{label} does not exist yet: this save creates it.")
    if head is not None and head != base:
        st.warning(f"{label} points at version {head}, but your draft is based on "
                   f"{f'version {base}' if base is not None else 'no stored version'}: this save would be refused. "
                   f"Load version {head} and redo your change, or save with “{NO_LABEL}”.",
                   icon=":material/call_split:")
    draft = ctx.policies.draft
    if draft.policy is not None:
        found = errors(lint_of(draft.policy))
        if found:
            st.caption(f":material/warning: The draft has {len(found)} lint error(s) (see the Policy editor); "
                       "it can still be saved.")
    st.button("Save as a new version", key="save_version", type="primary", on_click=save_draft, args=(sv.url,),
              disabled=not draft.ok, icon=":material/save:",
              help=None if draft.ok else "The draft has problems (Policy editor tab); only a valid draft is saved.")
    if not draft.ok:
        st.caption("Only a valid draft can be saved; fix the problems shown in the Policy editor.")


def render_labels(ctx: Context) -> None:
    sv = ctx.store
    st.subheader("Labels and revert")
    if not sv.label_map:
        st.info("No labels yet: save a version with the label live (what serves athletes) or draft.")
        return
    digests = {v.number: v.digest for v in sv.versions}
    st.dataframe(pg.labels_frame(sv.label_map, digests), hide_index=True, width="stretch", key="labels_table")
    names = list(sv.label_map)
    label = st.selectbox("Label", names, key="move_label", index=default_index(names, "live"))
    head = sv.label_map[label].version
    assert sv.store is not None
    moves = sv.store.label_log(label)
    previous = pg.previous_version(moves)
    if previous is not None:
        last = moves[0]
        st.button(f"Revert {label} to version {previous}", key="revert_go", icon=":material/undo:",
                  on_click=move_label, args=(sv.url, label, head, None, previous, "reverted"),
                  help=f"Undo {label}'s last move: {pg.describe_move(last)}. No version is deleted; the revert "
                       "is logged.")
        st.caption(f"Revert undoes the last move: {pg.describe_move(last)}.")
    else:
        st.caption(f"{label} has not moved since it was created, so there is nothing to revert.")
    numbers = [v.number for v in sv.versions]
    widget_key = f"move_to.{label}.{head}"  # a fresh choice whenever the label moves
    target = st.selectbox(f"Or point {label} at any version", numbers, key=widget_key,
                          index=default_index(numbers, head), format_func=lambda n: choice_title(f"v{n}", ctx))
    st.button(f"Point {label} at version {target}", key="move_go", on_click=move_label,
              args=(sv.url, label, head, widget_key), disabled=target == head, icon=":material/label:",
              help=f"Moves the label only: what {label} serves changes; the page keeps deciding with your draft.")
    with st.expander(f"Every move of {label}"):
        st.dataframe(pg.label_moves_frame(moves), hide_index=True, width="stretch", key="label_moves")


def render_compare(ctx: Context) -> None:
    sv, ss = ctx.store, st.session_state
    options = choice_options(sv, labels=False)
    base = ss.get("draft_base")
    live = sv.label_map.get("live")
    c1, c2 = st.columns(2)
    a = c1.selectbox("From", options, key="diff_a", format_func=lambda c: choice_title(c, ctx),
                     index=default_index(options, f"v{base}" if base is not None else None,
                                         f"v{live.version}" if live else None, CHECKED_IN_CHOICE))
    b = c2.selectbox("To", options, key="diff_b", format_func=lambda c: choice_title(c, ctx),
                     index=default_index(options, DRAFT_CHOICE))
    try:
        (pa, na), (pb, nb) = resolve_choice(a, ctx), resolve_choice(b, ctx)
    except CoachctxError as e:
        st.error(f"Cannot compare: {e}")
        return
    changes = diff_policies(pa, pb)
    with st.container(key="version_diff"):
        st.markdown(pg.diff_markdown(changes, na, nb))
    if not changes.same:
        with st.expander("Line diff (canonical YAML)"):
            st.code(pg.yaml_diff(pa, pb, before_name=na, after_name=nb), language="diff")
