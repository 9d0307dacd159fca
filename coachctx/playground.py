"""Helpers behind the Streamlit playground (`app.py`): tables and charts from a Decision in plain
words (technical names beside them), the policy diff (as `policy_diff` computes it), form edits
that rewrite only the value they change (comments kept) and say what they did, YAML export and
import, the store's versions and labels as tables and where the policy in use came from, impact
reports as tables, uploads and their limits, traces, the address-bar state (validated, never
raising), and reply generation.

Nothing here imports Streamlit, so tests call these functions directly and the app only lays
their results out. Like the app, nothing here decides anything: every fact shown about a
selection is read from the Decision.
"""

from __future__ import annotations

import copy
import difflib
import io
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import altair as alt
import openai
import pandas as pd
import yaml

from coachctx.engine.availability import facts
from coachctx.engine.decision import Decision, FragmentDecision
from coachctx.engine.fragments import FRAGMENTS
from coachctx.engine.pipeline import COST_MODES, MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import INTENTS, Policy, parse_policy, policy_to_yaml
from coachctx.engine.policy_loading import MAX_POLICY_BYTES, YAML_DUMPER, parse_yaml
from coachctx.engine.services import Bundle
from coachctx.engine.text import tokenise
from coachctx.errors import CoachctxError, InputError, PolicyError
from coachctx.model import (
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    MAX_ERROR_CHARS,
    MAX_TIMEOUT_S,
    AnswerTooLarge,
    ModelLoop,
    async_client,
    cause,
    check_api_key,
    check_base_url,
    clip,
    model_text,
    parse_seconds,
)
from coachctx.tools.impact_report import ImpactReport, Metrics
from coachctx.tools.policy_diff import PolicyDiff
from coachctx.tools.questions import FORMATS, QuestionSet, parse_questions
from coachctx.tools.store import DRAFT_ID_PATTERN, Label, LabelMove, Version
from coachctx.tools.trace import make_trace

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

MAX_IMPORT_BYTES: Final = MAX_POLICY_BYTES
"""An imported policy file larger than this is refused before it is decoded."""


def human_size(n: int) -> str:
    """'512 KB', '5 MB', '5.2 MB' (binary units, as the limits are set)."""
    if n < 1024 * 1024:
        value, unit = n / 1024, "KB"
    else:
        value, unit = n / (1024 * 1024), "MB"
    return f"{value:.0f} {unit}" if abs(value - round(value)) < 0.05 else f"{value:.1f} {unit}"


def check_upload_size(name: str, size: int, limit: int, what: str) -> None:
    """Refuse an upload over `limit` with the sizes in the same units as the stated limit
    (bytes too when the two would round to the same figure)."""
    if size <= limit:
        return
    shown, cap = human_size(size), human_size(limit)
    if shown == cap:
        shown, cap = f"{size:,} bytes", f"{limit:,} bytes ({human_size(limit)})"
    raise InputError(f"{name} is {shown}; {what} may be at most {cap}")

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


# --- the decision as tables --------------------------------------------------------------------


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
NOTE_LABELS: Final[Mapping[str, str]] = {
    "promoted_by_scope": "Promoted to primary",
    "demoted_by_scope": "Demoted to secondary",
    "kept_despite_exclude": "Kept despite an exclude",
}


def explain_fragment(f: FragmentDecision, d: Decision) -> str:
    """Why this fragment is in the prompt or not, in one or two sentences a coach can read."""
    codes = {r["code"] for r in f.reasons}
    notes = [f"{NOTE_LABELS[r['code']]} — {r['detail']}." for r in f.reasons if r["code"] in NOTE_CODES]
    asked = asked_for_by(f)
    if f.status == "selected":
        if "promoted_by_scope" in codes:
            head = (f"{asked.capitalize()}, promoted by the time horizon" if asked else
                    "Not asked for by the intent, but promoted by the time horizon")
            head += " — always sent when available."
        elif f.role == "primary":
            head = f"{asked.capitalize()} — always sent when available."
        else:
            head = f"{asked.capitalize()} — it fitted the {d.budget}-token budget."
        return " ".join([head, *notes])
    withholding = [r for r in f.reasons if r["code"] not in NOTE_CODES]
    parts = [f"{REASON_LABELS.get(r['code'], r['code']).capitalize()}: {r['detail']}." for r in withholding]
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
            "reasons": ", ".join(r["code"] for r in f.reasons) or "—",
            "service": f.service,
            "fragment": f.name,
        })
    return pd.DataFrame(rows)


def scores_frame(d: Decision) -> pd.DataFrame:
    """One row per intent: keyword score, the terms that matched, and its standing."""
    intent = d.intent
    rows = []
    for name, value in intent["scores"].items():
        terms = intent["matched"].get(name, [])
        if name == intent["name"]:
            standing = "routed"
        elif name in intent["contenders"]:
            standing = "contender"
        else:
            standing = "other"
        rows.append({"intent": name, "score": float(value), "standing": standing,
                     "matched": ", ".join(f"{t} ({w:g})" for t, w in terms) or "—"})
    return pd.DataFrame(rows)


def matched_terms_frame(d: Decision) -> pd.DataFrame:
    rows = [{"intent": name, "term": term, "weight": float(weight)}
            for name, terms in d.intent["matched"].items() for term, weight in terms]
    return pd.DataFrame(rows, columns=["intent", "term", "weight"])


STANDING_COLORS: Final[Mapping[str, str]] = {"routed": "#1f77b4", "contender": "#ff7f0e", "other": "#b0b0b0"}


def routing_chart(d: Decision) -> alt.LayerChart:
    """Keyword score per intent with the confidence threshold (a red rule) and the margin (a
    shaded band below the top score: a runner-up inside it makes routing unsure)."""
    df = scores_frame(d)
    threshold = float(d.intent.get("threshold", 1.0))
    margin = float(d.intent.get("required_margin", 1.0))
    top = float(df["score"].max()) if not df.empty else 0.0
    x_max = max(top, threshold, 0.5) * 1.25 + 0.25
    x = alt.X("score:Q", title="keyword score", scale=alt.Scale(domain=[0, x_max]), axis=alt.Axis(tickCount=6))
    bars = alt.Chart(df).mark_bar().encode(
        y=alt.Y("intent:N", sort=list(df["intent"]), title=None, axis=alt.Axis(labelOverlap=False)),
        x=x,
        color=alt.Color("standing:N", title="standing",
                        scale=alt.Scale(domain=list(STANDING_COLORS), range=list(STANDING_COLORS.values()))),
        tooltip=["intent", "score", "standing", "matched"],
    )
    layers: list[alt.Chart] = []
    if top > 0:
        band = pd.DataFrame([{"start": max(top - margin, 0.0), "end": top,
                              "label": f"margin {margin:g}: a runner-up in here makes the rules unsure"}])
        layers.append(alt.Chart(band).mark_rect(opacity=0.12, color="#ff7f0e").encode(
            x=alt.X("start:Q", scale=alt.Scale(domain=[0, x_max])), x2="end:Q", tooltip=["label"]))
        # the margin's label sits a line above the threshold's: both can be at the same x (a
        # runner-up at zero with threshold 1 and margin 1)
        layers.append(alt.Chart(band).mark_text(align="left", dx=3, dy=-18, color="#c45f00", baseline="bottom").encode(
            x=alt.X("start:Q", scale=alt.Scale(domain=[0, x_max])), y=alt.value(0),
            text=alt.value(f"margin {margin:g}")))
    rule_df = pd.DataFrame([{"threshold": threshold, "label": f"threshold {threshold:g}"}])
    rule = alt.Chart(rule_df).mark_rule(color="#d62728", strokeDash=[6, 4], size=2).encode(
        x=alt.X("threshold:Q", scale=alt.Scale(domain=[0, x_max])), tooltip=["label"])
    text = alt.Chart(rule_df).mark_text(align="left", dx=4, dy=-4, color="#d62728", baseline="bottom").encode(
        x=alt.X("threshold:Q", scale=alt.Scale(domain=[0, x_max])), text="label:N", y=alt.value(0))
    return alt.LayerChart(layer=[*layers, bars, rule, text]).properties(height=36 * len(df) + 20)


