"""Build the fresh-question corpus from the raw helper files: settle the two labellings, split once.

    python corpus/make_corpus.py [--check]

Reads `corpus/raw/`:
  writer_N.jsonl       the questions, with the writer's own labels (row N of writer W is `wW-NNN`)
  second_labels.jsonl  a second helper's labels for every row, made from the question alone
  adjudicated.jsonl    a third helper's ruling on the rows the first two could not be merged on

Writes `corpus/tune.yaml` and `corpus/test.yaml` (dev.yaml's format plus `id`) and
`corpus/disagreements.jsonl` (every row where the two labellings differ: both labellings, the
settled labels and the rule that settled them). `--check` writes nothing and fails when the files
on disk are not what the raw files give.

Settling, per row (A = writer, B = second labeller):
  intents  equal: kept. Overlapping: the union (each intent was judged acceptable by one expert and
           the two agree on a shared core). Disjoint: the adjudicator's ruling.
  needs    equal: kept. Overlapping: the intersection (what both experts insist on). Both empty: [].
           Disjoint (or one empty, one not): the adjudicator's ruling.
  scope    equal (or both absent): kept. Different: the adjudicator's ruling where the row was
           adjudicated for another reason, else dropped (no horizon both agree the question implies).
  A row whose settled intents are only `general` needs nothing.

The split is made once, before any vocabulary work, by a fixed seed: per language, the rows sorted
by id are shuffled with `random.Random(f"{SEED}:{lang}")` and the first 60% (rounded) go to tune.
It depends on ids alone, never on labels or text, so relabelling a row cannot move it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
RAW: Final = HERE / "raw"
HOLDOUT: Final = RAW / "holdout"
HOLDOUT2: Final = RAW / "holdout2"
HOLDOUT3: Final = RAW / "holdout3"
HOLDOUT3_SEED: Final = 20261210
"""The third hold-out set is cut in halves by this seed, per language, before any of it was read."""
HOLDOUT4: Final = RAW / "holdout4"
HOLDOUT4_SEED: Final = 20261211
"""The fourth, likewise."""
SEED: Final = 20261203
TUNE_SHARE: Final = 0.6
INTENTS: Final = ("training", "injury", "recovery", "nutrition", "conditions", "general")
FRAGMENTS: Final = (
    "athlete_profile", "chronotype", "training_block", "baseline_aerobic", "baseline_mobility",
    "baseline_strength", "readiness_training", "readiness_recovery", "readiness_nutrition",
    "readiness_injury", "conditions_today",
)
SCOPES: Final = ("today", "week", "months")
HEADER: Final = """\
# The fresh-question corpus, {split} half ({n} rows, {langs} languages). Made by corpus/make_corpus.py:
# do not edit by hand; edit corpus/raw/ and rerun it.
#
# How it was made: five helper sessions each wrote questions as a different kind of athlete
# (1 beginner runner, 2 triathlete, 3 masters cyclist, 4 team-sport player, 5 non-native speaker of
# English), 130 in chat-style English and 9 in each of 21 other languages, briefed only with the
# fragment and intent definitions of DESIGN.md (corpus/raw/BRIEF.md); none was shown the policy, its
# vocabulary, dev.yaml or the code. A second helper labelled every row from the question alone,
# without the writer's labels; a third settled the rows the two could not be merged on. The rules
# are in corpus/make_corpus.py; every disagreement is in corpus/disagreements.jsonl.
#
# Split once, by the fixed seed {seed}, per language: 60% tune, 40% test, before any vocabulary
# work. {purpose}
#
# Judged against the sample athlete "maya" (all four services healthy), like dev.yaml.
#   intents: the labels, any of which counts as a correct route
#   needs:   fragments an expert coach would insist are in the prompt for this question
#   scope:   the horizon the question implies, where it implies one
"""
HOLDOUT_HEADER: Final = """\
# The hold-out set ({n} rows, {langs} languages). Made by corpus/make_corpus.py: do not edit by hand;
# edit corpus/raw/holdout/ and rerun it.
#
# Written on 2026-12-03 after that day's vocabulary work, to measure it where nobody tuned: three
# more helper sessions, each a different kind of athlete (f1 trail runner and club coach, f2
# student footballer and gym-goer, f3 travelling triathlete with a sleep ring), 70 chat-style English
# questions and 6 in each of 21 other languages, also in voice-to-text, all-caps, code-switched,
# one-word and rambling styles; briefed like the corpus writers (corpus/raw/holdout/writer_prompt.txt)
# and never shown the policy, its vocabulary or the code. A second helper labelled every row from
# the question alone; a third ruled where the two could not be merged, by the corpus's rules. Every
# disagreement is in corpus/holdout_disagreements.jsonl. Never split.
#
# Read on 2026-12-04: its misrouted rows were read to find classes of failure (a word of the
# question's language read as another language's term; strength, flexibility, readiness and travel
# words missing). Since then it is tuning data like the tune half; corpus/holdout2.yaml took its place
# as the set nobody has read.
#
# Judged against the sample athlete "maya" (all four services healthy), like dev.yaml.
"""
HOLDOUT2_HEADER: Final = """\
# The second hold-out set ({n} rows, {langs} languages). Made by corpus/make_corpus.py: do not edit
# by hand; edit corpus/raw/holdout2/ and rerun it.
#
# Written on 2026-12-04, when the first hold-out set had been read: three more helper sessions, each
# a different kind of athlete (g1 masters swimmer, open-water triathlete and indoor rower dictating by
# voice; g2 teenage basketball and volleyball player who lifts at a CrossFit gym, in heavy slang and
# emoji, sometimes a parent asking; g3 mountain and trail athlete, ski touring and fell running,
# travelling to altitude and across time zones), 60 chat-style English questions and 6 in each of
# 21 other languages, in voice-to-text, all-caps, code-switched, one-word, rambling and pasted-watch-data
# styles; briefed with corpus/raw/holdout2/writer_prompt.txt and never shown the policy, its
# vocabulary, the code or any other corpus file. Two more helpers labelled half the rows each from
# the question alone; a third ruled on the rows the two could not be merged on. Every disagreement is
# in corpus/holdout2_disagreements.jsonl. Never split, never read to choose a term: only measured.
#
# Judged against the sample athlete "maya" (all four services healthy), like dev.yaml.
"""
HOLDOUT3_HEADER: Final = """\
# The third hold-out set, {split} half ({n} rows, {langs} languages). Made by corpus/make_corpus.py: do
# not edit by hand; edit corpus/raw/holdout3/ and rerun it.
#
# Written on 2026-12-07, after every vocabulary and rule change until then: three more helper
# sessions, each a different kind of athlete (h1 climber and boulderer who trail-runs and lives in a
# van; h2 parent and volunteer coach of a teenage cross-country runner and a young swimmer, asking
# for the children and for their own 10k; h3 58-year-old rower and Nordic walker with asthma and
# type 2 diabetes, dictating by voice), 60 chat-style English questions and 5 in each of 21 other
# languages, in voice-to-text, pasted-readout, two-questions-in-one, third-person, negated-pain,
# pain-that-is-over, venting, one-word and romanised styles, with English, Indian and Nigerian
# English among them; briefed with corpus/raw/holdout3/writer_prompt.txt and never shown the policy,
# its vocabulary, the code or any other corpus file. Three more helpers labelled the rows from the
# question alone (corpus/raw/holdout3/labeller_prompt.txt, one writer's rows each); a fourth ruled
# on the 9 rows the two labellings could not be merged on. Every disagreement is in
# corpus/holdout3_disagreements.jsonl. Cut in halves per language by the seed {seed} before any row
# was read. {purpose}
#
# Judged against the sample athlete "maya" (all four services healthy), like dev.yaml.
"""
HOLDOUT4_HEADER: Final = """\
# The fourth hold-out set, {split} half ({n} rows, {langs} languages). Made by corpus/make_corpus.py: do
# not edit by hand; edit corpus/raw/holdout4/ and rerun it.
#
# Written on 2026-12-08, after every vocabulary and rule change until then: three more helper
# sessions, each a different kind of athlete (h4a 23-year-old semi-professional footballer between
# Lagos, London and Madrid, in slang and emoji; h4b 46-year-old ultra-trail runner and mountain biker
# in the Alps who switches languages mid-sentence; h4c 31-year-old nurse on rotating shifts, swimmer
# and triathlete with iron deficiency and migraines), 30 chat-style English questions and 8 in each
# of 21 other languages, in rambling, mostly-emoji, all-caps, censored-swearing, acronym, formal,
# past-injury-as-background, negated, pain-inside-another-question, third-person, one-word and
# romanised styles; briefed with corpus/raw/holdout4/writer_prompt.txt and never shown the policy,
# its vocabulary, the code or any other corpus file. Three more helpers labelled the rows from the
# question alone (corpus/raw/holdout4/labeller_prompt.txt, one writer's rows each); a fourth ruled
# on the rows the two labellings could not be merged on. Every disagreement is in
# corpus/holdout4_disagreements.jsonl. Cut in halves per language by the seed {seed} before any row
# was read. {purpose}
#
# Judged against the sample athlete "maya" (all four services healthy), like dev.yaml.
"""
HOLDOUT3_PURPOSE: Final = {
    "tune": "Its misses may be read to find classes of failure.",
    "test": "This half is only ever measured: no term or rule is chosen by reading it.",
}
PURPOSE: Final = {
    "tune": "Vocabulary may be chosen by reading this half.",
    "test": "This half is only ever measured: no term is chosen by reading it.",
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise SystemExit(f"{path}:{n}: not valid JSON ({e})") from e
    return rows


def _labels(row: Mapping[str, Any], where: str) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    intents, needs, scope = row.get("intents"), row.get("needs"), row.get("scope")
    if not isinstance(intents, list) or not intents or any(i not in INTENTS for i in intents):
        raise SystemExit(f"{where}: intents must be a non-empty list of {', '.join(INTENTS)}; got {intents!r}")
    if not isinstance(needs, list) or any(n not in FRAGMENTS for n in needs):
        raise SystemExit(f"{where}: needs must be a list of fragment names; got {needs!r}")
    if scope is not None and scope not in SCOPES:
        raise SystemExit(f"{where}: scope must be one of {', '.join(SCOPES)} or absent; got {scope!r}")
    return tuple(dict.fromkeys(intents)), tuple(dict.fromkeys(needs)), scope


def _ordered(values: set[str], order: Sequence[str]) -> tuple[str, ...]:
    return tuple(v for v in order if v in values)


def settle(a: Mapping[str, Any], b: Mapping[str, Any], ruling: Mapping[str, Any] | None,
           where: str) -> tuple[dict[str, Any], list[str]]:
    """The settled labels of one row and the rules that settled each disagreement."""
    ai, an, as_ = _labels(a, f"{where} (writer)")
    bi, bn, bs = _labels(b, f"{where} (second label)")
    rules: list[str] = []
    needs_ruling = not (set(ai) & set(bi)) or (bool(an) != bool(bn)) or (an and bn and not set(an) & set(bn))
    if needs_ruling:
        if ruling is None:
            raise SystemExit(f"{where}: the labellings cannot be merged and corpus/raw/adjudicated.jsonl "
                             "has no ruling for it")
        ri, rn, rs = _labels(ruling, f"{where} (adjudicated)")
        rules.append("adjudicated")
        intents, needs, scope = ri, rn, rs
    else:
        if set(ai) == set(bi):
            intents = ai
        else:
            intents = _ordered(set(ai) | set(bi), INTENTS)
            rules.append("intents: union of overlapping labels")
        if set(an) == set(bn):
            needs = an
        else:
            needs = _ordered(set(an) & set(bn), FRAGMENTS)
            rules.append("needs: intersection of overlapping labels")
        scope = as_
        if as_ != bs:
            scope = None
            rules.append("scope: labellers differ, dropped")
    if set(intents) == {"general"}:
        needs = ()
    row: dict[str, Any] = {"intents": list(intents), "needs": list(needs)}
    if scope is not None:
        row["scope"] = scope
    return row, rules


def build() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    written: dict[str, dict[str, Any]] = {}
    for path in sorted(RAW.glob("writer_*.jsonl")):
        w = path.stem.split("_", 1)[1]
        for n, row in enumerate(read_jsonl(path), 1):
            written[f"w{w}-{n:03d}"] = row
    rows, disagreements = settle_all(written, RAW)
    return split(rows), disagreements


def build_holdout(raw: Path = HOLDOUT) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A hold-out set: written after a day's vocabulary work by three more writers (their rows carry
    their ids), labelled and settled by the same rules, never split."""
    written = {row["id"]: row for path in sorted(raw.glob("writer_*.jsonl")) for row in read_jsonl(path)}
    rows, disagreements = settle_all(written, raw)
    return sorted(rows, key=lambda r: r["id"]), disagreements


