"""`explain`, `replay`, `check-policy` and `athletes`: decide for one question, reproduce a trace,
validate a policy file, list the sample athletes."""

from __future__ import annotations

import argparse
import difflib
from typing import Any, Final

from coachctx.cli.common import (
    add_policy_version_args,
    policy_for,
    print_json,
    whole_number,
)
from coachctx.engine.decision import Decision
from coachctx.engine.pipeline import COST_MODES, SCOPE_REQUESTS, select
from coachctx.engine.policy import DEFAULT_POLICY_PATH, DEFAULT_TIER, MAX_BUDGET, MAX_TERMS, load_policy
from coachctx.engine.services import FixtureUpstream, fetch_bundle
from coachctx.errors import InputError
from coachctx.model import classifier_from_env
from coachctx.reading import printable
from coachctx.tools.lint import lint_policy
from coachctx.tools.trace import json_text, make_trace, read_trace, replay, write_json_atomic


def register(sub: Any) -> None:
    p = sub.add_parser("explain", help="decide for one question about one sample athlete")
    p.add_argument("question")
    p.add_argument("--athlete", required=True)
    p.add_argument("--scope", default="auto", choices=SCOPE_REQUESTS)
    p.add_argument("--tier", default=DEFAULT_TIER)
    p.add_argument("--budget", type=whole_number(0, MAX_BUDGET), default=None,
                   help=f"custom token budget for secondary context (0 to {MAX_BUDGET})")
    p.add_argument("--policy", default=None, help=f"policy YAML (default: {DEFAULT_POLICY_PATH.name})")
    p.add_argument("--costs", default="hand", choices=COST_MODES)
    p.add_argument("--athletes-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the Decision as JSON")
    p.add_argument("--prompt", action="store_true", help="also print the prompt that would be sent")
    p.add_argument("--trace-out", default=None, help="write a decision trace (decision + bundle snapshot)")
    p.add_argument("--force", action="store_true", help="replace the --trace-out file if it exists")
    add_policy_version_args(p)

    p = sub.add_parser("replay", help="reproduce a decision trace; say what today's policy decides differently")
    p.add_argument("trace")
    p.add_argument("--policy", default=None)
    p.add_argument("--json", action="store_true")
    add_policy_version_args(p)

    p = sub.add_parser("check-policy", help="validate a policy file")
    p.add_argument("path")

    p = sub.add_parser("athletes", help="list the sample athletes")
    p.add_argument("--athletes-dir", default=None, help=argparse.SUPPRESS)


def cmd_explain(args: argparse.Namespace) -> int:
    classifier = classifier_from_env()  # a bad model setting is refused before any work
    policy, source, version = policy_for(args)
    upstream = FixtureUpstream(args.athletes_dir) if args.athletes_dir else FixtureUpstream()
    bundle = fetch_bundle(upstream, args.athlete)  # refuses an athlete the fixtures do not have
    decision = select(args.question, bundle, policy, scope=args.scope, tier=args.tier, budget=args.budget,
                      cost_mode=args.costs, classifier=classifier, policy_source=source,
                      policy_version=version)
    if args.trace_out:
        # the policy file read, the default one too (`--trace-out policy/default.yaml` replaced it with
        # a trace), and the athlete fixtures, a folder read whole: a trace among them would be an athlete
        read = [source] if version is None else []  # a stored version's source is no file
        write_json_atomic(args.trace_out, make_trace(decision, bundle, cost_mode=args.costs, budget=args.budget),
                          inputs=[*read, upstream.root], replace=args.force)
    if args.json:
        print_json(decision.to_json())
    else:
        print(render_text(decision, with_prompt=args.prompt))
        if args.trace_out:
            print(f"\ntrace written to {printable(args.trace_out)}")
    return 0


def render_text(d: Decision, *, with_prompt: bool = False) -> str:
    i = d.intent
    scores = "  ".join(f"{k} {v:g}" for k, v in sorted(i.scores.items(), key=lambda kv: -kv[1]) if v) or "none"
    scope: str = d.scope.effective or "none"
    if d.scope.inferred_from:
        scope += f" (inferred from {', '.join(repr(w) for w in d.scope.inferred_from)})"
    # the question and the details are data: a newline or an escape sequence in them must not
    # break the table or reach the terminal as a command
    lines = [
        f"question   {printable(d.question)}",
        f"athlete    {d.athlete}    scope {scope}    tier {d.tier} (budget {d.budget})",
        f"scores     {scores}",
        f"intent     {i.name} via {i.source}    contenders {', '.join(i.contenders)}",
        f"why        {printable(i.reason)}",
        "",
        f"{'fragment':<20} {'status':<9} {'role':<10} {'cost':>4}  reasons",
    ]
    for f in d.fragments:
        reasons = "; ".join(f"{r.code}: {printable(r.detail)}" for r in f.reasons) or "-"
        lines.append(f"{f.name:<20} {f.status:<9} {f.role:<10} {f.cost:>4}  {reasons}")
    lines.append("")
    for w in d.warnings:
        lines.append(f"WARNING    {printable(w)}")
    t = d.tokens
    lines.append(f"tokens     prompt {t.prompt} vs naive {t.naive} ({t.saved_pct:g}% smaller); "
                 f"costs {t.cost_mode}")
    lines.append(f"coverage   {d.coverage:g}    confidence {d.confidence:g}    policy {d.policy.digest}")
    if with_prompt:
        # the prompt holds the athlete's words: each line escaped, so no escape sequence or
        # direction override in a question reaches the terminal as a command
        lines += ["", *[f"[{m.role}]\n" + "\n".join(map(printable, m.content.split("\n"))) for m in d.prompt.messages]]
    return "\n".join(lines)


