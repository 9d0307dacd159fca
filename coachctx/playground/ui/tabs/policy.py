"""The Policy editor tab: the draft's YAML with its problems and lint, the diff, export and import."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from coachctx import playground as pg
from coachctx.engine.policy import Policy
from coachctx.errors import PolicyError
from coachctx.playground.ui.cache import lint_of, policy_from_text, upload_cap
from coachctx.playground.ui.callbacks import on_policy_upload, reset_draft
from coachctx.playground.ui.state import Context
from coachctx.playground.ui.tabs.policy_form import render_policy_form
from coachctx.tools.lint import errors
from coachctx.tools.policy_diff import diff_policies

# Line numbers beside the YAML (a text area has none): a gutter kept in step with the text's
# lines and scrolling, so the line a problem names can be found. The page sets it up once, outside
# the tabs (a script inside a tab that is left before it renders would never run).
LINE_NUMBERS = """<script>
if (!window.coachctxLineNumbers) {
  window.coachctxLineNumbers = true;
  const sync = () => {
    const area = document.querySelector(".st-key-policy_yaml textarea");
    if (!area) return;
    const box = area.parentElement;
    let gutter = box.querySelector(":scope > .coachctx-gutter");
    if (!gutter) {
      gutter = document.createElement("div");
      gutter.className = "coachctx-gutter";
      gutter.setAttribute("aria-hidden", "true");
      box.style.position = "relative";
      box.insertBefore(gutter, area);
      area.addEventListener("scroll", () => { gutter.scrollTop = area.scrollTop; });
    }
    const style = getComputedStyle(area);
    for (const p of ["fontFamily", "fontSize", "lineHeight", "paddingTop", "paddingBottom"]) gutter.style[p] = style[p];
    const lines = String(area.value.split("\\n").length);
    if (gutter.dataset.lines !== lines) {
      gutter.textContent = Array.from({length: Number(lines)}, (_, i) => i + 1).join("\\n");
      gutter.dataset.lines = lines;
    }
    gutter.scrollTop = area.scrollTop;
  };
  setInterval(sync, 250);
  document.addEventListener("input", sync, true);
}
</script>"""


def tab_policy(ctx: Context) -> None:
    st.markdown("Edit the policy here; the decision view follows every **valid** draft. An invalid draft never "
                "replaces the policy in use. The form changes only the lines it edits: the YAML's comments stay.")
    form, text = st.columns([1, 1.3], gap="large")
    with text:
        render_editor(ctx)
    with form:
        render_policy_form(ctx.policies.draft_text)
    render_draft_diff(ctx)
    render_export_import(ctx)


def render_editor(ctx: Context) -> None:
    """The draft's YAML with line numbers, whether it is valid (and where not), and its lint."""
    p = ctx.policies
    st.text_area("Policy YAML (the draft)", key="policy_yaml", height=560)
    if p.draft.ok and p.draft.policy is not None:
        st.success(f"Valid · fingerprint `{p.draft.policy.digest}` · the decision uses it: {ctx.origin.description}")
    else:
        st.error(f"This draft has {len(p.draft.problems)} problem(s), so the decision still uses the last valid "
                 f"policy (fingerprint `{p.working.digest}`). Fix:")
        render_problems(p.draft.problems, p.draft_text)
    render_lint(p.draft.policy)
    st.button("Reset the draft to the checked-in policy", on_click=reset_draft, key="reset_draft")


