"""`python -m bench.run`: run the benchmark on this machine, write bench/REPORT.md and its PNG
plots, print a summary table. Pinned to one CPU core; no model is called."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from bench import grow
from bench.chat_clinical import CHAT_CLINICAL_2, CHAT_UNCOVERED, ChatClinical, measure_chat_clinical
from bench.chat_glued import ChatGlued, measure_chat_glued
from bench.corpus import (
    BASELINE_COMMIT,
    BASELINE_SPLITS,
    SPLITS,
    baseline_median,
    baseline_tokens,
    corpus_rows,
)
from bench.corpus import summary as corpus_summary
from bench.measure import (
    BudgetRow,
    GrowthPoint,
    QualityRow,
    TokenRow,
    measure_budget,
    measure_growth,
    measure_quality,
    measure_tokens,
)
from bench.report import (
    ORIGINAL,
    budget_section,
    corpus_section,
    growth_plots,
    growth_section,
    machine_section,
    pct,
    quality_section,
    quality_summary,
    speed_section,
    suggest_section,
    table,
    token_section,
    token_summary,
)
from bench.server_rerun import measure_server_rerun
from bench.speed import AppResult, ImpactResult, Timing, measure_app, measure_impact, measure_pipeline_speed
from bench.suggest import SuggestResult, measure_suggest
from bench.workload import DEV_QUESTIONS, ROOT, Row, dev_rows, sample_bundles
from coachctx.engine.fragments import FRAGMENTS
from coachctx.engine.policy import DEFAULT_POLICY_PATH, Policy, load_policy
from coachctx.engine.services import Bundle

OUT_DIR = Path(__file__).resolve().parent
GROWTH_LEVELS = (-1, 0, 1, 2, 4, 8, 16, 32, 64)
MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COACHCTX_MODEL", "COACHCTX_MODEL_TIMEOUT")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def pin_to_one_core() -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "Not pinned (this platform has no sched_setaffinity); the process may use several cores."
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"The whole run is pinned to CPU core {core} (`os.sched_setaffinity`)."


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "coachctx", "policy"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + (" + uncommitted changes in coachctx/ or policy/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine(pinned: str, policy_digest: str, load_before: tuple[float, ...]) -> dict[str, str]:
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.node()} - {platform.platform()}",
        "CPU": f"{cpu_model()}, os.cpu_count() = {os.cpu_count()}",
        "pinning": pinned,
        "load average at start (1/5/15 min)": " / ".join(f"{x:.2f}" for x in load_before),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "tiktoken": version("tiktoken"),
        "coachctx": f"{version('coachctx')} at {git_revision()}",
        "policy": f"{DEFAULT_POLICY_PATH.relative_to(ROOT)} (digest {policy_digest})",
        "model": "none: the model environment is cleared, so unsure questions take the keyword fallback",
    }


@dataclass(frozen=True)
class Results:
    """Every measurement of one run, and what it was run on."""

    policy: Policy
    rows: list[Row]
    bundles: dict[str, Bundle]
    tokens: list[TokenRow]
    growth: list[GrowthPoint]
    quality: list[QualityRow]
    decided: dict[str, list[QualityRow]]
    """Corpus split -> its rows decided."""
    baselines: dict[str, float]
    """Corpus split -> its median prompt before issue 8."""
    by_language: dict[str, tuple[list[QualityRow], float]]
    """Language -> the test half's rows in it, and their median prompt before issue 8."""
    learned: SuggestResult
    pipeline: list[Timing]
    impact: ImpactResult
    app: AppResult
    server: AppResult
    budget: list[BudgetRow]
    chat: ChatClinical
    glued: ChatGlued
    chat_2: ChatClinical
    """The second chat-style clinical set, per half."""
    uncovered: ChatClinical
    """The chat set in languages the policy has no terms in."""