def routing_headline(d: Decision) -> str:
    i = d.intent
    routed = _and(i["contenders"]) if i["source"] != "rules" and len(i["contenders"]) > 1 else i["name"]
    return f"Routed to **{routed}** by {SOURCE_LABELS.get(i['source'], i['source'])}."


def model_answer(model: Mapping[str, Any]) -> str:
    """What the model said at routing, without a raw None: 'answered `injury` in 840 ms'."""
    raw, latency = model.get("raw"), model.get("latency_ms")
    took = f" in {latency:.0f} ms" if isinstance(latency, int | float) else ""
    if raw is None or not str(raw).strip():
        return f"asked, but gave no answer{took}"
    return f"answered `{_short(str(raw), 80).replace('`', chr(39))}`{took}"


def decision_summary(d: Decision) -> str:
    """One line a coach reads first: what goes in, and what stays out and why."""
    sent = [FRAGMENT_TITLES.get(f.name, f.name) for f in d.fragments if f.status == "selected"]
    held = [f"{FRAGMENT_TITLES.get(f.name, f.name)} ({REASON_LABELS.get(f.reasons[0]['code'], f.reasons[0]['code'])})"
            if f.reasons else FRAGMENT_TITLES.get(f.name, f.name) for f in d.fragments if f.status == "withheld"]
    return (f"**:green[Sent:]** {', '.join(sent) or 'nothing'}  \n"
            f"**:red[Withheld:]** {', '.join(held) or 'nothing'}")


def service_status_lines(d: Decision) -> list[str]:
    return [f"{':material/check_circle:' if s['status'] == 'ok' else ':material/error:'} **{name}**: "
            f"{s['status']} — {s['detail']}"
            for name, s in d.services.items()]


# --- policy drafts: errors in the coach's words, the diff, export and import -------------------


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_LIST_NAMES: Final = {"primary": "primary list", "secondary": "secondary list", "exclude": "exclude list"}


def split_path(path: str) -> list[str | int]:
    """`intents.injury.primary[1]` -> ['intents', 'injury', 'primary', 1]."""
    return [int(idx) if idx else name for name, idx in _PART.findall(path)]


def describe_path(path: str) -> str:
    """A validation path in a coach's words: `intents.injury.primary[1]` ->
    'intent injury → primary list → item 2'."""
    if not path or path.startswith("line "):
        return path or "the whole document"
    parts = split_path(path)
    words: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        nxt = parts[i + 1] if i + 1 < len(parts) else None
        if isinstance(part, int):
            words.append(f"item {part + 1}")
        elif part == "intents" and nxt is not None:
            words.append(f"intent {nxt}")
            i += 1
        elif part == "vocabulary" and nxt is not None:
            words.append(f"vocabulary of {nxt}")
            rest = parts[i + 2:]
            if rest:
                words.append(f"language {rest[0]}")
            if len(rest) > 1:
                words.append(f"term {rest[1]!r}")
            i += 1 + min(len(rest), 2)
        elif part == "scopes" and nxt is not None:
            words.append(f"time horizon {nxt}")
            i += 1
        elif part == "tiers" and nxt is not None:
            words.append(f"tier {nxt}")
            i += 1
        elif part == "modifiers" and isinstance(nxt, int):
            words.append(f"modifier {nxt + 1}")
            i += 1
        elif part == "confident_threshold":
            words.append("confidence threshold")
        elif part == "fragment_terms" and nxt is not None:
            words.append(f"words naming {nxt}")
            i += 1
        elif part in ("clinical_terms", "terms") and nxt is not None and not isinstance(nxt, int):
            words.append(f"{'clinical words' if part == 'clinical_terms' else 'words'} in language {nxt}")
            i += 1
        elif part == "max_words":
            words.append("max words")
        else:
            words.append(_LIST_NAMES.get(str(part), str(part)))
        i += 1
    return " → ".join(words)


def line_of(text: str, path: str) -> int | None:
    """The 1-based line in `text` where `path` points (or its nearest existing parent). Call it
    only on text that already parsed, so the size and alias limits have been applied."""
    if not path or path.startswith("line "):
        return None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for part in split_path(path):
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if str(key.value) == str(part):
                    child = value if not isinstance(value, yaml.ScalarNode) else key
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a draft, located three ways."""

    path: str
    where: str
    line: int | None
    message: str


def yaml_error_line(text: str) -> int | None:
    """The line a YAML syntax error belongs to: where the unfinished construct (a list, a quote,
    a key) starts, which is where a coach has to look, not where the parser gave up."""
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.context_mark or e.problem_mark
        return mark.line + 1 if mark is not None else None
    except (yaml.YAMLError, RecursionError):
        return None
    return None


_LINE_PATH = re.compile(r"^line (\d+)")


def problems_of(error: PolicyError, text: str) -> list[Problem]:
    out = []
    for path, message in error.problems:
        m = _LINE_PATH.match(path)
        if m:
            line = yaml_error_line(text) if "YAML syntax error" in message else None
            line = line or int(m.group(1))
            out.append(Problem(path=path, where=f"line {line}", line=line, message=message))
        else:
            out.append(Problem(path=path, where=describe_path(path), line=line_of(text, path), message=message))
    return out


def line_snippet(text: str, line: int, around: int = 2) -> str:
    """The lines around `line` (1-based), numbered, the line itself marked with '>'."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    first, last = max(1, line - around), min(len(lines), line + around)
    width = len(str(last))
    return "\n".join(f"{'>' if n == line else ' '} {n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1))


@dataclass(frozen=True)
class DraftCheck:
    """The result of validating a draft: the policy, or the problems that keep it out."""

    policy: Policy | None
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return self.policy is not None


def check_draft(text: str, parse: Callable[[str], Policy] = parse_policy) -> DraftCheck:
    """Validate draft YAML text; never raises for a bad draft."""
    try:
        return DraftCheck(policy=parse(text), problems=[])
    except PolicyError as e:
        return DraftCheck(policy=None, problems=problems_of(e, text))


def _show(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def unified_diff(before: str, after: str, *, before_name: str = "checked-in", after_name: str = "draft") -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=before_name, tofile=after_name, n=2))