REPLAY_DIFFERS: Final = 1
"""`replay`'s exit code when today's policy decides differently, as `diff` exits 1 when files
differ: a script or CI job reproducing a reported answer can tell without reading the output.
A trace or policy that cannot be read is 2, like every refusal."""


def cmd_replay(args: argparse.Namespace) -> int:
    trace = read_trace(args.trace)
    policy, source, version = policy_for(args)
    result = replay(trace, policy, policy_source=source, policy_version=version)
    if args.json:
        print_json({"same": result.same, "differences": result.differences,
                    "recorded_policy": trace.decision.get("policy"), "decision": result.decision.to_json()})
        return REPLAY_DIFFERS if result.differences else 0
    recorded = trace.decision.get("policy", {}) if isinstance(trace.decision.get("policy"), dict) else {}
    # what the trace recorded is data from a file: shown escaped and cut, never as written
    print(f"trace      {printable(args.trace)}: {trace.inputs['question']!r} about "
          f"{_recorded(trace.inputs.get('athlete'))}")
    print(f"policy     recorded {_recorded(recorded.get('digest'))} ({_recorded(recorded.get('source'))}), "
          f"now {result.decision.policy.digest} ({printable(source)})")
    if result.same:
        print("result     the same decision: today's policy decides exactly as recorded")
    else:
        print(f"result     {len(result.differences)} difference(s):")
        for diff in result.differences:
            print(render_difference(diff))
    return REPLAY_DIFFERS if result.differences else 0


MAX_RECORDED_CHARS = 200


def _recorded(value: Any) -> str:
    """A value read from a trace, on one printable line of at most MAX_RECORDED_CHARS."""
    text = printable(value if isinstance(value, str) else json_text(value, indent=None))
    return text if len(text) <= MAX_RECORDED_CHARS else text[:MAX_RECORDED_CHARS - 3] + "..."


def render_difference(diff: dict[str, Any]) -> str:
    """One line per difference. Text spanning lines (a prompt message) shows only its changed
    lines; a long line shows only the stretch around where it first differs."""
    before, after = diff["recorded"], diff["now"]
    if isinstance(before, str) and isinstance(after, str):
        if "\n" in before + after:
            return "\n".join([f"  {diff['field']}: differs", *map(printable, _changed_lines(before, after))])
        at = _first_difference(before, after)
        before, after = _around(before, at), _around(after, at)
    return printable(f"  {diff['field']}: recorded {_json_cut(before)} -> now {_json_cut(after)}")


def _json_cut(value: Any) -> str:
    """A value of a difference as JSON on one line, cut past MAX_RECORDED_CHARS: a recorded list
    of a million entries is one short line."""
    text = json_text(value, indent=None)
    return text if len(text) <= MAX_RECORDED_CHARS else f"{text[:MAX_RECORDED_CHARS]}… ({len(text):,} characters)"


DIFF_CONTEXT = 60
"""Characters shown either side of where two long texts first differ."""


def _changed_lines(before: str, after: str) -> list[str]:
    old_lines, new_lines = before.splitlines(), after.splitlines()
    out = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        olds, news = old_lines[i1:i2], new_lines[j1:j2]
        for k in range(max(len(olds), len(news))):
            old, new = (olds[k] if k < len(olds) else None), (news[k] if k < len(news) else None)
            at = _first_difference(old or "", new or "")
            out += [f"    - {_around(old, at)}"] if old is not None else []
            out += [f"    + {_around(new, at)}"] if new is not None else []
    return out


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _around(text: str, at: int) -> str:
    if len(text) <= 2 * DIFF_CONTEXT:
        return text
    start = max(min(at, len(text)) - DIFF_CONTEXT, 0)
    end = start + 2 * DIFF_CONTEXT
    return f"{'…' if start else ''}{text[start:end]}{'…' if end < len(text) else ''}"


def cmd_check_policy(args: argparse.Namespace) -> int:
    policy = load_policy(args.path)
    findings = lint_policy(policy)
    # a lint error is a rule that can never act as written (exit 1); a warning is advice (exit 0)
    failed = sum(f.severity == "error" for f in findings)
    vocabulary = sum(len(t) for v in policy.vocabulary.values() for t in v.values())
    # the limit counts every list a question is matched against: clinical, scope and fragment terms too
    matched = sum(len(list(terms)) for _, by_language in policy.term_lists() for terms in by_language.values())
    print(f"{printable(args.path)}: {'ok' if not failed else f'valid, but {failed} lint error(s)'} "
          f"(digest {policy.digest}; {len(policy.intents)} intents, {vocabulary:,} vocabulary terms, "
          f"{matched:,} of at most {MAX_TERMS:,} terms in all)")
    for finding in findings:
        print(f"{finding.severity}: {finding}")
    return 1 if failed else 0


def cmd_athletes(args: argparse.Namespace) -> int:
    upstream = FixtureUpstream(args.athletes_dir) if args.athletes_dir else FixtureUpstream()
    # every fixture read before a line is printed: a broken one is the only output, not a half list
    lines = [f"{athlete:<8} {upstream.describe(athlete)}" for athlete in upstream.athletes()]
    if not lines:
        raise InputError(f"no athletes in {printable(str(upstream.root))}: an athlete is a fixture file "
                         "<athlete>.json there (conditions.json holds the cities)")
    print("\n".join(lines))
    return 0


COMMANDS: Final = {"explain": cmd_explain, "replay": cmd_replay, "check-policy": cmd_check_policy,
                   "athletes": cmd_athletes}