def measure_all(scale: float, step: Callable[[str], None]) -> Results:
    """Every measurement in report order, on the checked-in policy, the dev questions, the corpus and
    the sample athletes; `scale` shrinks the speed samples (a smoke run)."""
    policy, rows, bundles = load_policy(), dev_rows(), sample_bundles()
    step(f"tokens: {len(bundles)} athletes x {len(rows)} questions")
    tokens = measure_tokens(rows, bundles, policy)
    step(f"growth: levels {GROWTH_LEVELS}")
    growth = measure_growth(rows, policy, GROWTH_LEVELS)
    step("quality")
    quality = measure_quality(rows, bundles, policy)
    step("quality: the fresh-question corpus")
    halves = {split: corpus_rows(split) for split in SPLITS}
    decided = {split: measure_quality(rs, bundles, policy) for split, rs in halves.items()}
    recorded = baseline_tokens()
    baselines = {split: baseline_median(rs, recorded) for split, rs in halves.items() if split in BASELINE_SPLITS}
    by_language = {lang: ([d for d in decided["test"] if d.lang == lang],
                          baseline_median([r for r in halves["test"] if r.lang == lang], recorded))
                   for lang in sorted({r.lang for r in halves["test"]})}
    step("quality: the chat-style clinical set")
    chat = measure_chat_clinical(policy)
    chat_2 = measure_chat_clinical(policy, CHAT_CLINICAL_2)
    uncovered = measure_chat_clinical(policy, CHAT_UNCOVERED)
    step("quality: words run together")
    glued = measure_chat_glued(policy)
    step("suggest: learn from the corpus tune half, starting from a thinned policy")
    learned = measure_suggest(policy, bundles)
    step("speed: pipeline")
    unseen = [r.q for split in ("tune", "test") for r in halves[split]]
    pipeline = measure_pipeline_speed(rows, bundles, policy, n_cold=int(1000 * scale), n_warm=int(5000 * scale),
                                      n_route=int(10000 * scale), unseen=unseen)
    step("speed: impact")
    impact = measure_impact(rows, bundles, policy, n=int(100_000 * scale), n_distinct=int(100_000 * scale))
    step("speed: app")
    app = measure_app([r.q for r in rows[:5]])
    step("speed: app in a real server and browser")
    server = measure_server_rerun([r.q for r in rows[:10]])
    step("budget")
    budget = measure_budget(rows, bundles, policy)
    return Results(policy, rows, bundles, tokens, growth, quality, decided, baselines, by_language, learned,
                   pipeline, impact, app, server, budget, chat, glued, chat_2, uncovered)


def summary_rows(r: Results) -> list[list[str]]:
    """The summary table: one row per headline figure."""
    ts, qs = token_summary(r.tokens), quality_summary(r.quality)
    named = {t.name: t for t in r.pipeline}
    full = r.pipeline[0]
    route_only = named["routing + selection alone"]
    fresh = named["full decision, fresh bundle, naive count off"]
    tiktoken_alone = named["tiktoken alone: encode the texts each decision above must count"]
    unseen_route = named.get("routing + selection, never-seen multilingual questions")
    growth, learned, impact, app, server = r.growth, r.learned, r.impact, r.app, r.server
    return [
        ["tokens, median selected / naive / oracle", f"{ts['selected']:.0f} / {ts['naive']:.0f} / {ts['oracle']:.0f}"],
        ["saving vs naive (ours / original design)", f"{pct(ts['saving'])} / {pct(ORIGINAL['saving'])} "
                                                     f"({ORIGINAL['selected']} vs {ORIGINAL['naive']})"],
        ["saving, payloads stripped to what fragments read", f"{pct(growth[0].saving_total)} "
                                                             f"({growth[0].selected:.0f} vs {growth[0].naive:.0f})"],
        ["saving at the largest grown bundle", f"{pct(growth[-1].saving_total)} "
                                               f"({growth[-1].bundle_tokens:,}-token bundle)"],
        ["route accuracy / needs recall (no model)", f"{pct(qs['route_accuracy'])} / {pct(qs['needs_recall'])}"],
        ["decided by rules / needs the model", f"{pct(qs['rules_share'])} / {pct(1 - qs['rules_share'])}"],
        *([f"corpus {split} half: route accuracy / needs recall / in-domain matching nothing",
           f"{pct(c['route_accuracy'])} / {pct(c['needs_recall'])} / {pct(c['matched_nothing_in_domain'])}"]
          for split in ("test", "tune") for c in [corpus_summary(r.decided[split])]),
        ["chat-style clinical set: read as clinical / keeps readiness_injury / everyday read as clinical "
         "(hard everyday set)", f"{pct(r.chat.share('read', 'clinical'))} / {pct(r.chat.share('kept', 'clinical'))} / "
         f"{pct(r.chat.share('false_clinical', 'everyday'))} ({pct(r.chat.hard_everyday)})"],
        ["second chat-style clinical set, half never read: read as clinical / keeps readiness_injury / everyday "
         "read as clinical (tune half kept)", f"{pct(r.chat_2.share('read', 'clinical', half='test'))} / "
         f"{pct(r.chat_2.share('kept', 'clinical', half='test'))} / "
         f"{pct(r.chat_2.share('false_clinical', 'everyday', half='test'))} "
         f"({pct(r.chat_2.share('kept', 'clinical', half='tune'))})"],
        ["16 languages with no terms, never read: keeps readiness_injury / everyday keeps it",
         f"{pct(r.uncovered.share('kept', 'clinical'))} / {pct(r.uncovered.share('everyday_kept', 'everyday'))}"],
        ["words run together, half never read: routed / read as clinical / keeps readiness_injury / everyday read "
         "as clinical (tune half routed)", f"{pct(r.glued.share('test', 'routed', 'messages'))} / "
         f"{pct(r.glued.share('test', 'read', 'clinical'))} / {pct(r.glued.share('test', 'kept', 'clinical'))} / "
         f"{pct(r.glued.share('test', 'false_clinical', 'everyday'))} ({pct(r.glued.share('tune', 'routed', 'messages'))})"],
        ["thinned policy: test-half accuracy gap recovered by learning on tune",
         f"{pct(learned.recovered('test'))} ({pct(learned.figure('test', 'thinned', 'route_accuracy'))} -> "
         f"{pct(learned.figure('test', 'learned', 'route_accuracy'))}; full "
         f"{pct(learned.figure('test', 'full', 'route_accuracy'))}; learn {learned.learn_seconds:.0f} s)"],
        ["corpus test half: median prompt (before issue 8)",
         f"{corpus_summary(r.decided['test'])['median_prompt']:.0f} ({r.baselines['test']:.0f})"],
        ["decisions/s, full pipeline (cold tokens)", f"{full.per_second:,.0f} (p50 {full.p50_ms:.2f} ms, "
                                                     f"p99 {full.p99_ms:.2f} ms)"],
        ["decisions/s, routing + selection", f"{route_only.per_second:,.0f} (p50 {route_only.p50_ms:.3f} ms, "
                                             f"p99 {route_only.p99_ms:.3f} ms)"],
        ["decisions/s, full decision, fresh bundle, naive count off",
         f"{fresh.per_second:,.0f} ({fresh.seconds / tiktoken_alone.seconds:.2f}x tiktoken's own time to encode "
         f"the texts it counts, {tiktoken_alone.per_second:,.0f}/s)"],
        *([["decisions/s, routing + selection, never-seen multilingual",
            f"{unseen_route.per_second:,.0f} ({unseen_route.n:,} questions)"]] if unseen_route else []),
        ["impact throughput", f"{impact.timings[0].per_second:,.0f} questions/s ({impact.timings[0].name})"],
        *([f"impact, {t.n:,} all-distinct questions" + (" (2 processes)" if "jobs=" in t.name else " (one core)"),
           f"{t.seconds:.1f} s"] for t in impact.timings[1:]),
        ["app rerun, one question (AppTest, in process)", f"{app.reruns_s[0]:.2f} s" if app.measured else app.note],
        ["app rerun, real server + Chromium (median / max)",
         f"{statistics.median(server.reruns_s) * 1000:.0f} / {max(server.reruns_s) * 1000:.0f} ms"
         if server.measured else server.note],
        ["free tier binds (hand / measured)", " / ".join(pct(b.bound / b.decisions) for b in r.budget
                                                         if b.tier == "free")],
        ["paid tier binds (hand / measured)", " / ".join(pct(b.bound / b.decisions) for b in r.budget
                                                         if b.tier == "paid")],
    ]


