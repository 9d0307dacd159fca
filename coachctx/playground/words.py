"""Plain words for what a Decision says: the example questions, labels with the technical names beside them, an athlete's case in the picker, each fact's reason in a sentence, and the Decision's tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import pandas as pd

from coachctx.engine.availability import facts
from coachctx.engine.decision import Decision, FragmentDecision, ModelCall
from coachctx.engine.fragments import FRAGMENTS
from coachctx.engine.services import Bundle

PAIN_QUESTION: Final = "Should I train through this pain?"


EXAMPLE_QUESTIONS: Final[tuple[str, ...]] = (
    PAIN_QUESTION,
    "How hard should tonight's interval session be?",
    "What should I eat after intervals?",
    "Is the pollution too high for a run?",
    "Can I add more mileage next week?",
    "How should I build my base over the next six months?",
    "¿Puedo correr hoy con dolor de rodilla?",
    "足首が痛いのですが、走ってもいいですか？",
)


SOURCE_LABELS: Final[Mapping[str, str]] = {
    "rules": "keywords (rules) — the keyword scores were decisive",
    "model": "the model — the keywords were not decisive, so a model picked the intent",
    "fallback": "a best guess (fallback) — the keywords were not decisive and no model answered",
}


REASON_LABELS: Final[Mapping[str, str]] = {
    "not_requested": "not asked for",
    "excluded": "excluded",
    "dropped_by_scope": "dropped for this time horizon",
    "unreachable": "service unreachable",
    "never_computed": "never computed for this athlete",
    "empty_field": "field is empty",
    "over_budget": "over the token budget",
    "promoted_by_scope": "promoted for this time horizon",
    "demoted_by_scope": "demoted for this time horizon",
    "kept_despite_exclude": "kept despite an exclude",
}


STATUS_LABELS: Final[Mapping[str, str]] = {"selected": "✔ selected", "withheld": "✘ withheld"}


# Plain words first, the technical name second (on hover, or in brackets): a coach reads the
# first, an engineer greps for the second.
FRAGMENT_TITLES: Final[Mapping[str, str]] = {
    "athlete_profile": "Profile and preferences",
    "chronotype": "Morning or evening person",
    "training_block": "Current training block",
    "baseline_aerobic": "Aerobic baseline",
    "baseline_mobility": "Mobility baseline",
    "baseline_strength": "Strength baseline",
    "readiness_training": "Readiness to train today",
    "readiness_recovery": "Recovery and sleep today",
    "readiness_nutrition": "Nutrition today",
    "readiness_injury": "Pain and injury today",
    "conditions_today": "Today's weather and air",
}


ROLE_LABELS: Final[Mapping[str, str]] = {"primary": "essential (primary)", "secondary": "optional (secondary)",
                                         "none": "not asked for"}


SOURCE_WORDS: Final[Mapping[str, str]] = {"rules": "keywords", "model": "the model", "fallback": "best guess"}


SCOPE_LABELS: Final[Mapping[str, str]] = {"auto": "from the question", "none": "no horizon", "today": "today",
                                          "week": "this week", "months": "coming months"}


COST_LABELS: Final[Mapping[str, str]] = {"hand": "estimated", "measured": "measured"}


def fragment_title(name: str) -> str:
    """'Pain and injury today (readiness_injury)'."""
    title = FRAGMENT_TITLES.get(name)
    return f"{title} ({name})" if title else name


LANGUAGE_NAMES: Final[Mapping[str, str]] = {
    "en": "English", "es": "Spanish", "de": "German", "fr": "French", "pt": "Portuguese", "it": "Italian",
    "ja": "Japanese", "zh": "Chinese", "ko": "Korean", "ru": "Russian"}


_MISSING_WORDS: Final[Mapping[str, str]] = {"unreachable": "service down", "never_computed": "never computed"}


def athlete_label(athlete: str, bundle: Bundle, description: str = "") -> str:
    """The athlete picker's entry says what is special about the athlete, read from the
    athlete's fetched data: 'omar — readiness service down · English'."""
    by_service: dict[str, str] = {}
    empty: list[str] = []
    for name, fact in facts(bundle).items():
        if fact.missing is None:
            continue
        if fact.missing.code == "empty_field":
            empty.append(FRAGMENT_TITLES.get(name, name).casefold())
        else:
            service = next(f.service for f in FRAGMENTS if f.name == name)
            by_service[service] = _MISSING_WORDS.get(fact.missing.code, fact.missing.code)
    notes = [f"{service} {words}" for service, words in by_service.items()]
    if empty:
        notes.append(f"empty fields: {', '.join(empty)}")
    if "injection" in description.casefold():
        notes.append("prompt-injection test")
    language = LANGUAGE_NAMES.get(bundle.language or "", bundle.language or "")
    head = "; ".join(notes) or "all services healthy"
    return f"{athlete} — {head}" + (f" · {language}" if language else "")


def _and(names: Sequence[str]) -> str:
    names = list(names)
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]


def asked_for_by(f: FragmentDecision) -> str:
    """'primary for training; secondary for injury', from the Decision's `requested_by`."""
    by_role: dict[str, list[str]] = {}
    for intent, role in f.requested_by.items():
        by_role.setdefault(role, []).append(intent)
    return "; ".join(f"{role} for {_and(intents)}" for role, intents in by_role.items())


NOTE_CODES: Final = ("promoted_by_scope", "demoted_by_scope", "kept_despite_exclude")