def render_draft_diff(ctx: Context) -> None:
    """What the draft changes against the version it came from (or the checked-in policy)."""
    p = ctx.policies
    reference, reference_text, reference_name = p.checked_in, p.checked_in_text, "the checked-in policy"
    base = st.session_state.get("draft_base")
    loaded = ctx.store.version(base) if base is not None else None
    if loaded is not None:
        try:
            reference, reference_text = policy_from_text(loaded.yaml), loaded.yaml
            reference_name = f"version {loaded.number}"
        except PolicyError:
            pass  # a version today's code no longer accepts: compare with the checked-in file instead
    st.subheader(f"Draft vs {reference_name}")
    st.caption("What the draft changes, per intent, vocabulary, time horizon and threshold. Compare any two "
               "versions in the Versions tab.")
    if p.draft.policy is None:
        st.caption("The draft does not validate; this is the raw text diff.")
        diff = pg.unified_diff(reference_text, p.draft_text, before_name=reference_name)
    else:
        changes = diff_policies(reference, p.draft.policy)
        if changes.same:
            st.markdown(f"No differences: the draft decides exactly like {reference_name}.")
        else:
            st.markdown(pg.diff_markdown(changes, reference_name, "the draft"))
            with st.expander("As a table, with each change's place in the YAML"):
                st.dataframe(pg.diff_frame(changes), hide_index=True, width="stretch", key="policy_changes")
        diff = pg.yaml_diff(reference, p.draft.policy, before_name=reference_name)
    if diff:
        with st.expander("Line diff"):
            st.code(diff, language="diff")


def render_export_import(ctx: Context) -> None:
    p = ctx.policies
    st.subheader("Export and import")
    ex, im = st.columns(2)
    with ex:
        st.download_button("Download policy YAML", data=pg.export_policy_yaml(p.working, st.session_state["working_yaml"]),
                           file_name=f"coachctx-policy-{p.working.digest}.yaml", mime="application/x-yaml",
                           on_click="ignore", key="export_policy", icon=":material/download:")
        st.caption(f"Exports the policy in use (fingerprint `{p.working.digest}`) as written, comments included; "
                   "`coachctx check-policy FILE` accepts it and importing it back gives the same fingerprint.")
    with im:
        st.file_uploader(f"Import a policy (.yaml, at most {pg.human_size(pg.MAX_IMPORT_BYTES)})",
                         type=["yaml", "yml"], key="policy_upload", on_change=on_policy_upload,
                         max_upload_size=upload_cap(pg.MAX_IMPORT_BYTES))
        status = st.session_state.get("import_status")
        if status:
            kind, message, problems = status
            (st.success if kind == "ok" else st.error)(message)
            render_problems(problems, st.session_state.get("import_text", ""))


def render_problems(problems: Sequence[pg.Problem], text: str) -> None:
    """Each problem once: where (a line, or a place in the policy and its line), what, and the
    lines around it with their numbers."""
    for problem in problems:
        where = problem.where if problem.where.startswith("line ") or problem.line is None else \
            f"{problem.where} (line {problem.line})"
        st.markdown(f"- **{where}**: {problem.message}" + (f"  \n  `{problem.path}`" if problem.path and
                                                           not problem.path.startswith("line ") else ""))
        snippet = pg.line_snippet(text, problem.line) if problem.line else ""
        if snippet:
            st.code(snippet, language=None)


def render_lint(policy: Policy | None) -> None:
    """Lint findings for a valid draft, beside the editor: errors (the policy works against
    itself) in red, warnings (a gap worth a look) in amber."""
    with st.container(key="lint"):
        if policy is None:
            st.caption("Lint runs once the draft is valid.")
            return
        findings = lint_of(policy)
        found_errors = errors(findings)
        warnings = [f for f in findings if f.severity != "error"]
        if not findings:
            st.caption(":material/check: Lint: no findings — no conflicting excludes, shared terms, unreachable "
                       "fragments or weak vocabularies.")
            return
        st.markdown(f"**Lint:** {len(found_errors)} error(s), {len(warnings)} warning(s) — the draft is valid and "
                    "usable; these say where it may work against itself.")
        for f in found_errors:
            st.error(f"**Error · {f.code}** at `{f.path}`: {f.message}", icon=":material/error:")
        for f in warnings:
            st.warning(f"**Warning · {f.code}** at `{f.path}`: {f.message}", icon=":material/warning:")