def yaml_diff(base: Policy, draft: Policy, *, before_name: str = "checked-in", after_name: str = "draft") -> str:
    """A line diff of the two policies in one canonical layout, so only settings differ."""
    if base.digest == draft.digest:
        return ""
    return unified_diff(policy_to_yaml(base), policy_to_yaml(draft), before_name=before_name, after_name=after_name)


def _code(text: str) -> str:
    """Inline code, so '+ term' and '*' in a change read as written, not as Markdown."""
    return "`" + text.replace("`", "'") + "`"


SECTION_TITLES: Final[Mapping[str, str]] = {
    "routing": "Routing thresholds", "tiers": "Tiers (token budgets)", "intents": "Intents: what each may see",
    "vocabulary": "Vocabulary: terms and weights", "scopes": "Time horizons: terms and modifiers",
    "clinical_terms": "Clinical terms", "fragment_terms": "Fragment terms: words that name one fact",
}
DIFF_COLUMNS: Final = ("section", "subject", "change", "kind", "path")


def diff_frame(diff: PolicyDiff) -> pd.DataFrame:
    """One row per change from `policy_diff`: where it is, and what changed in a coach's words."""
    rows = [{"section": SECTION_TITLES.get(c.section, c.section), "subject": c.subject, "change": c.describe(),
             "kind": c.kind, "path": c.path} for c in diff.changes]
    return pd.DataFrame(rows, columns=list(DIFF_COLUMNS))


def diff_markdown(diff: PolicyDiff, before_name: str, after_name: str) -> str:
    """The diff grouped by section and subject (an intent, `injury (es)`, a time horizon)."""
    if diff.same:
        return f"No differences: {before_name} and {after_name} decide exactly alike."
    n = len(diff.changes)
    lines = [f"**{n} change{'s' if n != 1 else ''}** from {before_name} (`{diff.before_digest}`) to {after_name} "
             f"(`{diff.after_digest}`):"]
    for section, subjects in diff.grouped().items():
        lines.append(f"\n**{SECTION_TITLES.get(section, section)}**\n")
        for subject, changes in subjects.items():
            if section in ("routing", "tiers"):
                lines += [f"- {_code(c.describe())}" for c in changes]
            else:
                lines.append(f"- **{subject}**: " + " · ".join(_code(c.describe()) for c in changes))
    return "\n".join(lines)


EXPORT_HEADER: Final = ("# coachctx policy, exported from the playground (digest {digest}).\n"
                        "# Check it with `coachctx check-policy FILE`; import it back into the playground.\n")
_EXPORT_HEADER = re.compile(r"\A# coachctx policy, exported from the playground \(digest [0-9a-f]+\)\.\n"
                            r"# Check it with `coachctx check-policy FILE`; import it back into the playground\.\n")


def export_policy_yaml(policy: Policy, text: str | None = None) -> str:
    """YAML that `coachctx check-policy` accepts and that imports back to an equal policy: the
    draft's own text when given (its comments and layout kept), else the canonical layout."""
    body = policy_to_yaml(policy) if text is None else _EXPORT_HEADER.sub("", text, count=1)
    return EXPORT_HEADER.format(digest=policy.digest) + body


def import_policy_bytes(data: bytes, name: str = "<upload>") -> tuple[str, Policy]:
    """Decode and validate an uploaded policy file: (its text, the policy). Raises PolicyError
    for a file too large, not UTF-8, or invalid — parsed with the guarded safe loader only."""
    try:
        check_upload_size(name, len(data), MAX_IMPORT_BYTES, "a policy file")
    except InputError as e:
        raise PolicyError(name, [("", str(e))]) from e
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PolicyError(name, [("", f"not UTF-8 text (byte {e.start})")]) from e
    return text, parse_policy(text, name)


# --- structured edits: the form writes YAML, the YAML stays the one source --------------------


def draft_data(text: str) -> dict[str, Any] | None:
    """The draft as plain data when its YAML parses to a mapping (valid or not), else None."""
    try:
        data = parse_yaml(text)
    except PolicyError:
        return None
    return data if isinstance(data, dict) else None


def draft_to_yaml(data: Mapping[str, Any]) -> str:
    return yaml.dump(dict(data), Dumper=YAML_DUMPER, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)


def with_setting(data: Mapping[str, Any], path: Sequence[str | int], value: Any) -> dict[str, Any]:
    """A deep copy of `data` with the value at `path` replaced (missing mappings are created)."""
    out = copy.deepcopy(dict(data))
    node: Any = out
    for part, after in zip(path[:-1], path[1:], strict=True):
        # a draft can hold anything (`intents: [training]`): what the path cannot go through is
        # replaced by the mapping the form edits, and the policy's validation speaks about the rest
        wanted = list if isinstance(after, int) else dict
        if isinstance(node, list) and not (isinstance(part, int) and -len(node) <= part < len(node)):
            raise InputError(f"the draft has no item {part!r} at {'.'.join(map(str, path))}")
        child = node[part] if isinstance(node, list) and isinstance(part, int) else node.get(part)
        if not isinstance(child, wanted) or (isinstance(after, int) and not -len(child) <= after < len(child)):
            if wanted is list:
                raise InputError(f"the draft has no item {after!r} at {'.'.join(map(str, path))}")
            child = node[part] = {}
        node = child
    node[path[-1]] = value
    return out


# Form edits change the draft's text in place: the value's span is rewritten (found with the
# parser's marks) and nothing else moves, so the checked-in file's comments and line breaks
# survive. Where a span cannot be rewritten alone (a key that does not exist yet, a block
# collection), ruamel.yaml's round trip sets the value: comments survive, some lines re-wrap.


def _node_at(text: str, path: Sequence[str | int]) -> yaml.Node | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    for part in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
        if child is None:
            return None
        node = child
    return node


def _flow(value: Any, column: int) -> str:
    """`value` as flow YAML that fits where a node started at `column` (continuation lines
    indented past it, so the text around stays valid)."""
    dumped = yaml.dump(value, Dumper=YAML_DUMPER, default_flow_style=True, allow_unicode=True, sort_keys=False,
                       width=max(40, 110 - column))
    dumped = dumped.removesuffix("\n").removesuffix("\n...").rstrip("\n")
    return dumped.replace("\n", "\n" + " " * (column + 1))


def _in_place(text: str, path: Sequence[str | int], value: Any) -> str | None:
    node = _node_at(text, path)
    if node is None:
        return None
    if isinstance(node, yaml.ScalarNode) and node.style not in (None, "'", '"'):
        return None  # a literal or folded block scalar: its span includes the lines below
    if isinstance(node, yaml.CollectionNode) and not node.flow_style:
        return None
    start, end = node.start_mark.index, node.end_mark.index
    return text[:start] + _flow(value, node.start_mark.column) + text[end:]