def settle_all(written: Mapping[str, Mapping[str, Any]], raw: Path) -> tuple[list[dict[str, Any]],
                                                                            list[dict[str, Any]]]:
    second = {r["id"]: r for r in read_jsonl(raw / "second_labels.jsonl")}
    rulings_path = raw / "adjudicated.jsonl"
    rulings = {r["id"]: r for r in read_jsonl(rulings_path)} if rulings_path.exists() else {}
    missing = [i for i in written if i not in second]
    if missing:
        raise SystemExit(f"{len(missing)} rows have no second label, e.g. {', '.join(missing[:5])}")
    rows: list[dict[str, Any]] = []
    disagreements: list[dict[str, Any]] = []
    for row_id, a in written.items():
        b = second[row_id]
        labels, rules = settle(a, b, rulings.get(row_id), row_id)
        row = {"id": row_id, "q": a["q"], "lang": a["lang"], **labels}
        rows.append(row)
        if rules or _differ(a, b):
            disagreements.append({
                "id": row_id, "q": a["q"], "lang": a["lang"],
                "writer": {k: a[k] for k in ("intents", "needs", "scope") if k in a},
                "second": {k: b[k] for k in ("intents", "needs", "scope") if k in b},
                **({"adjudicated": {k: rulings[row_id][k] for k in ("intents", "needs", "scope", "note")
                                    if k in rulings[row_id]}} if "adjudicated" in rules else {}),
                "settled": labels, "rules": rules or ["same sets in another order"]})
    return rows, disagreements


