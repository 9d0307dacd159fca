"""Write `sample_logs/questions.jsonl`: a few hundred logged questions for impact analysis.

    python sample_logs/make_log.py [--dev PATH] [--broad PATH] [--out PATH] [--seed N]

The log is built from the two labelled question sets (tests/data/questions/dev.yaml and
tests/data/questions_broad.yaml), spread over the seven sample athletes, plus what real logs
hold besides: the same questions typed again the way people type in a chat box (lower case,
no question mark, a greeting or a "thanks" around it, a typo), and questions nobody labelled.
A few rows are broken on purpose (an empty question, an athlete the fixtures do not have), as
logs are; impact analysis skips them with their reason.

Each row: `ts`, `athlete`, `question`, `scope` (what the caller asked for: mostly `auto`),
`tier`, and, for a subset, the labels `intents` (any of them is a correct route) and `needs`
(fragments an expert insists on). `needs` is kept only on rows for maya, the athlete dev.yaml
judges them against: another athlete may lack a service, and that is not the policy's fault.

Deterministic: the same inputs and seed always give the same file.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEV = ROOT / "tests" / "data" / "questions" / "dev.yaml"
BROAD = ROOT / "tests" / "data" / "questions_broad.yaml"
OUT = HERE / "questions.jsonl"
SEED = 20250601
START = datetime(2025, 5, 5, 6, 0, tzinfo=UTC)

ATHLETES = ("maya", "kenji", "lucia", "omar", "ines", "tom", "priya")
# who types in which language: a question in Spanish comes from lucia, in Japanese from kenji,
# in Portuguese from ines; English from the English-speaking athletes; the rest from anyone
BY_LANGUAGE: Mapping[str, tuple[str, ...]] = {
    "en": ("maya", "omar", "tom", "priya"),
    "es": ("lucia",),
    "ja": ("kenji",),
    "pt": ("ines",),
}

# The same question typed again in a chat box. Each keeps the meaning, so labels still hold.
EN_WRAPPERS = ("coach, {lower}", "quick question: {q}", "hey, {lower}", "{q} thanks", "{bare}",
               "{bare}??", "ok so {lower}", "{q} (asking for tomorrow's plan)")
GREETINGS: Mapping[str, str] = {
    "es": "hola, {lower}", "de": "Hallo, {q}", "fr": "Bonjour, {lower}", "pt": "oi, {lower}",
    "it": "ciao coach, {lower}", "ja": "すみません、{q}", "zh": "教练，{q}", "ko": "코치님, {q}",
    "ru": "Тренер, {lower}",
}

# Questions from the log that nobody labelled: how people actually ask.
UNLABELLED: tuple[tuple[str, str], ...] = (
    ("en", "legs are dead after yesterday's hill reps, easy day or rest day?"),
    ("en", "what's my zone 2 heart rate supposed to be"),
    ("en", "is 3x1 mile at threshold too much two days before a 10k"),
    ("en", "My calf has been tight for a week, should I get it checked?"),
    ("en", "can i run a marathon on 30 miles a week"),
    ("en", "How do I pace a hilly half?"),
    ("en", "I keep waking up at 3am before races"),
    ("en", "best thing to eat at 5am before a long run?"),
    ("en", "gels or real food on the bike?"),
    ("en", "Is caffeine ok the night before?"),
    ("en", "air quality app says 160, run or treadmill"),
    ("en", "it's snowing, should I skip the track session"),
    ("en", "Is it bad to run with a cold?"),
    ("en", "shin splints again. what do I do differently this time"),
    ("en", "my watch says recovery time 72h, do I listen to it"),
    ("en", "How many rest days per week do I need at my age?"),
    ("en", "Should I stretch before or after running?"),
    ("en", "I think I overdid it this week"),
    ("en", "what should my long run be this weekend"),
    ("en", "How do I taper for the marathon in three weeks?"),
    ("en", "lower back hurts after deadlifts"),
    ("en", "feeling great today, can I push the tempo?"),
    ("en", "Do I need electrolytes for a 60 minute run?"),
    ("en", "Why is my heart rate so high on easy runs?"),
    ("en", "I have a wedding this weekend, how do I fit my training in"),
    ("en", "it's 38 degrees here, when should I run"),
    ("en", "pollen count is crazy, indoor workout?"),
    ("en", "how long until I can run after a sprained ankle"),
    ("en", "is it normal to feel dizzy after intervals"),
    ("en", "My knee swells after long runs"),
    ("en", "Can I do strength training on the same day as a run?"),
    ("en", "What's a good recovery meal?"),
    ("en", "I only have 20 minutes today, what should I do"),
    ("en", "plan for the next 3 months to break 3 hours?"),
    ("en", "Should I race this weekend if I'm still sore?"),
    ("en", "how much sleep is enough during a build"),
    ("en", "I got 5 hours of sleep, should I still do the workout tonight"),
    ("en", "Is the smoke bad enough to cancel the group run?"),
    ("en", "hamstring twinge on strides, stop or continue?"),
    ("en", "how do I carb load without feeling bloated"),
    ("en", "what do you know about me"),
    ("en", "lol thanks"),
    ("en", "can you explain what a training block is"),
    ("en", "Is it safe to run in a thunderstorm?"),
    ("en", "my period started, should I change today's session"),
    ("en", "How many calories do I burn on a 20k?"),
    ("es", "¿Es normal que me duelan los gemelos al subir cuestas?"),
    ("es", "¿Qué desayuno antes de una tirada larga?"),
    ("es", "Hoy hace 40 grados, ¿entreno en rodillo?"),
    ("es", "¿Cuántos días de descanso necesito esta semana?"),
    ("de", "Soll ich bei Erkältung trainieren?"),
    ("de", "Wie plane ich die nächsten drei Monate bis zum Marathon?"),
    ("fr", "J'ai une douleur au tendon d'Achille, je peux courir ?"),
    ("fr", "Quoi manger la veille d'un trail ?"),
    ("pt", "Posso correr com dor no joelho?"),
    ("pt", "Dormi mal, faço o treino de hoje?"),
    ("it", "Quanta acqua devo bere durante una mezza maratona?"),
    ("ja", "今日は雨ですが、インターバルをやるべきですか？"),
    ("ja", "ふくらはぎが張っています。休んだほうがいいですか？"),
    ("zh", "下个月比赛，现在应该怎么安排训练？"),
    ("ko", "어제 너무 많이 뛰어서 다리가 아파요"),
    ("ru", "Можно ли тренироваться при простуде?"),
)

# Rows a real log also holds; impact analysis skips them and says why.
BROKEN: tuple[dict[str, Any], ...] = (
    {"athlete": "maya", "question": "   ", "scope": "auto", "tier": "paid"},
    {"athlete": "zoe", "question": "How hard should I go today?", "scope": "auto", "tier": "paid"},
)


def load(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [dict(row) for row in data["questions"]]


def typo(q: str, rng: random.Random) -> str:
    """Swap two letters inside one longer word, the way thumbs do."""
    words = [m for m in re.finditer(r"[A-Za-z]{6,}", q)]
    if not words:
        return q
    w = rng.choice(words)
    i = rng.randrange(w.start() + 1, w.end() - 2)
    return q[:i] + q[i + 1] + q[i] + q[i + 2:]


def retyped(q: str, language: str, rng: random.Random) -> str:
    bare = q.rstrip("?？!！. ").strip()
    lower = q[:1].lower() + q[1:] if language not in ("de",) else q
    if language == "en":
        if rng.random() < 0.25:
            return typo(q, rng)
        return rng.choice(EN_WRAPPERS).format(q=q, lower=lower, bare=bare.lower())
    if rng.random() < 0.5:
        return bare
    return GREETINGS.get(language, "{q}").format(q=q, lower=lower)


def athlete_for(language: str, rng: random.Random) -> str:
    return rng.choice(BY_LANGUAGE.get(language, ATHLETES))


def requested(rng: random.Random) -> tuple[str, str]:
    """(scope, tier) as a caller sends them: mostly auto, sometimes a forced horizon."""
    r = rng.random()
    scope = "auto" if r < 0.85 else "today" if r < 0.95 else "week"
    tier = "paid" if rng.random() < 0.7 else "free"
    return scope, tier


def row_for(q: str, language: str, labels: Mapping[str, Any] | None, rng: random.Random,
            athlete: str | None = None) -> dict[str, Any]:
    athlete = athlete or athlete_for(language, rng)
    scope, tier = requested(rng)
    row: dict[str, Any] = {"athlete": athlete, "question": q, "scope": scope, "tier": tier}
    if labels is not None and labels.get("intents"):
        row["intents"] = list(labels["intents"])
        if "needs" in labels and athlete == "maya":
            row["needs"] = list(labels["needs"])
    return row


def build(dev: list[dict[str, Any]], broad: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for source, items in (("dev", dev), ("broad", broad)):
        for item in items:
            language = str(item.get("lang", "en"))
            # dev.yaml's needs are judged against maya: keep its rows on maya once
            first = "maya" if source == "dev" else None
            rows.append(row_for(item["q"], language, item, rng, athlete=first))
            for _ in range(2):
                # about half the retyped questions keep their labels; the rest arrive unlabelled
                labels = item if rng.random() < 0.5 else None
                rows.append(row_for(retyped(item["q"], language, rng), language, labels, rng))
    for language, q in UNLABELLED:
        rows.append(row_for(q, language, None, rng))
        if rng.random() < 0.3:  # asked again by someone else
            rows.append(row_for(q, language, None, rng))
    rows += [dict(r) for r in BROKEN]
    rng.shuffle(rows)
    minute = timedelta(minutes=1)
    t = START
    out = []
    for row in rows:
        t += minute * rng.randint(3, 90)
        out.append({"ts": t.strftime("%Y-%m-%dT%H:%M:%SZ"), **row})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dev", type=Path, default=DEV)
    p.add_argument("--broad", type=Path, default=BROAD)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--seed", type=int, default=SEED)
    args = p.parse_args(argv)
    rows = build(load(args.dev), load(args.broad), args.seed)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    labelled = sum(1 for r in rows if "intents" in r)
    with_needs = sum(1 for r in rows if "needs" in r)
    print(f"wrote {len(rows)} rows to {args.out} ({labelled} with intents, {with_needs} with needs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
