"""Question sets: YAML in the format of tests/data/questions/dev.yaml (`q`, labels `intents`,
`needs` and `scope`, the horizon the question implies), or a log as JSONL or CSV with a
`question` (or `q`) column and optional `athlete`, `scope` (the scope the caller asked for),
`tier`, `intents` and `needs` columns. Rows that cannot be read are skipped with their reason,
never fatal to a run of 100,000; in CSV that includes a row that is not strict CSV (an unclosed
quote costs its own row, named by the line it opened on, and reading goes on at the next line)
and a row with more cells than the header has columns.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import INTENTS
from coachctx.engine.policy_loading import YamlLimits, parse_yaml
from coachctx.errors import InputError, PolicyError
from coachctx.reading import (
    ReadError,
    check_json_value,
    decode_utf8,
    file_path,
    parse_json,
    printable,
    read_bytes,
    read_text,
    shown,
)

MAX_QUESTIONS: Final = 1_000_000

MAX_FILE_BYTES: Final = 512 * 1024 * 1024

MAX_LINE_BYTES: Final = 1024 * 1024
"""A line of a JSONL or CSV log: a question is at most 2,000 characters, so a longer line is not a
row of a log. JSONL skips such a line unread, CSV (one document) refuses the file; either way the
line is never decoded, which for one emoji in 500 MB took 4 bytes a character, twice over."""

MAX_YAML_BYTES: Final = 16 * 1024 * 1024
"""YAML is parsed whole and far slower than JSONL or CSV: a set this large belongs in a log."""

QUESTION_SET_YAML: Final = YamlLimits(max_bytes=MAX_YAML_BYTES, max_nodes=4 * MAX_QUESTIONS)

FORMATS: Final = {".yaml": "yaml", ".yml": "yaml", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}



@dataclass(frozen=True)
class Question:
    """One row of a question set."""

    row: int
    """1-based: the list index in YAML, the line in JSONL, the data row in CSV."""
    question: str
    athlete: str | None = None
    scope: str = "auto"
    """The scope requested (logs); `auto` infers it from the question, as `select()` does."""
    tier: str | None = None
    intents: tuple[str, ...] | None = None
    """Labels: the intents any of which is a correct route. None when unlabelled."""
    needs: tuple[str, ...] | None = None
    """Labels: fragments an expert would insist on. None when unlabelled."""
    expected_scope: str | None = None
    """Label: the horizon the question implies (dev.yaml's `scope`)."""
    lang: str | None = None
    """The language it is written in, where the set says (the corpus does)."""
    origin: str | None = None
    """Who labelled it, where the set says: `coach` or `model` (`coachctx suggest` weighs them)."""
    model_label: str | None = None
    """The intent a model routed it to, where the set has a `model_label` column: weaker evidence
    than `intents` (`coachctx suggest` reads it when the row has no `intents`)."""



@dataclass(frozen=True)
class QuestionSet:
    source: str
    questions: tuple[Question, ...]
    skipped: tuple[tuple[int, str], ...] = ()
    """(row, why) for rows that could not be read."""



def read_questions(path: str | Path) -> QuestionSet:
    """Read a question set; the format comes from the suffix (.yaml/.yml, .jsonl/.ndjson, .csv)."""
    p = file_path(path, "a question set file")
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise InputError(f"{p}: unknown question set format {p.suffix or '(no suffix)'!r}; "
                         f"use one of {', '.join(FORMATS)}")
    if fmt == "yaml":
        return parse_questions(read_text(p, MAX_YAML_BYTES, expected="a question set file", strip_bom=True), fmt, str(p))
    data = read_bytes(p, MAX_FILE_BYTES, expected="a question set file")
    if fmt == "jsonl":
        # a log of many rows, read line by line from its bytes: a byte that is not UTF-8 or an
        # overlong line costs its own row (`_jsonl_records`), not the whole log
        return _questions(_jsonl_records(data.removeprefix(b"\xef\xbb\xbf")), fmt, str(p))
    # CSV is one document, read strictly
    long_line = _LONG_LINE.search(data)
    if long_line is not None:
        line = data.count(b"\n", 0, long_line.start()) + 1
        raise InputError(f"{p}: line {line} is longer than {MAX_LINE_BYTES:,} bytes, more than a row of a log "
                         "holds (an unclosed quote, or not a log?)")
    return parse_questions(decode_utf8(data, str(p), strip_bom=True), fmt, str(p))


_LONG_LINE: Final = re.compile(rb"^[^\n]{%d}" % (MAX_LINE_BYTES + 1), re.MULTILINE)
"""Anchored at a line's start: each line is scanned once (unanchored, a line just under the limit
was scanned again from every one of its bytes: 270 s for a 0.9 MB header)."""



def parse_questions(text: str, fmt: str, source: str = "<questions>") -> QuestionSet:
    """Parse a question set already in memory (the app's upload). `fmt`: yaml, jsonl or csv."""
    if not isinstance(text, str):
        raise InputError(f"{source}: expected the question set's text, got {type(text).__name__}")
    if fmt == "yaml":
        records = _yaml_records(text, source)
    elif fmt == "jsonl":
        records = _jsonl_records(text)
    elif fmt == "csv":
        records = _csv_records(text, source)
    else:
        raise InputError(f"{source}: unknown question set format {fmt!r}; use yaml, jsonl or csv")
    return _questions(records, fmt, source)


def _questions(records: Iterable[tuple[int, Mapping[str, Any] | str]], fmt: str, source: str) -> QuestionSet:
    questions: list[Question] = []
    skipped: list[tuple[int, str]] = []
    for row, record in records:
        if len(questions) >= MAX_QUESTIONS:
            raise InputError(f"{source}: more than {MAX_QUESTIONS} questions; split the set")
        if isinstance(record, str):
            skipped.append((row, record))
            continue
        try:
            questions.append(_question(row, record, labels_scope=fmt == "yaml"))
        except ValueError as e:
            skipped.append((row, str(e)))
    if not questions:
        why = f" (row {skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise InputError(f"{source}: no questions found{why}")
    return QuestionSet(source, tuple(questions), tuple(skipped))



def _yaml_records(text: str, source: str) -> Iterable[tuple[int, Mapping[str, Any] | str]]:
    try:
        data = parse_yaml(text, source, QUESTION_SET_YAML)
    except PolicyError as e:  # the policy's guarded loader: same limits on nesting, aliases, expansion
        where, problem = e.problems[0]
        raise InputError(f"{source}: not valid YAML ({f'{where}: ' if where else ''}{problem})") from e
    check_json_value(data, source)
    items = data.get("questions") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise InputError(f"{source}: expected a list of questions (or a mapping with `questions:`)")
    for i, item in enumerate(items, 1):
        if isinstance(item, str):
            item = {"q": item}
        yield i, item if isinstance(item, Mapping) else f"expected a mapping with `q`, got {type(item).__name__}"



_NOT_UTF8: Final = re.compile("[\udc80-\udcff]")
"""A byte that was not UTF-8, as `bytes.decode(..., "surrogateescape")` keeps it."""


def _byte_lines(data: bytes) -> Iterable[str | int]:
    """Each line of `data` as text (a byte that is not UTF-8 kept as `surrogateescape` keeps it),
    or, for a line over `MAX_LINE_BYTES`, its length in bytes: never decoded nor copied."""
    start = 0
    while start <= len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        yield end - start if end - start > MAX_LINE_BYTES else data[start:end].decode("utf-8", "surrogateescape")
        start = end + 1


def _jsonl_records(text: str | bytes) -> Iterable[tuple[int, Mapping[str, Any] | str]]:
    # JSONL lines end at \n only: `splitlines()` would also cut at U+2028 or \x1e inside a string
    lines = _byte_lines(text) if isinstance(text, bytes) else text.split("\n")
    for line_no, line in enumerate(lines, 1):
        if isinstance(line, int) or len(line) > MAX_LINE_BYTES:
            yield line_no, f"the line is longer than {MAX_LINE_BYTES:,} bytes, more than a row of a log holds"
            continue
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        bad = _NOT_UTF8.search(line)
        if bad is not None:  # read with surrogateescape: raw bytes that were not UTF-8, never a JSON escape
            yield line_no, f"not UTF-8 text (column {bad.start() + 1})"
            continue
        try:
            obj = parse_json(line, f"line {line_no}")
        except ReadError as e:
            if e.where.startswith("line 1, "):  # a JSON syntax error: its column on this line
                yield line_no, f"{e.problem} ({e.where.removeprefix('line 1, ')})"
            else:
                yield line_no, f"{e.where}: {e.problem}" if e.where else e.problem
            continue
        yield line_no, obj if isinstance(obj, Mapping) else f"expected a JSON object, got {type(obj).__name__}"



class _CsvLines:
    """The physical lines of a CSV text for `csv.reader`, keeping the lines of the record being read,
    so that a record that is not valid CSV can be skipped and reading start again on the line after
    its first: an unclosed quote costs its own row, not every row after it."""

    def __init__(self, text: str) -> None:
        # newline="": the csv module reads line ends itself, so a file ending lines in \r alone (old
        # spreadsheets) reads, and a newline inside a quoted cell stays in the cell
        self._source = iter(io.StringIO(text, newline=""))
        self._again: list[str] = []  # lines to hand out again, the next one last
        self.taken: list[str] = []
        """The lines of the record being read."""
        self.first = 1
        """The line the record being read starts on (1-based, the header is line 1)."""

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        line = self._again.pop() if self._again else next(self._source)
        self.taken.append(line)
        return line

    def next_record(self) -> None:
        self.first += len(self.taken)
        self.taken = []

    def skip_first_line(self) -> None:
        """Drop the first line of the record being read and hand out the rest again."""
        self._again.extend(reversed(self.taken[1:]))
        self.first += 1
        self.taken = []


def _csv_problem(e: csv.Error, lines: _CsvLines) -> str:
    last = lines.first + max(len(lines.taken) - 1, 0)
    text = str(e)
    if "unexpected end of data" in text:
        problem = "a quoted cell opened on this line is never closed"
    elif "expected after" in text:
        problem = ("text follows the closing quote of a cell" if last == lines.first else
                   f"a quoted cell opened on this line runs to line {last}, where text follows its closing "
                   "quote (an unclosed quote?)")
        problem += '; inside a quoted cell write a quote as ""'
    elif "field larger than field limit" in text:
        problem = f"a cell of more than {csv.field_size_limit()} characters (an unclosed quote?)"
    else:
        problem = text
    return f"line {lines.first}: not valid CSV: {problem}"


def _first_repeated(columns: Sequence[str]) -> str | None:
    """The first non-empty column name seen before, in one pass (a header may have 100,000 columns)."""
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            return c
        if c:
            seen.add(c)
    return None


def _csv_records(text: str, source: str) -> Iterable[tuple[int, Mapping[str, Any] | str]]:
    # strict: a quote that does not end a cell is an error, not silently kept (`"a"b` read as `ab`)
    lines = _CsvLines(text)
    reader = csv.reader(lines, strict=True)
    try:
        header = next(reader, [])
    except csv.Error as e:  # a header cell past the csv module's field limit, an unclosed quote
        raise InputError(f"{source}: not valid CSV in the header ({e})") from e
    columns = [c.strip().casefold() for c in header]
    twice = _first_repeated(columns)
    if twice is not None:
        raise InputError(f"{source}: line 1: the column {shown(twice)} appears twice in the header "
                         "(which one is meant?)")
    both = both_spellings(columns)
    if both is not None:
        raise InputError(f"{source}: line 1: {both}")
    if "question" not in columns and "q" not in columns:
        # the header is data: a quoted newline or 100 kB in it must not make the error span lines
        names = printable(", ".join(header)) or "nothing"
        bom = " (it starts with a byte order mark, U+FEFF: the file has two?)" if header and \
            header[0].startswith("\ufeff") else ""
        raise InputError(f"{source}: no `question` (or `q`) column; the header has: "
                         f"{names if len(names) <= 200 else names[:197] + '...'}{bom}")
    row = 0
    while True:
        lines.next_record()
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            row += 1
            yield row, _csv_problem(e, lines)
            lines.skip_first_line()
            reader = csv.reader(lines, strict=True)
            continue
        if not cells:  # a blank line, as DictReader skips it
            continue
        row += 1
        extra = [c for c in cells[len(columns):] if c.strip()]
        if extra:
            yield row, (f"line {lines.first}: {len(cells)} cells but the header names {len(columns)} columns "
                        f"(the extra {shown(extra[0])} would be lost)")
            continue
        yield row, dict(zip(columns, cells, strict=False))



def names_in(value: Any, known: Sequence[str], what: str, kind: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        # CSV cells: "training;injury", "training|injury" or "training injury"
        value = [v for v in value.replace("|", " ").replace(";", " ").replace(",", " ").split() if v]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what}: expected a list of names")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise ValueError(f"{what}: unknown {kind} {shown(unknown[0])}")
    # a name written twice is one name: `needs: [x, x]` counted the need twice in impact's recall
    return tuple(dict.fromkeys(value))



def _text(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected text, got {type(value).__name__}")
    return value.strip()



SPELLINGS: Final = (("question", "q"), ("intents", "intent"))
"""Two names a question set's rows may give one field by; a row holds one of each pair."""


def both_spellings(names: Iterable[str], pairs: Iterable[tuple[str, str]] = SPELLINGS) -> str | None:
    """What is wrong when a row or header names a field both ways (`question` and `q`), or None."""
    present = set(names)
    for a, b in pairs:
        if a in present and b in present:
            return f"both `{a}` and `{b}` are given (which one is meant?)"
    return None


def _question(row: int, record: Mapping[str, Any], *, labels_scope: bool) -> Question:
    both = both_spellings(record)
    if both is not None:
        raise ValueError(both)
    if "question" not in record and "q" not in record:
        raise ValueError(f"no question: the row has no `question` (or `q`); it has {shown(sorted(map(str, record)))}"
                         if record else "no question: the row is empty")
    q = record.get("question", record.get("q"))
    if not isinstance(q, str) or not q.strip():
        raise ValueError("the question is empty" if q in (None, "") or isinstance(q, str)
                         else f"question: expected text, got {type(q).__name__}")
    if len(q.strip()) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question is {len(q.strip())} characters; the limit is {MAX_QUESTION_CHARS}")
    scope = _text(record, "scope")
    if scope is not None and scope not in SCOPE_REQUESTS:
        raise ValueError(f"unknown scope {shown(scope)}; use one of: {', '.join(SCOPE_REQUESTS)}")
    intents_value = record.get("intents", record.get("intent"))
    needs_value = record.get("needs")
    if isinstance(needs_value, str) and not needs_value.strip() and intents_value not in (None, ""):
        needs_value = []  # a CSV row with intents but an empty needs cell needs nothing
    return Question(
        row=row, question=q.strip(), athlete=_text(record, "athlete"),
        scope="auto" if labels_scope or scope is None else scope,
        tier=_text(record, "tier"),
        intents=names_in(intents_value if intents_value != "" else None, INTENTS, "intents", "intent"),
        needs=names_in(needs_value if needs_value != "" else None, FRAGMENT_NAMES, "needs", "fragment"),
        expected_scope=scope if labels_scope and scope != "auto" else None,
        lang=_text(record, "lang"), origin=_text(record, "origin"), model_label=_text(record, "model_label"),
    )