def _new_key(text: str, path: Sequence[str | int], value: Any) -> str | None:
    """A key the draft does not have yet, written as one more line of its parent mapping (or one
    more entry of a flow mapping); a missing parent is created the same way."""
    if not path:
        return None
    parent = _node_at(text, path[:-1])
    if parent is None:
        return _new_key(text, path[:-1], {path[-1]: value})
    if not isinstance(parent, yaml.MappingNode):
        return None
    if parent.flow_style:
        close = parent.end_mark.index - 1
        if text[close] != "}":
            return None
        entry = _flow({path[-1]: value}, parent.start_mark.column)[1:-1]
        return text[:close] + (", " if parent.value else "") + entry + text[close:]
    if not parent.value:
        return None
    last = parent.value[-1][1]
    if isinstance(last, yaml.CollectionNode) and not last.flow_style:
        return None  # the line after a block collection may hold the next section's comments
    indent = parent.value[0][0].start_mark.column
    end = text.find("\n", last.end_mark.index)
    end = len(text) if end < 0 else end
    line = " " * indent + _flow({path[-1]: value}, indent)[1:-1]
    return text[:end] + "\n" + line + text[end:]


def _piecewise(text: str, path: Sequence[str | int], value: Any) -> str | None:
    """A block mapping or sequence changed entry by entry (each in place, or a new key or item
    line), so a table edit rewrites only the rows that changed. None when an entry was removed."""
    node = _node_at(text, path)
    old = _get_path(draft_data(text), path)
    if isinstance(node, yaml.MappingNode) and isinstance(old, Mapping) and isinstance(value, Mapping):
        if any(k not in value for k in old):
            return None
        for key, item in value.items():
            if old.get(key) != item:
                step = _in_place(text, [*path, key], item) if key in old else _new_key(text, [*path, key], item)
                if step is None:
                    step = _piecewise(text, [*path, key], item) if key in old else None
                if step is None:
                    return None
                text = step
        return text
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and isinstance(old, list) \
            and isinstance(value, list) and len(value) >= len(old) and old:
        for i, item in enumerate(value[:len(old)]):
            if old[i] != item:
                step = _in_place(text, [*path, i], item)
                if step is None:
                    return None
                text = step
        for item in value[len(old):]:
            seq = _node_at(text, path)
            if not isinstance(seq, yaml.SequenceNode) or not seq.value:
                return None
            last = seq.value[-1]
            if isinstance(last, yaml.CollectionNode) and not last.flow_style:
                return None
            end = text.find("\n", last.end_mark.index)
            end = len(text) if end < 0 else end
            column = last.start_mark.column
            text = text[:end] + "\n" + " " * (column - 2) + "- " + _flow(item, column) + text[end:]
        return text
    return None


def _get_path(data: Any, path: Sequence[str | int]) -> Any:
    for part in path:
        if isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def _round_trip(text: str, path: Sequence[str | int], value: Any) -> str:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    rt = YAML(typ="rt")
    rt.width, rt.preserve_quotes = 4096, True  # ruamel's wrapping can split a multi-word key in a flow map
    rt.indent(mapping=2, sequence=4, offset=2)
    data = rt.load(text)
    node = data
    for part in path[:-1]:
        if isinstance(node, dict) and not isinstance(node.get(part), dict | list):
            node[part] = CommentedMap()
        node = node[part]
    node[path[-1]] = value
    out = io.StringIO()
    rt.dump(data, out)
    return out.getvalue()


def edit_draft_text(text: str, path: Sequence[str | int], value: Any) -> str:
    """The draft's text with the value at `path` set, keeping every comment. The result is
    checked against a plain data edit; a text that would not read back as intended is never
    returned (the canonical dump is, comments lost, as a last resort)."""
    data = draft_data(text)
    if data is None:
        raise PolicyError("<draft>", [("", "the draft does not parse as a YAML mapping, so the form cannot edit it")])
    wanted = with_setting(data, path, value)
    for attempt in (_in_place, _piecewise, _new_key, _round_trip):
        try:
            candidate = attempt(text, path, value)
        except Exception:  # ruamel raises its own error types for exotic documents: try the next way
            continue
        if candidate is not None and draft_data(candidate) == wanted:
            return candidate
    return draft_to_yaml(wanted)


def add_term_text(text: str, intent: str, language: str, term: str, weight: float) -> str:
    """A new term appended inside the language's flow mapping (a one-line change), else set
    through `edit_draft_text`."""
    node = _node_at(text, ("vocabulary", intent, language))
    data = draft_data(text)
    terms = _get(_get(_get(data, "vocabulary"), intent), language)
    wanted = {**(dict(terms) if isinstance(terms, Mapping) else {}), term: weight}
    if isinstance(node, yaml.MappingNode) and node.flow_style and data is not None:
        close = node.end_mark.index - 1
        if text[close] == "}":
            entry = _flow({term: weight}, 0)[1:-1]
            candidate = text[:close] + (", " if node.value else "") + entry + text[close:]
            if draft_data(candidate) == with_setting(data, ("vocabulary", intent, language), wanted):
                return candidate
    return edit_draft_text(text, ("vocabulary", intent, language), wanted)


def draft_value(data: Mapping[str, Any] | None, path: Sequence[str | int]) -> Any:
    """The value at `path` in draft data, None where the path does not exist."""
    return _get_path(data, path)


def show_value(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, float):
        return f"{value:g}"
    return _show(value)


def find_term(data: Mapping[str, Any], intent: str, term: str) -> tuple[str, Any] | None:
    """(language, weight) of `term` in the intent's vocabulary, matched without case."""
    by_language = _get(_get(data, "vocabulary"), intent)
    if not isinstance(by_language, Mapping):
        return None
    folded = term.casefold()
    for language, terms in by_language.items():
        if isinstance(terms, Mapping):
            for t, w in terms.items():
                if str(t).casefold() == folded:
                    return str(language), w
    return None


@dataclass(frozen=True)
class EditFeedback:
    """What a form edit did, in a coach's words; `offer` is a one-click follow-up
    (label, path, value) when the edit probably did not do what was meant."""

    kind: str  # "ok", "info" (nothing changed), "warning" (done, but read this)
    message: str
    offer: tuple[str, tuple[str | int, ...], Any] | None = None


def _names(fragments: Sequence[str]) -> str:
    return _and([fragment_title(f) for f in fragments])


