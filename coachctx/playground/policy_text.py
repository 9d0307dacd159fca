"""The draft as text: where a problem is (a line and a place in the policy), the diff against another policy, export and import, and upload limits."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd
import yaml

from coachctx.engine.policy import Policy, parse_policy, policy_to_yaml
from coachctx.engine.policy_loading import MAX_POLICY_BYTES
from coachctx.errors import InputError, PolicyError
from coachctx.tools.policy_diff import PolicyDiff

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


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


_LIST_NAMES: Final = {"primary": "primary list", "secondary": "secondary list", "exclude": "exclude list"}
_TERM_LISTS: Final = {"clinical_terms": "clinical words", "referral_terms": "referral words", "terms": "words"}


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
        elif part in _TERM_LISTS and nxt is not None and not isinstance(nxt, int):
            words.append(f"{_TERM_LISTS[part]} in language {nxt}")
            i += 1
        elif part == "max_words":
            words.append("max words")
        else:
            words.append(_LIST_NAMES.get(str(part), str(part)))
        i += 1
    return " → ".join(words)


_COMPOSER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML has it: the pure-Python one took about 2 s to compose the checked-in
policy, and a draft with twenty problems composed it twenty times (an adversarial pass: 45 s)."""


def line_of(text: str, path: str) -> int | None:
    """The 1-based line in `text` where `path` points (or its nearest existing parent). Call it
    only on text that already parsed, so the size and alias limits have been applied."""
    return lines_of(text, [path])[0]


def lines_of(text: str, paths: Sequence[str]) -> list[int | None]:
    """`line_of` for each path, the text composed once."""
    if not any(path and not path.startswith("line ") for path in paths):
        return [None] * len(paths)
    try:
        root = yaml.compose(text, Loader=_COMPOSER)
    except (yaml.YAMLError, RecursionError):
        return [None] * len(paths)
    return [_line_in(root, path) if path and not path.startswith("line ") else None for path in paths]


def _line_in(root: yaml.Node | None, path: str) -> int | None:
    node = root
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
    lines = iter(lines_of(text, [path for path, _ in error.problems if not _LINE_PATH.match(path)]))
    for path, message in error.problems:
        m = _LINE_PATH.match(path)
        if m:
            line = yaml_error_line(text) if "YAML syntax error" in message else None
            line = line or int(m.group(1))
            out.append(Problem(path=path, where=f"line {line}", line=line, message=message))
        else:
            out.append(Problem(path=path, where=describe_path(path), line=next(lines), message=message))
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
    "referral_terms": "Referral terms: words that refer the athlete to a professional",
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