def report_lines(r: Results, summary: list[list[str]], pngs: list[str], info: dict[str, str], pinned: str,
                 load_before: tuple[float, ...]) -> list[str]:
    """REPORT.md: the summary, then every section, then the machine."""
    return [
        "# coachctx benchmark report",
        "",
        f"Written by `make bench` (`python -m bench.run`) on {info['date']}; every number below comes from that "
        f"run on the machine described at the end. Questions: `{DEV_QUESTIONS.relative_to(ROOT)}` "
        f"({len(r.rows)} rows); athletes: `sample_athletes/` ({', '.join(r.bundles)}).",
        "",
        "## Summary",
        "",
        *table(["", ""], summary),
        "",
        *token_section(r.tokens), "",
        *growth_section(r.growth, pngs, grow.__doc__ or ""), "",
        *quality_section(r.quality), "",
        *corpus_section(r.decided, r.baselines, r.by_language, BASELINE_COMMIT), "",
        *suggest_section(r.learned), "",
        *speed_section(r.pipeline, r.impact, r.app, r.server, pinned, load_before[0], os.cpu_count() or 1), "",
        *budget_section(r.budget, r.growth, sum(f.cost for f in FRAGMENTS)), "",
        *machine_section(info), "",
    ]


def _load() -> tuple[float, ...]:
    return os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller samples (a smoke run, not for the report)")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="where REPORT.md and the PNGs go")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    for name in MODEL_ENV:
        os.environ.pop(name, None)
    os.chdir(ROOT)
    pinned = pin_to_one_core()
    load_before = _load()

    def step(what: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {what}", file=sys.stderr, flush=True)

    results = measure_all(0.1 if args.quick else 1.0, step)
    step("report")
    args.out.mkdir(parents=True, exist_ok=True)
    pngs = growth_plots(results.growth, args.out)
    info = machine(pinned, results.policy.digest, load_before)
    info["load average at end (1/5/15 min)"] = " / ".join(f"{x:.2f}" for x in _load())
    info["run time"] = f"{time.perf_counter() - started:.0f} s"
    summary = summary_rows(results)
    report = args.out / "REPORT.md"
    report.write_text("\n".join(report_lines(results, summary, pngs, info, pinned, load_before)), encoding="utf-8")
    width = max(len(k) for k, _ in summary)
    print(f"\ncoachctx benchmark ({info['CPU']}; {pinned})")
    for k, v in summary:
        print(f"  {k:<{width}}  {v}")
    print(f"\nwrote {report} and {', '.join(pngs)} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