KEEP_LABELS: Final[Mapping[str, str]] = {
    "clinical_question": "The question sounds clinical",
    "unread_question": "The policy cannot read most of the question",
    "unmatched_question": "No term matched: the model's label is a guess",
}
"""Why a fact no intent asked for is sent all the same: what the question is, not who asked."""


NOTE_LABELS: Final[Mapping[str, str]] = {
    "promoted_by_scope": "Promoted to primary",
    "demoted_by_scope": "Demoted to secondary",
    "kept_despite_exclude": "Kept despite an exclude",
}


def explain_fragment(f: FragmentDecision, d: Decision) -> str:
    """Why this fragment is in the prompt or not, in one or two sentences a coach can read."""
    codes = {r.code for r in f.reasons}
    notes = [f"{NOTE_LABELS[r.code]} — {r.detail}." for r in f.reasons if r.code in NOTE_CODES]
    asked = asked_for_by(f)
    if f.status == "selected":
        if "promoted_by_scope" in codes:
            head = (f"{asked.capitalize()}, promoted by the time horizon" if asked else
                    "Not asked for by the intent, but promoted by the time horizon")
            head += " — always sent when available."
        elif f.role == "primary" and not asked:
            kept = next((r for r in f.reasons if r.code in KEEP_LABELS), None)
            head = f"{KEEP_LABELS[kept.code]} — {kept.detail}." if kept else "Always sent when available."
        elif f.role == "primary":
            head = f"{asked.capitalize()} — always sent when available."
        else:
            head = f"{asked.capitalize()} — it fitted the {d.budget}-token budget."
        return " ".join([head, *notes])
    withholding = [r for r in f.reasons if r.code not in NOTE_CODES]
    parts = [f"{REASON_LABELS.get(r.code, r.code).capitalize()}: {r.detail}." for r in withholding]
    if asked and "not_requested" not in codes:
        parts.append(f"(Wanted as {asked}.)")
    return " ".join([*parts, *notes])


def fragments_frame(d: Decision) -> pd.DataFrame:
    """All eleven fragments in prompt order (selected first): the fact in plain words, status and
    why first, then role, both costs, the rendered line and the technical names."""
    rows = []
    for order, f in enumerate(d.fragments, start=1):
        rows.append({
            "#": order,
            "fact": FRAGMENT_TITLES.get(f.name, f.name),
            "status": STATUS_LABELS.get(f.status, f.status),
            "why": explain_fragment(f, d),
            "role": ROLE_LABELS.get(f.role, f.role),
            "cost": f.cost,
            "line": f.line if f.line is not None else "— (no data)",
            "hand": f.cost_hand,
            "measured": f.cost_measured,
            "reasons": ", ".join(r.code for r in f.reasons) or "—",
            "service": f.service,
            "fragment": f.name,
        })
    return pd.DataFrame(rows)


def fragment_row(f: FragmentDecision, d: Decision) -> tuple[str, str]:
    """One fact as an expandable row: a one-line title (status, the fact, its role and cost) and,
    inside, everything the table's narrow columns cut: why in full, the line sent, both costs,
    the reason codes and the technical names."""
    mark = "✔ sent" if f.status == "selected" else "✘ withheld"
    # a fact no intent asks for is described by why it is out: "excluded" is not "not asked for"
    held = [r.code for r in f.reasons if r.code not in NOTE_CODES] if f.role == "none" else []
    role = REASON_LABELS.get(held[0], held[0]) if held else ROLE_LABELS.get(f.role, f.role)
    title = f"{mark} · {FRAGMENT_TITLES.get(f.name, f.name)} — {role}, {f.cost} tokens"
    line = f.line if f.line is not None else "— (the service supplied no data)"
    codes = ", ".join(f"`{r.code}`" for r in f.reasons) or "none"
    body = (f"**Why:** {explain_fragment(f, d)}  \n"
            f"**Line sent to the model:** {line}  \n"
            f"**Cost:** {f.cost_hand} tokens estimated (`hand`), {f.cost_measured} measured (`measured`); the budget "
            f"counted {d.tokens.cost_mode}  \n"
            f"**Reason codes:** {codes} · **service:** `{f.service}` · **fragment:** `{f.name}`")
    return title, body


def score_rows(d: Decision) -> list[dict[str, str | float]]:
    """One row per intent: keyword score, the terms that matched, and its standing."""
    intent = d.intent
    rows: list[dict[str, str | float]] = []
    for name, value in intent.scores.items():
        terms = intent.matched.get(name, ())
        if name == intent.name:
            standing = "routed"
        elif name in intent.contenders:
            standing = "contender"
        else:
            standing = "other"
        rows.append({"intent": name, "score": float(value), "standing": standing,
                     "matched": ", ".join(f"{t} ({w:g})" for t, w in terms) or "—"})
    return rows


def routing_headline(d: Decision) -> str:
    i = d.intent
    routed = _and(i.contenders) if i.source != "rules" and len(i.contenders) > 1 else i.name
    return f"Routed to **{routed}** by {SOURCE_LABELS.get(i.source, i.source)}."


def model_answer(model: ModelCall) -> str:
    """What the model said at routing, without a raw None: 'answered `injury` in 840 ms'."""
    took = f" in {model.latency_ms:.0f} ms" if model.latency_ms is not None else ""
    if model.raw is None or not model.raw.strip():
        return f"asked, but gave no answer{took}"
    return f"answered `{_short(model.raw, 80).replace('`', chr(39))}`{took}"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"