def _differ(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (set(a["intents"]) != set(b["intents"]) or set(a["needs"]) != set(b["needs"])
            or a.get("scope") != b.get("scope"))


def split(rows: Sequence[dict[str, Any]], seed: int = SEED,
          share: float = TUNE_SHARE) -> dict[str, list[dict[str, Any]]]:
    by_lang: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_lang.setdefault(row["lang"], []).append(row)
    out: dict[str, list[dict[str, Any]]] = {"tune": [], "test": []}
    for lang in sorted(by_lang):
        group = sorted(by_lang[lang], key=lambda r: r["id"])
        random.Random(f"{seed}:{lang}").shuffle(group)
        cut = round(len(group) * share)
        out["tune"] += group[:cut]
        out["test"] += group[cut:]
    for half in out.values():
        half.sort(key=lambda r: r["id"])
    return out


def _yaml_row(row: Mapping[str, Any]) -> str:
    parts = [f"id: {row['id']}", f"q: {json.dumps(row['q'], ensure_ascii=False)}", f"lang: {json.dumps(row['lang'])}",
             f"intents: [{', '.join(row['intents'])}]", f"needs: [{', '.join(row['needs'])}]"]
    if "scope" in row:
        parts.append(f"scope: {row['scope']}")
    return "  - {" + ", ".join(parts) + "}"


def render(split_name: str, rows: Sequence[Mapping[str, Any]]) -> str:
    header = HEADER.format(split=split_name, n=len(rows), langs=len({r["lang"] for r in rows}), seed=SEED,
                           purpose=PURPOSE[split_name])
    return header + "questions:\n" + "".join(_yaml_row(r) + "\n" for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail if the files are stale")
    args = parser.parse_args(argv)
    halves, disagreements = build()
    files = {HERE / f"{name}.yaml": render(name, rows) for name, rows in halves.items()}
    files[HERE / "disagreements.jsonl"] = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in disagreements)
    for name, raw, header in (("holdout", HOLDOUT, HOLDOUT_HEADER), ("holdout2", HOLDOUT2, HOLDOUT2_HEADER)):
        holdout, holdout_disagreements = build_holdout(raw)
        files[HERE / f"{name}.yaml"] = header.format(n=len(holdout), langs=len({r["lang"] for r in holdout})) \
            + "questions:\n" + "".join(_yaml_row(r) + "\n" for r in holdout)
        files[HERE / f"{name}_disagreements.jsonl"] = "".join(json.dumps(d, ensure_ascii=False) + "\n"
                                                              for d in holdout_disagreements)
    for name, raw, seed, header in (("holdout3", HOLDOUT3, HOLDOUT3_SEED, HOLDOUT3_HEADER),
                                    ("holdout4", HOLDOUT4, HOLDOUT4_SEED, HOLDOUT4_HEADER)):
        holdout, holdout_disagreements = build_holdout(raw)
        for half, rows in split(holdout, seed, 0.5).items():
            text = header.format(split=half, n=len(rows), langs=len({r["lang"] for r in rows}), seed=seed,
                                 purpose=HOLDOUT3_PURPOSE[half])
            files[HERE / f"{name}_{half}.yaml"] = text + "questions:\n" + "".join(_yaml_row(r) + "\n" for r in rows)
        files[HERE / f"{name}_disagreements.jsonl"] = "".join(json.dumps(d, ensure_ascii=False) + "\n"
                                                              for d in holdout_disagreements)
    if args.check:
        stale = [p.name for p, text in files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        if stale:
            print(f"stale: {', '.join(stale)}; run python corpus/make_corpus.py", file=sys.stderr)
            return 1
        return 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    n = sum(len(r) for r in halves.values())
    print(f"{n} rows: tune {len(halves['tune'])}, test {len(halves['test'])}; "
          f"{len(disagreements)} rows where the labellings differ; hold-out sets written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