def list_edit_feedback(data: Mapping[str, Any], intent: str, field: str, new: Sequence[str]) -> EditFeedback:
    """Feedback for a change to an intent's primary, secondary or exclude list."""
    spec = _get(_get(data, "intents"), intent)
    old_values = _get(spec, field)
    old = [f for f in old_values if isinstance(f, str)] if isinstance(old_values, list) else []
    added, removed = [f for f in new if f not in old], [f for f in old if f not in new]
    if not added and not removed:
        if list(new) != old:
            return EditFeedback("ok", f"Reordered {intent}'s {field} list: {', '.join(new)}.")
        return EditFeedback("info", f"No change: {intent}'s {field} list already reads {', '.join(new) or 'empty'}.")
    parts = []
    if added:
        parts.append(f"added {_names(added)} to")
    if removed:
        parts.append(f"removed {_names(removed)} from")
    message = f"{' and '.join(parts).capitalize()} {intent}'s {field} list."
    if field == "exclude" and removed:
        asked = set(_get(spec, "primary") or []) | set(_get(spec, "secondary") or [])
        still_out = [f for f in removed if f not in asked]
        if still_out:
            message += (f" An exclude only withholds a fact the intent might otherwise get (from another intent "
                        f"with evidence, or while routing is unsure). {intent} does not ask for "
                        f"{_names(still_out)} itself, so on a clear {intent} question it stays out — now as "
                        "“not asked for” instead of “excluded”. To send it, add it to the secondary list.")
            secondary = [f for f in (_get(spec, "secondary") or []) if isinstance(f, str)]
            return EditFeedback("warning", message, (f"Add {_names(still_out)} to {intent}'s secondary list",
                                                     ("intents", intent, "secondary"), [*secondary, *still_out]))
    if field == "exclude" and added:
        message += (" It is withheld on questions routed to " + intent + " with certainty; a contender or a "
                    "question that names it still gets it.")
    return EditFeedback("ok", message)


def _get(data: Any, key: str) -> Any:
    """`data[key]` when data is a mapping; drafts may be invalid, so anything else reads as None."""
    return data.get(key) if isinstance(data, Mapping) else None


def vocabulary_rows(data: Mapping[str, Any], intent: str) -> pd.DataFrame:
    """The intent's vocabulary as (language, term, weight) rows, for a table editor."""
    rows = []
    by_language = _get(_get(data, "vocabulary"), intent)
    if isinstance(by_language, Mapping):
        for language, terms in by_language.items():
            if isinstance(terms, Mapping):
                rows += [{"language": str(language), "term": str(t), "weight": w} for t, w in terms.items()]
    return pd.DataFrame(rows, columns=["language", "term", "weight"])


def vocabulary_from_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows back to {language: {term: weight}}; rows without a language or a term are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        language, term = str(row.get("language") or "").strip(), str(row.get("term") or "").strip()
        if language and term:
            weight = row.get("weight")
            out.setdefault(language, {})[term] = 1.0 if weight is None or weight != weight else weight
    return out


def apply_table_edits(rows: Sequence[Mapping[str, Any]], edits: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Apply a data editor's edit state ({edited_rows, added_rows, deleted_rows}) to its rows."""
    out = [dict(r) for r in rows]
    for idx, changes in (edits.get("edited_rows") or {}).items():
        i = int(idx)
        if 0 <= i < len(out):
            out[i].update(changes)
    deleted = {int(i) for i in edits.get("deleted_rows") or []}
    out = [r for i, r in enumerate(out) if i not in deleted]
    out += [dict(r) for r in edits.get("added_rows") or []]
    return out


MODIFIER_COLUMNS: Final = ("action", "fragment", "reason", "intents")


def modifier_rows(data: Mapping[str, Any], scope: str) -> pd.DataFrame:
    mods = _get(_get(_get(data, "scopes"), scope), "modifiers")
    mods = mods if isinstance(mods, list) else []
    rows = [{"action": m.get("action"), "fragment": m.get("fragment"), "reason": m.get("reason"),
             "intents": ", ".join(m["intents"]) if isinstance(m.get("intents"), list) else ""}
            for m in mods if isinstance(m, Mapping)]
    return pd.DataFrame(rows, columns=list(MODIFIER_COLUMNS))


def modifiers_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if not any(row.get(c) for c in ("action", "fragment", "reason")):
            continue
        mod: dict[str, Any] = {"action": row.get("action"), "fragment": row.get("fragment"),
                               "reason": row.get("reason")}
        intents = [s.strip() for s in str(row.get("intents") or "").split(",") if s.strip()]
        if intents:
            mod["intents"] = intents
        out.append(mod)
    return out


# --- the policy store: versions, labels, where the policy in use came from ---------------------


@dataclass(frozen=True)
class PolicyOrigin:
    """Where the policy in use came from: `source` and `version` go into the Decision's
    `policy` record (and so into traces); `description` is for the page."""

    source: str
    version: str | None
    description: str


DRAFT_SOURCE: Final = "playground draft"


def labels_on(number: int, labels: Mapping[str, Label]) -> list[str]:
    return [name for name, label in labels.items() if label.version == number]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def version_title(v: Version, labels: Mapping[str, Label]) -> str:
    """'version 3 [live] · tighter injury excludes · ana'."""
    on = labels_on(v.number, labels)
    tags = f" [{', '.join(on)}]" if on else ""
    return f"version {v.number}{tags} · {_short(v.message)} · {v.author}"


def policy_origin(digest: str, *, checked_in_digest: str, checked_in_source: str, versions: Sequence[Version],
                  labels: Mapping[str, Label], base: int | None) -> PolicyOrigin:
    """Which stored version the policy in use equals, if any: the version the draft was loaded
    from first, then one a label points at, then the newest with the same digest."""
    same = [v for v in versions if v.digest == digest]
    pointed = {label.version for label in labels.values()}
    match = (next((v for v in same if v.number == base), None) or next((v for v in same if v.number in pointed), None)
             or (same[0] if same else None))
    if match is not None:
        on = labels_on(match.number, labels)
        tags = f" ({', '.join(on)})" if on else ""
        return PolicyOrigin(f"store:v{match.number}", str(match.number), f"stored version {match.number}{tags}")
    if digest == checked_in_digest:
        return PolicyOrigin(checked_in_source, None, f"the checked-in policy `{checked_in_source}`")
    if base is not None:
        return PolicyOrigin(f"{DRAFT_SOURCE}, edited from store:v{base}", None,
                            f"your unsaved draft, edited from version {base}")
    return PolicyOrigin(DRAFT_SOURCE, None, "your unsaved draft")


HISTORY_COLUMNS: Final = ("version", "labels", "author", "message", "saved (UTC)", "digest", "parent")


def history_frame(versions: Sequence[Version], labels: Mapping[str, Label]) -> pd.DataFrame:
    """Versions, newest first, with the labels pointing at each."""
    rows = [{"version": v.number, "labels": ", ".join(labels_on(v.number, labels)), "author": v.author,
             "message": v.message, "saved (UTC)": f"{v.created_at:%Y-%m-%d %H:%M:%S}", "digest": v.digest,
             "parent": v.parent} for v in versions]
    return pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))


def labels_frame(labels: Mapping[str, Label], digests: Mapping[int, str]) -> pd.DataFrame:
    rows = [{"label": name, "version": label.version, "digest": digests.get(label.version, "—"),
             "moved by": label.updated_by, "moved at (UTC)": f"{label.updated_at:%Y-%m-%d %H:%M:%S}"}
            for name, label in labels.items()]
    return pd.DataFrame(rows, columns=["label", "version", "digest", "moved by", "moved at (UTC)"])


def label_moves_frame(moves: Sequence[LabelMove]) -> pd.DataFrame:
    rows = [{"at (UTC)": f"{m.at:%Y-%m-%d %H:%M:%S}", "from": m.previous, "to": m.version,
             "how": "saved" if m.kind == "save" else "pointed (revert or promote)", "by": m.author} for m in moves]
    return pd.DataFrame(rows, columns=["at (UTC)", "from", "to", "how", "by"])


def describe_move(move: LabelMove) -> str:
    """'version 1 → 2, saved by ana at 2026-12-03 19:40 UTC'."""
    how = "saved" if move.kind == "save" else "pointed"
    before = f"version {move.previous} → " if move.previous is not None else "created at "
    return f"{before}version {move.version}, {how} by {move.author} at {move.at:%Y-%m-%d %H:%M} UTC"


def default_save_label(labels: Mapping[str, Label], base: int | None) -> str | None:
    """The label a save moves by default: `draft` when the save can move it (it does not exist
    yet, or points at the version the draft is based on), else none, so the default save succeeds."""
    draft = labels.get("draft")
    return "draft" if draft is None or draft.version == base else None


def previous_version(moves: Sequence[LabelMove]) -> int | None:
    """Where the label pointed before its latest move: what a revert goes back to."""
    return moves[0].previous if moves else None


# --- impact analysis in the page ---------------------------------------------------------------


MAX_QUESTIONS_UPLOAD_BYTES: Final = 5 * 1024 * 1024
"""An uploaded question set larger than this is refused before it is decoded (~50,000 rows)."""


def parse_question_upload(data: bytes, name: str) -> QuestionSet:
    """An uploaded question set (YAML like dev.yaml, JSONL or CSV, by its suffix). Raises
    InputError, with a message for the page, for anything it cannot use."""
    suffix = Path(name).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        raise InputError(f"{name}: unknown question set format {suffix or '(no suffix)'!r}; upload a .yaml "
                         "(like dev.yaml), .jsonl or .csv file")
    check_upload_size(name, len(data), MAX_QUESTIONS_UPLOAD_BYTES, "a question set")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 text (byte {e.start})") from e
    try:
        return parse_questions(text, fmt, name)
    except RecursionError as e:  # deeply nested YAML or JSON
        raise InputError(f"{name}: nested too deeply to be a question set") from e


def _rate(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}% ({n}/{d})" if d else "— (no labels)"


def _delta(a: float | None, b: float | None, *, points: bool = False) -> str:
    if a is None or b is None:
        return ""
    d = (b - a) * (100 if points else 1)
    if abs(d) < 1e-9:
        return "same"
    return f"{d:+.1f} pts" if points else f"{d:+g}"


def impact_metrics_frame(report: ImpactReport) -> pd.DataFrame:
    """Route accuracy, needs recall and tokens for base and candidate, with the change."""
    b, c = report.base_metrics, report.candidate_metrics
    rows = [
        ("questions decided", str(b.questions), str(c.questions), ""),
        ("route accuracy", _rate(b.route_correct, b.route_labelled), _rate(c.route_correct, c.route_labelled),
         _delta(b.route_accuracy, c.route_accuracy, points=True)),
        ("needs recall", _rate(b.needs_met, b.needs_total), _rate(c.needs_met, c.needs_total),
         _delta(b.needs_recall, c.needs_recall, points=True)),
        ("every need met", _rate(b.needs_rows_met, b.needs_rows), _rate(c.needs_rows_met, c.needs_rows),
         _delta(b.needs_rows_met / b.needs_rows if b.needs_rows else None,
                c.needs_rows_met / c.needs_rows if c.needs_rows else None, points=True)),
        ("unsure (would ask the model)", str(b.unsure), str(c.unsure), _delta(b.unsure, c.unsure)),
        ("prompt tokens, total", str(b.tokens_total), str(c.tokens_total), _delta(b.tokens_total, c.tokens_total)),
        ("prompt tokens, mean", f"{b.tokens_mean:.1f}", f"{c.tokens_mean:.1f}",
         _delta(round(b.tokens_mean, 1), round(c.tokens_mean, 1))),
    ]
    return pd.DataFrame(rows, columns=["measure", "base", "candidate", "change"])


def confusion_frame(m: Metrics) -> pd.DataFrame:
    """Rows: the labelled intent; columns: where the policy routed it."""
    frame = pd.DataFrame([[m.confusion[e][r] for r in INTENTS] for e in INTENTS], columns=list(INTENTS))
    frame.insert(0, "labelled", list(INTENTS))
    return frame


IMPACT_PAIRS: Final = (("base_intent", "candidate_intent"), ("base_selected", "candidate_selected"),
                       ("base_tokens", "candidate_tokens"))


def impact_frame(report: ImpactReport, *, changed_only: bool) -> pd.DataFrame:
    """One row per question: each policy's intent, selection and tokens, and what changed."""
    columns = ["row", "question", "athlete", *[c for pair in IMPACT_PAIRS for c in pair], "changes"]
    return pd.DataFrame(report.table(changed_only), columns=columns)


def changed_cells(row: Mapping[str, Any]) -> set[str]:
    """The columns of an impact row whose base and candidate values differ."""
    out: set[str] = set()
    for a, b in IMPACT_PAIRS:
        if row.get(a) != row.get(b):
            out |= {a, b}
    if row.get("changes"):
        out.add("changes")
    return out


# --- traces from the page ----------------------------------------------------------------------


def decision_trace_json(d: Decision, bundle: Bundle, *, cost_mode: str, budget: int | None) -> str:
    """The decision as a trace file (`coachctx replay` and the trace tab read it); its
    `decision.policy` names the policy source and stored version the page used."""
    return json.dumps(make_trace(d, bundle, cost_mode=cost_mode, budget=budget), ensure_ascii=False, indent=2) + "\n"


# --- shareable URL state -----------------------------------------------------------------------


@dataclass(frozen=True)
class ViewState:
    """What a link restores, and what Back and Forward step through."""

    question: str
    athlete: str
    scope: str = "auto"
    tier: str = "paid"
    budget: int | None = None
    cost_mode: str = "hand"
    policy_digest: str | None = None
    draft_id: str | None = None
    """The edited draft kept in the policy store under this id: a reload restores it."""


URL_KEYS: Final = ("q", "athlete", "scope", "tier", "budget", "costs", "policy", "draft")
VIEW_KEYS: Final = ("q", "athlete", "scope", "tier", "budget", "costs")
"""The parameters Back and Forward restore (the policy and the draft are not history)."""
MAX_URL_BUDGET: Final = 1_000_000
_DIGEST = re.compile(r"^[0-9a-f]{6,64}$")
_BUDGET = re.compile(r"^[0-9]{1,7}$")  # ASCII digits only: str.isdigit() accepts '²', which int() refuses
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with lone surrogates (which no encoder accepts) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def cleaned(value: Any) -> Any:
    """`value` with every string (keys too) passed through `clean_text`, for display."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {cleaned(k): cleaned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cleaned(v) for v in value]
    return value


def encode_view(view: ViewState) -> dict[str, str]:
    """Query parameters for a view; the budget only for a custom tier; the policy digest only
    when no draft id restores the policy itself (a digest that changes with every edit would
    add a history entry per keystroke)."""
    params = {"q": clean_text(view.question), "athlete": view.athlete, "scope": view.scope, "tier": view.tier,
              "costs": view.cost_mode}
    if view.tier == "custom" and view.budget is not None:
        params["budget"] = str(view.budget)
    if view.draft_id:
        params["draft"] = view.draft_id
    elif view.policy_digest:
        params["policy"] = view.policy_digest
    return params


def _param(params: Mapping[str, Any], key: str) -> str | None:
    value = params.get(key)
    if isinstance(value, list | tuple):
        value = value[-1] if value else None
    return clean_text(value) if isinstance(value, str) else None


def _shown(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "…")


def decode_view(params: Mapping[str, Any], *, athletes: Sequence[str], tiers: Sequence[str],
                default: ViewState) -> tuple[ViewState, list[str]]:
    """A view from query parameters; anything unusable keeps the default and is reported in a
    one-line note. Never raises, whatever the parameters hold."""
    notes: list[str] = []
    out = dict(question=default.question, athlete=default.athlete, scope=default.scope, tier=default.tier,
               budget=default.budget, cost_mode=default.cost_mode, policy_digest=None, draft_id=None)

    def take(key: str, field: str, allowed: Sequence[str], what: str) -> None:
        value = _param(params, key)
        if value is None:
            return
        if value not in allowed:
            notes.append(f"the link's {what} {_shown(value)} is not one of {', '.join(allowed)}; "
                         f"kept {out[field]!r}")
            return
        out[field] = value

    q = _param(params, "q")
    if q is not None:
        if q.strip() and len(q) <= MAX_QUESTION_CHARS:
            out["question"] = q
        else:
            notes.append(f"the link's question is empty or longer than {MAX_QUESTION_CHARS:,} characters; "
                         "kept the default question")
    take("athlete", "athlete", athletes, "athlete")
    take("scope", "scope", SCOPE_REQUESTS, "time horizon")
    take("tier", "tier", [*tiers, "custom"], "tier")
    take("costs", "cost_mode", COST_MODES, "cost mode")
    budget = _param(params, "budget")
    if budget is not None:
        if _BUDGET.match(budget) and int(budget) <= MAX_URL_BUDGET:
            out["budget"] = int(budget)
        else:
            notes.append(f"the link's budget {_shown(budget)} is not a whole number of tokens from 0 to "
                         f"{MAX_URL_BUDGET:,}; ignored")
    digest = _param(params, "policy")
    if digest is not None:
        if _DIGEST.match(digest):
            out["policy_digest"] = digest
        else:
            notes.append(f"the link's policy digest {_shown(digest)} is not a digest; ignored")
    draft = _param(params, "draft")
    if draft is not None:
        if DRAFT_ID_PATTERN.match(draft):
            out["draft_id"] = draft
        else:
            notes.append(f"the link's draft id {_shown(draft)} is malformed; ignored")
    return ViewState(**out), notes  # type: ignore[arg-type]


# --- replies ---------------------------------------------------------------------------------


REPLY_TIMEOUT_S: Final = 60.0
"""How long the endpoint may stay silent while a reply streams (`COACHCTX_REPLY_TIMEOUT`)."""
REPLY_DEADLINE_S: Final = 300.0
"""The longest a whole reply may take, however steadily it trickles in."""
MODEL_SETTING_KEYS: Final = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COACHCTX_MODEL", "COACHCTX_MODEL_TIMEOUT",
                             "COACHCTX_REPLY_TIMEOUT")


@dataclass(frozen=True)
class ModelConfig:
    """Where replies (and unsure routing) go. `source` says where the settings came from.

    A refused setting (COACHCTX_MODEL_TIMEOUT=nan, say) is kept as `problem`: the configuration
    still shows where it came from, and every use of it — routing or a reply — raises that one
    message (InputError), so the page says what to fix instead of calling a misconfigured model."""

    api_key: str | None
    base_url: str | None
    model: str
    source: str
    routing_timeout_s: float = DEFAULT_TIMEOUT_S
    reply_silence_s: float = REPLY_TIMEOUT_S
    problem: str | None = None

    @property
    def timeout_s(self) -> float:
        """The classification call's total deadline."""
        self.check()
        return self.routing_timeout_s

    @property
    def reply_timeout_s(self) -> float:
        """How long a reply stream may send nothing."""
        self.check()
        return self.reply_silence_s

    def check(self) -> None:
        if self.problem is not None:
            raise InputError(self.problem)

    @property
    def cache_key(self) -> tuple[str, ...]:
        """Identifies the configuration without carrying the key itself."""
        import hashlib

        key = hashlib.sha256((self.api_key or "").encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return (key, self.base_url or "", self.model, str(self.timeout_s))


def _seconds(name: str, picked: tuple[str | None, str | None], default: float, maximum: float,
             problems: list[str]) -> float:
    value, where = picked
    try:
        return parse_seconds(name, value, default=default, where=where or "the settings", maximum=maximum)
    except InputError as e:
        problems.append(str(e))
        return default


def resolve_model_config(env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None,
                         typed_key: str | None = None) -> ModelConfig | None:
    """A key typed for this session wins, then the environment, then `.streamlit/secrets.toml`.
    None when neither a key nor a base URL is configured anywhere. Never raises: a key an HTTP header
    cannot carry, a base URL the SDK cannot use or a timeout that is not a usable number of seconds
    becomes the config's `problem`, checked as the CLI checks it."""
    env = os.environ if env is None else env
    secrets = secrets or {}

    def pick(name: str) -> tuple[str | None, str | None]:
        if env.get(name):
            return env[name], "the environment"
        value = secrets.get(name)
        if value not in (None, ""):
            return str(value), ".streamlit/secrets.toml"
        return None, None

    api_key, key_source = pick("OPENAI_API_KEY")
    if typed_key and typed_key.strip():
        api_key, key_source = typed_key.strip(), "a key typed in this session"
    base_url, url_source = pick("OPENAI_BASE_URL")
    if api_key is None and base_url is None:
        return None
    model, _ = pick("COACHCTX_MODEL")
    sources = list(dict.fromkeys(s for s in (key_source, url_source) if s))
    problems: list[str] = []
    for check, value, where in ((check_api_key, api_key, key_source), (check_base_url, base_url, url_source)):
        try:
            check(value, where or "the settings")
        except InputError as e:
            problems.append(str(e))
    timeout = _seconds("COACHCTX_MODEL_TIMEOUT", pick("COACHCTX_MODEL_TIMEOUT"), DEFAULT_TIMEOUT_S,
                       MAX_TIMEOUT_S, problems)
    silence = _seconds("COACHCTX_REPLY_TIMEOUT", pick("COACHCTX_REPLY_TIMEOUT"), REPLY_TIMEOUT_S,
                       REPLY_DEADLINE_S, problems)
    return ModelConfig(api_key=api_key, base_url=base_url, model=model or DEFAULT_MODEL,
                       source=" and ".join(s.removeprefix("the ") for s in sources), routing_timeout_s=timeout,
                       reply_silence_s=silence, problem="; ".join(problems) or None)


class ReplyError(CoachctxError):
    """The reply could not be generated (or stopped part-way); the message says why, for the page."""


MAX_REPLY_CHARS: Final = 20_000
"""The most of a reply kept: far beyond any intent's `max_words`, far below what fills a page."""
MAX_REPLY_BYTES: Final = 8 * 1024 * 1024
"""The most read of one reply stream (chunk framing included)."""


def stream_reply(config: ModelConfig, messages: Sequence[Mapping[str, str]], *,
                 deadline_s: float = REPLY_DEADLINE_S) -> Iterator[str]:
    """Stream a reply to the Decision's prompt through the OpenAI SDK, piece by piece, and stop
    it — raising ReplyError after the pieces that did arrive, so a caller can keep those — when
    the endpoint sends nothing for the reply timeout, when the whole reply outlasts `deadline_s`
    (however steadily it trickles in), when it passes MAX_REPLY_CHARS, or when the call fails.
    A refused setting raises InputError before anything is sent."""
    silence = config.reply_timeout_s
    started = time.monotonic()

    by_deadline = False  # which bound the step that timed out was given: the deadline or the silence

    def wait() -> float:
        nonlocal by_deadline
        left = deadline_s - (time.monotonic() - started)
        by_deadline = left <= silence
        return min(silence, left)

    kept = 0
    with ModelLoop() as loop:
        client = async_client(api_key=config.api_key, base_url=config.base_url, timeout_s=min(silence, deadline_s),
                              max_bytes=MAX_REPLY_BYTES)
        stream: Any = None
        try:
            payload: Any = [{k: model_text(v) for k, v in m.items()} for m in messages]
            stream = loop.within(client.chat.completions.create(
                model=config.model, messages=payload, stream=True, temperature=0.3), wait())
            pieces = aiter(stream)
            while True:
                chunk = loop.next_within(pieces, wait())
                if chunk is None:
                    return
                text = chunk.choices[0].delta.content if chunk.choices else None
                if not text:
                    continue
                if kept + len(text) > MAX_REPLY_CHARS:
                    yield text[:MAX_REPLY_CHARS - kept]
                    raise ReplyError(f"the reply passed {MAX_REPLY_CHARS} characters, so it was stopped")
                kept += len(text)
                yield text
        except (TimeoutError, openai.APITimeoutError) as e:
            if by_deadline:
                raise ReplyError(f"the reply was still streaming after {deadline_s:g} s, so it was stopped") from e
            raise ReplyError(f"the model endpoint sent nothing for {silence:g} s (the reply timeout, "
                             "COACHCTX_REPLY_TIMEOUT)") from e
        except openai.APIStatusError as e:
            raise ReplyError(f"the model endpoint answered HTTP {e.status_code}: {clip(e.message, 200)}") from e
        except Exception as e:  # the SDK wraps transport errors mid-stream too (connection, a reply too large)
            too_large = cause(e, AnswerTooLarge)
            if too_large is not None:
                raise ReplyError(f"the reply stream passed {MAX_REPLY_BYTES} bytes, so it was stopped") from e
            if isinstance(e, CoachctxError):
                raise
            raise ReplyError(clip(f"the model call failed: {type(e).__name__}: {e}", MAX_ERROR_CHARS)) from e
        finally:
            # stopped early or not: give the connection back, within a bounded wait
            if stream is not None:
                loop.close_quietly(stream)
            loop.close_quietly(client)


def count_words(text: str) -> int:
    """Words as the engine tokenises them; each Han/Kana character counts as one word."""
    tokens = tokenise(text)
    return len(tokens.words) + len(tokens.unspaced.replace(" ", ""))


REFERRAL_TERMS: Final = (
    "physiotherapist", "physio", "physical therapist", "doctor", "physician", "medical professional",
    "sports medicine", "healthcare professional", "health professional", "gp",
    "fisioterapeuta", "médico", "medico", "profesional de la salud", "physiotherapeut", "arzt", "ärztin",
    "médecin", "kinésithérapeute", "kiné", "fisioterapista", "dottore", "врач", "физиотерапевт",
    "医師", "医者", "理学療法士", "専門家", "医生", "物理治疗师", "의사", "물리치료사",
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def referral_line(text: str) -> str | None:
    """The closing sentence that refers the athlete to a professional, if one of the last two
    sentences does."""
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    for sentence in reversed(sentences[-2:]):
        folded = sentence.casefold()
        for term in REFERRAL_TERMS:
            if re.search(rf"(?<!\w){re.escape(term)}", folded) if term.isascii() else term in folded:
                return sentence
    return None


@dataclass(frozen=True)
class ReplyReport:
    words: int
    max_words: int
    clinical: bool
    clinical_terms: tuple[str, ...]
    referral: str | None

    @property
    def within_limit(self) -> bool:
        return self.words <= self.max_words


def reply_report(text: str, d: Decision) -> ReplyReport:
    return ReplyReport(words=count_words(text), max_words=d.max_words,
                       clinical=bool(d.clinical.get("is_clinical")),
                       clinical_terms=tuple(d.clinical.get("terms") or ()), referral=referral_line(text))


# --- traces ----------------------------------------------------------------------------------


def _main_reason(f: Mapping[str, Any]) -> str:
    reasons = f.get("reasons") or []
    codes = [r.get("code", "") for r in reasons if isinstance(r, Mapping)]
    return ", ".join(codes)


def trace_fragments_frame(recorded: Mapping[str, Any], now: Decision) -> pd.DataFrame:
    """Fragment by fragment: what the trace recorded next to what the current policy decides."""
    before = {f.get("name"): f for f in recorded.get("fragments") or [] if isinstance(f, Mapping)}
    rows = []
    for f in now.fragments:
        old = before.get(f.name, {})
        old_status, new_status = old.get("status", "—"), f.status
        old_why, new_why = _main_reason(old) or "—", ", ".join(r["code"] for r in f.reasons) or "—"
        rows.append({"fragment": f.name,
                     "recorded": STATUS_LABELS.get(old_status, old_status), "recorded reasons": old_why,
                     "now": STATUS_LABELS.get(new_status, new_status), "now reasons": new_why,
                     "changed": old_status != new_status or old_why != new_why})
    return pd.DataFrame(rows)


def differences_frame(differences: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    rows = [{"field": d["field"], "recorded": _show(d["recorded"]), "now": _show(d["now"])} for d in differences]
    return pd.DataFrame(rows, columns=["field", "recorded", "now"])

