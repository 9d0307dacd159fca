"""The versioned policy store: immutable versions, labels that point at them, optimistic saves.

Where it lives
    `PolicyStore(url)` takes any SQLAlchemy URL (PostgreSQL when several app instances share
    one store). Without a URL it reads `$COACHCTX_STORE` (a URL, or a plain file path meaning
    a SQLite file), and without that it uses the SQLite file `~/.coachctx/policies.sqlite`,
    per user and outside the repository, so a `git pull` never touches saved versions. The
    file, its directory and the tables are created when a store is opened to write (the default,
    as `policy save` and the app open it); `create=False`, as every command that only reads opens
    it, refuses a SQLite file that does not exist instead of creating an empty one.

What it keeps
    A version is immutable: the policy's YAML as the coach wrote it (comments included), its
    digest (`policy_digest`, layout-independent), author, message, time and parent version.
    Every version is validated before it is stored. A label (`live`, `draft`, ...) points at
    one version; every move of a label is logged, so a revert is visible in the history.

Optimistic saving
    A save names the version it was based on. When it moves a label whose head is no longer
    that version, it is refused (`StaleSaveError`) instead of silently replacing another
    coach's change. The label moves by compare-and-swap (`UPDATE ... WHERE version = base`)
    inside the same transaction that inserts the version, so two savers racing on any
    database cannot both win, and a process killed mid-save leaves the version whole or
    absent.

Question labels
    Beside the versions, a table of questions labelled with the intents that would have been
    right (`QuestionLabel`: question, athlete, intents, the fragments the answer needed, author,
    time, the policy digest and route source of the decision that was labelled). They are what
    `coachctx suggest` and the playground's Suggest tab learn from; `coachctx labels export|import`
    moves them as JSONL. Every label is checked before it is stored (`check_question_label`).

`policy show` prints a version with a first line `# coachctx policy version N ...`; `save`
reads that line back as the base, so "show, edit, save" is safe without remembering N.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import INTENTS, LANGUAGES, Policy, load_policy, parse_policy
from coachctx.errors import CoachctxError, PolicyError
from coachctx.reading import control_character, printable

STORE_ENV: Final = "COACHCTX_STORE"
DEFAULT_STORE_FILE: Final = Path("~/.coachctx/policies.sqlite")
LABEL_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MAX_MESSAGE_CHARS: Final = 500
MAX_AUTHOR_CHARS: Final = 100
HEADER_PREFIX: Final = "# coachctx policy version "
_HEADER = re.compile(r"^# coachctx policy version (\d{1,9})\b[^\n]*\n?")
"""At most nine digits, as `resolve` reads them: a longer number is no version and would overflow SQLite."""
_VERSION_REF = re.compile(r"^v?(\d{1,9})$")
VERSION_LIKE: Final = re.compile(r"^v\d+$")
"""`v` and digits, whatever their count: refused as a label even past the digits `resolve` reads."""


class StoreError(CoachctxError):
    """The policy store refused an operation or could not be used."""


class MissingStoreError(StoreError):
    """A SQLite store file that does not exist, opened only to read: it is not created."""


class UnknownVersionError(StoreError):
    """A version number or label that the store does not have."""


class StaleSaveError(StoreError):
    """A save based on a version that is no longer the head of the label it would move."""

    def __init__(self, message: str, *, label: str, head: int | None, base: int | None) -> None:
        super().__init__(message)
        self.label = label
        self.head = head
        self.base = base


class NoChangeError(StoreError):
    """A save whose policy is identical to the version it is based on."""


_metadata = sa.MetaData()

_versions = sa.Table(
    "policy_versions", _metadata,
    sa.Column("number", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("parent", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=True),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("author", sa.String(MAX_AUTHOR_CHARS), nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("yaml", sa.Text, nullable=False),
    sqlite_autoincrement=True,  # a number is never handed out twice
)

_labels = sa.Table(
    "policy_labels", _metadata,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("version", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_by", sa.String(MAX_AUTHOR_CHARS), nullable=False),
)

_label_moves = sa.Table(
    "policy_label_moves", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.String(32), nullable=False, index=True),
    sa.Column("version", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=False),
    sa.Column("previous", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=True),
    sa.Column("kind", sa.String(8), nullable=False),
    sa.Column("author", sa.String(MAX_AUTHOR_CHARS), nullable=False),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sqlite_autoincrement=True,
)

# Unsaved work from the playground, one row per draft id (the id sits in the page's URL), so a
# reload or a restart of the app does not lose an edited policy. Not a version: no digest, no
# validation, overwritten in place; saving it as a version is a separate, deliberate step.
_drafts = sa.Table(
    "policy_drafts", _metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("yaml", sa.Text, nullable=False),
    sa.Column("base", sa.Integer, nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)
DRAFT_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]{8,32}$")
MAX_DRAFT_CHARS: Final = 512 * 1024
DRAFT_MAX_AGE: Final = timedelta(days=30)
MAX_DRAFTS: Final = 1000
"""Drafts are bounded: one untouched for DRAFT_MAX_AGE is dropped, and so are all but the newest
MAX_DRAFTS (each is a browser session's unsaved edit, not a version)."""

# Questions a coach (or the model) labelled with the intents that would have been right: what
# `coachctx suggest` and the playground's Suggest tab learn from. Not to be confused with the
# labels above, which are names of versions.
_question_labels = sa.Table(
    "question_labels", _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("athlete", sa.String(64), nullable=True),
    sa.Column("intents", sa.String(200), nullable=False),
    sa.Column("needs", sa.String(400), nullable=True),
    sa.Column("scope", sa.String(16), nullable=True),
    sa.Column("lang", sa.String(8), nullable=True),
    sa.Column("origin", sa.String(8), nullable=False),
    sa.Column("author", sa.String(MAX_AUTHOR_CHARS), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("policy_digest", sa.String(64), nullable=True),
    sa.Column("route_source", sa.String(16), nullable=True),
    sa.Column("routed", sa.String(32), nullable=True),
    sqlite_autoincrement=True,
)
ATHLETE_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
DIGEST_PATTERN: Final = re.compile(r"^[0-9a-f]{6,64}$")
ROUTE_SOURCES: Final = ("rules", "model", "fallback")
ORIGINS: Final = ("coach", "model")


@dataclass(frozen=True)
class Draft:
    """A playground draft as last kept: its text (valid or not) and the version it builds on."""

    id: str
    yaml: str
    base: int | None
    updated_at: datetime


@dataclass(frozen=True)
class QuestionLabel:
    """A question labelled with the intents that would have been right (and, optionally, the
    fragments the answer needed), who said so, and what the policy of the day decided."""

    question: str
    intents: tuple[str, ...]
    author: str
    athlete: str | None = None
    needs: tuple[str, ...] | None = None
    """None: not said; (): the answer needs no fragment."""
    scope: str | None = None
    """The scope the question was decided with, when it was not inferred (`today`, `week`, `months`)."""
    lang: str | None = None
    origin: Literal["coach", "model"] = "coach"
    created_at: datetime | None = None
    """Set by the store when the label is added without one."""
    policy_digest: str | None = None
    """The policy that decided the question when it was labelled."""
    route_source: str | None = None
    """How that decision was routed: rules, model or fallback."""
    routed: str | None = None
    """The intent that decision routed to."""
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The label in the corpus format (`question`, `intents`, `needs`, `scope`, `lang`) plus
        `origin` and where it came from; `coachctx suggest` and `coachctx impact` read it."""
        out: dict[str, Any] = {"question": self.question, "intents": list(self.intents)}
        if self.needs is not None:
            out["needs"] = list(self.needs)
        for key in ("scope", "lang", "athlete"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["origin"] = self.origin
        out["author"] = self.author
        if self.created_at is not None:
            out["at"] = self.created_at.isoformat()
        for key in ("policy_digest", "route_source", "routed"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class Version:
    """One immutable saved policy."""

    number: int
    parent: int | None
    digest: str
    author: str
    message: str
    created_at: datetime
    yaml: str

    def policy(self) -> Policy:
        return parse_policy(self.yaml, f"version {self.number}")


@dataclass(frozen=True)
class Label:
    name: str
    version: int
    updated_at: datetime
    updated_by: str


@dataclass(frozen=True)
class LabelMove:
    """One move of a label: by a save (`kind="save"`) or by pointing it (`kind="label"`)."""

    label: str
    version: int
    previous: int | None
    kind: Literal["save", "label"]
    author: str
    at: datetime


def default_store_url(env: Mapping[str, str] | None = None) -> str:
    """`$COACHCTX_STORE` (a URL or a SQLite file path), else `~/.coachctx/policies.sqlite`."""
    value = (os.environ if env is None else env).get(STORE_ENV, "").strip()
    if value:
        return value if "://" in value else _sqlite_url(Path(value))
    return _sqlite_url(DEFAULT_STORE_FILE)


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.expanduser()}"


def _utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; everything stored here is UTC
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _one_line(text: str) -> str:
    """Stored text as one printable line: versions saved before control characters were refused
    may still hold newlines or escape sequences, and must not break a table or a terminal."""
    return printable(" ".join(text.split()))


def check_label(name: str) -> str:
    """A label's name: lower-case letters, digits, '-' and '_', starting with a letter, and never
    something `resolve` would read as a version number (`v2` would name version 2, not the label)."""
    if not isinstance(name, str) or not LABEL_PATTERN.match(name):
        shown = printable(str(name))
        raise StoreError(f"label {shown[:40]!r} is not valid: use lower-case letters, digits, '-' or '_', "
                         "starting with a letter (e.g. live, draft)")
    if _VERSION_REF.match(name) or VERSION_LIKE.match(name):
        raise StoreError(f"label {name!r} is not valid: it reads as a version number (versions are named 3 or "
                         "v3); choose a name such as live, draft or release-3")
    return name


def based_on(text: str) -> int | None:
    """The version a file exported by `export_text` says it came from, if it says so."""
    m = _HEADER.match(text)
    return int(m.group(1)) if m else None


def strip_header(text: str) -> str:
    return _HEADER.sub("", text, count=1)


class PolicyStore:
    """Versions and labels in one SQL database. Safe to share between processes."""

    def __init__(self, url: str | None = None, *, create: bool = True) -> None:
        """`create=False` opens an existing store only: a SQLite file that does not exist is
        `MissingStoreError`, and nothing is written (for commands that only read)."""
        self.url = url if url is not None else default_store_url()
        bad = control_character(self.url)
        if bad is not None:  # a lone surrogate (bytes that were not UTF-8) or a newline: no URL holds one
            raise StoreError(f"store URL {printable(self.url)[:200]!r} holds the character {bad}, which no "
                             "database URL or file name here may hold")
        try:
            parsed = sa.engine.make_url(self.url)
        except (SQLAlchemyError, ValueError) as e:
            raise StoreError(f"store URL {self.url!r} is not a database URL ({e})") from e
        self.display_url = parsed.render_as_string(hide_password=True)
        self._sqlite = parsed.get_backend_name() == "sqlite"
        if self._sqlite and parsed.database not in (None, "", ":memory:"):
            _check_sqlite_file(Path(parsed.database).expanduser(), create=create)
        try:
            self.engine: Engine = sa.create_engine(parsed)
        except (SQLAlchemyError, ImportError, ValueError, TypeError) as e:
            # ValueError, TypeError: a query argument the driver cannot take (`?timeout=abc`)
            raise StoreError(f"cannot use store {self.display_url}: {e}") from e
        if self._sqlite:
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        with self._errors("open"):
            _metadata.create_all(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> PolicyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except SQLAlchemyError as e:
            cause = getattr(e, "orig", None) or e
            raise StoreError(f"store {self.display_url}: cannot {doing}: {cause}") from e

    # --- reading -------------------------------------------------------------------------------

    def get(self, number: int) -> Version:
        with self._errors("read"), self.engine.connect() as conn:
            row = conn.execute(sa.select(_versions).where(_versions.c.number == number)).first()
            if row is None:
                raise UnknownVersionError(f"no version {number} in the store{self._range(conn)}")
        return _version(row._mapping)

    def resolve(self, ref: str | int) -> Version:
        """A version by number (`3` or `v3`) or by the label pointing at it (`live`)."""
        if isinstance(ref, int):
            return self.get(ref)
        m = _VERSION_REF.match(ref.strip())
        if m:
            return self.get(int(m.group(1)))
        labels = self.labels()
        if ref not in labels:
            known = ", ".join(labels) if labels else "none yet"
            raise UnknownVersionError(f"no version or label {ref!r} in the store (labels: {known})")
        return self.get(labels[ref].version)

    def history(self, limit: int | None = None) -> list[Version]:
        """Versions, newest first."""
        query = sa.select(_versions).order_by(_versions.c.number.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._errors("read"), self.engine.connect() as conn:
            return [_version(r._mapping) for r in conn.execute(query)]

    def labels(self) -> dict[str, Label]:
        with self._errors("read"), self.engine.connect() as conn:
            rows = conn.execute(sa.select(_labels).order_by(_labels.c.name))
            return {r.name: Label(r.name, r.version, _utc(r.updated_at), r.updated_by) for r in rows}

    def label_log(self, label: str) -> list[LabelMove]:
        """Every move of `label`, newest first: saves that advanced it and reverts alike."""
        query = sa.select(_label_moves).where(_label_moves.c.label == label).order_by(_label_moves.c.id.desc())
        with self._errors("read"), self.engine.connect() as conn:
            return [LabelMove(r.label, r.version, r.previous, r.kind, r.author, _utc(r.at)) for r in conn.execute(query)]

    def _range(self, conn: Connection) -> str:
        low, high = conn.execute(sa.select(sa.func.min(_versions.c.number), sa.func.max(_versions.c.number))).one()
        return " (it is empty)" if high is None else f" (versions {low} to {high})"

    # --- writing -------------------------------------------------------------------------------

    def save(self, text: str, *, message: str, author: str, label: str | None = None,
             base: int | None = None, source: str = "<draft>") -> Version:
        """Validate `text` and store it as a new version; move `label` to it if given.

        `base` is the version the text was edited from (read from an exported file's first
        line when not given). Moving a label that already has a head requires `base` to be
        that head; otherwise `StaleSaveError`, and nothing is stored.
        """
        if base is None:
            base = based_on(text)
        body = strip_header(text)
        policy = parse_policy(body, source)
        message, author = _check_text("message", message, MAX_MESSAGE_CHARS), _check_text("author", author,
                                                                                          MAX_AUTHOR_CHARS)
        if label is not None:
            check_label(label)
        now = datetime.now(UTC)
        with self._errors("save"), self.engine.begin() as conn:
            parent_digest = None
            if base is not None:
                parent_digest = conn.execute(
                    sa.select(_versions.c.digest).where(_versions.c.number == base)).scalar_one_or_none()
                if parent_digest is None:
                    raise UnknownVersionError(f"the policy is based on version {base}, which is not in the store"
                                              f"{self._range(conn)}")
            head = None
            if label is not None:
                head = conn.execute(sa.select(_labels.c.version).where(_labels.c.name == label)).scalar_one_or_none()
                if head is not None and base != head:
                    raise self._stale(conn, label, head, base)
            if parent_digest == policy.digest:
                raise NoChangeError(f"nothing to save: the policy is identical to version {base}")
            inserted = conn.execute(_versions.insert().values(
                parent=base, digest=policy.digest, author=author, message=message, created_at=now, yaml=body,
            )).inserted_primary_key
            assert inserted is not None
            number = int(inserted[0])
            if label is not None:
                self._move(conn, label, number, head, "save", author, now)
        return self.get(number)

    def set_label(self, label: str, ref: str | int, *, author: str, expected: int | None = None) -> LabelMove:
        """Point `label` at a version (a revert when it is an older one). With `expected`, the
        move is refused if the label no longer points there (the app's optimistic move)."""
        check_label(label)
        author = _check_text("author", author, MAX_AUTHOR_CHARS)
        version = self.resolve(ref)
        now = datetime.now(UTC)
        with self._errors("move the label"), self.engine.begin() as conn:
            head = conn.execute(sa.select(_labels.c.version).where(_labels.c.name == label)).scalar_one_or_none()
            if expected is not None and head != expected:
                raise self._stale(conn, label, head, expected)
            self._move(conn, label, version.number, head, "label", author, now)
        return LabelMove(label, version.number, head, "label", author, now)

    def _move(self, conn: Connection, label: str, number: int, head: int | None,
              kind: Literal["save", "label"], author: str, now: datetime) -> None:
        if head is None:
            try:
                conn.execute(_labels.insert().values(name=label, version=number, updated_at=now, updated_by=author))
            except IntegrityError as e:
                # another save created the label first; the transaction is spoilt, so no lookup
                raise StaleSaveError(f"refused: {label!r} was created by another save while this one ran; "
                                     f"load {label!r}, redo your change there and save again",
                                     label=label, head=None, base=None) from e
        else:
            moved = conn.execute(_labels.update()
                                 .where(_labels.c.name == label, _labels.c.version == head)
                                 .values(version=number, updated_at=now, updated_by=author))
            if moved.rowcount != 1:
                raise self._stale(conn, label, None, head)
        conn.execute(_label_moves.insert().values(label=label, version=number, previous=head, kind=kind,
                                                  author=author, at=now))

    def _stale(self, conn: Connection, label: str, head: int | None, base: int | None) -> StaleSaveError:
        if head is None:
            head = conn.execute(sa.select(_labels.c.version).where(_labels.c.name == label)).scalar_one_or_none()
        if base is None:
            msg = (f"label {label!r} already points at version {head}; say which version your policy is based "
                   f"on (export it with `coachctx policy show {label}`, or pass --base {head} if you started "
                   f"from it)")
        else:
            who = conn.execute(sa.select(_versions.c.author, _versions.c.message, _versions.c.created_at)
                               .where(_versions.c.number == head)).first() if head is not None else None
            since = (f": version {head} by {who.author} at {_utc(who.created_at):%Y-%m-%d %H:%M} UTC "
                     f"({_one_line(who.message)!r})") if who is not None else ""
            msg = (f"refused: your policy is based on version {base}, but {label!r} has moved on{since}; "
                   f"load version {head}, redo your change there and save again")
        return StaleSaveError(msg, label=label, head=head, base=base)

    # --- drafts: unsaved work, kept across reloads ---------------------------------------------

    draft_max_age: timedelta = DRAFT_MAX_AGE
    max_drafts: int = MAX_DRAFTS

    def put_draft(self, draft_id: str, text: str, base: int | None, *, now: datetime | None = None) -> None:
        """Keep (or overwrite) the draft under `draft_id`, and drop stale ones (`DRAFT_MAX_AGE`, `MAX_DRAFTS`)."""
        if not DRAFT_ID_PATTERN.match(draft_id):
            raise StoreError(f"draft id {draft_id!r} is not valid")
        if len(text) > MAX_DRAFT_CHARS:
            raise StoreError(f"the draft is {len(text)} characters; the limit is {MAX_DRAFT_CHARS}")
        now = now or datetime.now(UTC)
        with self._errors("keep the draft"), self.engine.begin() as conn:
            updated = conn.execute(_drafts.update().where(_drafts.c.id == draft_id)
                                   .values(yaml=text, base=base, updated_at=now))
            if updated.rowcount == 0:
                conn.execute(_drafts.insert().values(id=draft_id, yaml=text, base=base, updated_at=now))
            conn.execute(_drafts.delete().where(_drafts.c.updated_at < now - self.draft_max_age))
            oldest_kept = conn.execute(sa.select(_drafts.c.updated_at).order_by(_drafts.c.updated_at.desc())
                                       .offset(self.max_drafts - 1).limit(1)).scalar()
            if oldest_kept is not None:
                conn.execute(_drafts.delete().where(_drafts.c.updated_at < oldest_kept))

    def get_draft(self, draft_id: str) -> Draft | None:
        if not DRAFT_ID_PATTERN.match(draft_id):
            return None
        with self._errors("read the draft"), self.engine.connect() as conn:
            row = conn.execute(sa.select(_drafts).where(_drafts.c.id == draft_id)).first()
        if row is None:
            return None
        return Draft(id=row.id, yaml=row.yaml, base=row.base, updated_at=_utc(row.updated_at))

    # --- question labels: what the rules should have decided ------------------------------------

    def add_question_labels(self, labels: Sequence[QuestionLabel]) -> list[QuestionLabel]:
        """Check every label, then store them all in one transaction (or none). A label equal to
        one already stored (same question, athlete, intents, needs, origin and author) is not
        stored twice: the stored one is returned in its place."""
        checked = [check_question_label(label) for label in labels]
        now = datetime.now(UTC)
        out: list[QuestionLabel] = []
        with self._errors("store the label"), self.engine.begin() as conn:
            for label in checked:
                row = _label_row(label, now)
                same = conn.execute(sa.select(_question_labels).where(*(
                    _question_labels.c[k] == v if v is not None else _question_labels.c[k].is_(None)
                    for k, v in row.items() if k in _IDENTITY))).first()
                if same is not None:
                    out.append(_question_label(same._mapping))
                    continue
                inserted = conn.execute(_question_labels.insert().values(**row)).inserted_primary_key
                assert inserted is not None
                out.append(QuestionLabel(**{**label.__dict__, "created_at": row["created_at"],
                                            "id": int(inserted[0])}))
        return out

    def add_question_label(self, label: QuestionLabel) -> QuestionLabel:
        return self.add_question_labels([label])[0]

    def question_labels(self) -> list[QuestionLabel]:
        """Every stored label, oldest first (so row numbers stay put as labels are added)."""
        with self._errors("read the labels"), self.engine.connect() as conn:
            rows = conn.execute(sa.select(_question_labels).order_by(_question_labels.c.id))
            return [_question_label(r._mapping) for r in rows]

    def delete_question_label(self, label_id: int) -> bool:
        """Remove one label; False when there was none with that id."""
        with self._errors("delete the label"), self.engine.begin() as conn:
            return conn.execute(_question_labels.delete().where(_question_labels.c.id == label_id)).rowcount == 1

    # --- checking ------------------------------------------------------------------------------

    def verify(self) -> list[str]:
        """Problems found, empty when sound: database integrity (SQLite), every version parses
        and its digest matches, every label points at a version."""
        problems: list[str] = []
        with self._errors("verify"), self.engine.connect() as conn:
            if self._sqlite:
                result = [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check")]
                if result != ["ok"]:
                    problems.append("integrity_check: " + "; ".join(map(str, result)))
            numbers = set()
            for row in conn.execute(sa.select(_versions)):
                v = _version(row._mapping)
                numbers.add(v.number)
                try:
                    digest = v.policy().digest
                except PolicyError as e:
                    problems.append(f"version {v.number} does not parse: {e}")
                    continue
                if digest != v.digest:
                    problems.append(f"version {v.number}: digest is {digest}, recorded {v.digest}")
            for row in conn.execute(sa.select(_versions.c.number, _versions.c.parent)):
                if row.parent is not None and row.parent not in numbers:
                    problems.append(f"version {row.number}: parent {row.parent} is missing")
            for row in conn.execute(sa.select(_labels)):
                if row.version not in numbers:
                    problems.append(f"label {row.name} points at missing version {row.version}")
        return problems


ACCEPTED_STORES: Final = ("a SQLite file in an existing directory (a path, or sqlite:///PATH), or a SQLAlchemy URL "
                          "such as postgresql://user@host/db")


def _check_sqlite_file(path: Path, *, create: bool = True) -> None:
    """Only the per-user default's directory is created; any other path must be in a directory that
    exists (a typo in --store must not leave a tree of directories behind), and must be a file
    if it exists (SQLite would block forever on a FIFO). Without `create`, the file must exist:
    SQLite would create an empty one on connecting, and a read must leave nothing behind."""
    default = DEFAULT_STORE_FILE.expanduser()
    if path == default:
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:  # HOME unwritable, or a file where the directory should be
                raise StoreError(f"store {path}: cannot create {path.parent}: {e.strerror or e}") from e
    elif not path.parent.is_dir():
        raise StoreError(f"store {path}: the directory {path.parent} does not exist, and coachctx creates no "
                         f"directories but its default ({default.parent}); use {ACCEPTED_STORES}")
    if not create and not path.exists():
        raise MissingStoreError(f"store {path} does not exist: nothing has been saved there yet (save a "
                                "version with `coachctx policy save FILE -m MESSAGE`)")
    if path.exists() and not path.is_file():
        raise StoreError(f"store {path} is not a regular file; use {ACCEPTED_STORES}")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")  # another process saving: wait, do not fail at once
    cursor.close()


def _version(row: sa.RowMapping) -> Version:
    return Version(number=row["number"], parent=row["parent"], digest=row["digest"], author=row["author"],
                   message=row["message"], created_at=_utc(row["created_at"]), yaml=row["yaml"])


def _check_text(what: str, value: str, limit: int, empty: str | None = None) -> str:
    """A message, an author or a labelled question: one line of plain text. A newline, a tab or an
    escape sequence would break the history table, the label log and `policy show`'s first line."""
    if not isinstance(value, str) or not value.strip():
        if empty is None:
            empty = f"say {'what changed and why' if what == 'message' else 'who you are'}"
        raise StoreError(f"{what} is empty: {empty}")
    value = value.strip()
    bad = control_character(value)
    if bad is not None:
        raise StoreError(f"{what} holds the control character {bad}; write it as one line of plain text")
    if len(value) > limit:
        raise StoreError(f"{what} is {len(value)} characters; the limit is {limit}")
    return value


_IDENTITY: Final = ("question", "athlete", "intents", "needs", "origin", "author")


def _names(values: Any, known: Sequence[str], what: str, kind: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not all(isinstance(v, str) for v in values):
        raise StoreError(f"{what}: expected a list of {kind} names, got {printable(repr(values))[:60]}")
    for v in values:
        if v not in known:
            near = difflib.get_close_matches(v, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise StoreError(f"{what}: unknown {kind} {printable(v)[:40]!r}{hint}; use {', '.join(known)}")
    return tuple(dict.fromkeys(values))  # once each, in the order given


def _optional(value: Any, what: str, allowed: Sequence[str] | re.Pattern[str]) -> str | None:
    if value is None or value == "":
        return None
    ok = isinstance(value, str) and (allowed.match(value) if isinstance(allowed, re.Pattern) else value in allowed)
    if not ok:
        shown = printable(repr(value))[:60]
        use = f"; use one of {', '.join(allowed)}" if not isinstance(allowed, re.Pattern) else ""
        raise StoreError(f"{what}: {shown} is not valid{use}")
    return str(value)


def check_question_label(label: QuestionLabel) -> QuestionLabel:
    """The label with its text trimmed, or `StoreError` naming the field at fault: a question that
    is empty, too long or holds a control character, an unknown intent or fragment, an author
    that is not one line, an unknown scope, language, origin or route source."""
    question = _check_text("question", label.question, MAX_QUESTION_CHARS, "label the question the athlete asked")
    intents = _names(label.intents, INTENTS, "intents", "intent")
    if not intents:
        raise StoreError("intents is empty: say which intent(s) the question should have gone to")
    needs = None if label.needs is None else _names(label.needs, FRAGMENT_NAMES, "needs", "fragment")
    scope = _optional(label.scope, "scope", [s for s in SCOPE_REQUESTS if s != "auto"])
    return QuestionLabel(
        question=question, intents=intents, author=_check_text("author", label.author, MAX_AUTHOR_CHARS),
        athlete=_optional(label.athlete, "athlete", ATHLETE_PATTERN), needs=needs, scope=scope,
        lang=_optional(label.lang, "lang", list(LANGUAGES)),
        origin=_optional(label.origin, "origin", ORIGINS) or "coach",  # type: ignore[arg-type]
        created_at=label.created_at, policy_digest=_optional(label.policy_digest, "policy_digest", DIGEST_PATTERN),
        route_source=_optional(label.route_source, "route_source", ROUTE_SOURCES),
        routed=_optional(label.routed, "routed", INTENTS), id=label.id)


def _label_row(label: QuestionLabel, now: datetime) -> dict[str, Any]:
    return {"question": label.question, "athlete": label.athlete, "intents": " ".join(label.intents),
            "needs": None if label.needs is None else " ".join(label.needs), "scope": label.scope,
            "lang": label.lang, "origin": label.origin, "author": label.author,
            "created_at": label.created_at or now, "policy_digest": label.policy_digest,
            "route_source": label.route_source, "routed": label.routed}


def _question_label(row: sa.RowMapping) -> QuestionLabel:
    return QuestionLabel(
        question=row["question"], intents=tuple(row["intents"].split()), author=row["author"],
        athlete=row["athlete"], needs=None if row["needs"] is None else tuple(row["needs"].split()),
        scope=row["scope"], lang=row["lang"], origin=row["origin"], created_at=_utc(row["created_at"]),
        policy_digest=row["policy_digest"], route_source=row["route_source"], routed=row["routed"], id=row["id"])


def export_text(version: Version, labels: Mapping[str, Label] | None = None) -> str:
    """The version's YAML under a first line naming it, which `save` reads back as the base."""
    on = [name for name, label in (labels or {}).items() if label.version == version.number]
    tags = f" ({', '.join(on)})" if on else ""
    header = (f"{HEADER_PREFIX}{version.number}{tags}, saved {version.created_at:%Y-%m-%d %H:%M} UTC by "
              f"{_one_line(version.author)}: {_one_line(version.message)}")
    body = version.yaml if version.yaml.endswith("\n") else version.yaml + "\n"
    return f"{header}\n{body}"


# --- naming a policy: a file, a version number or a label -------------------------------------


@dataclass(frozen=True)
class PolicyRef:
    """A policy and where it came from, as a Decision records it."""

    policy: Policy
    source: str
    """`policy/default.yaml`, or `store:live` / `store:v3`."""
    version: int | None
    """The store version, None for a file."""


def looks_like_file(ref: str) -> bool:
    return Path(ref).is_file() or ref.endswith((".yaml", ".yml")) or os.sep in ref or "/" in ref


def resolve_policy(ref: str, store: PolicyStore | str | None = None) -> PolicyRef:
    """A policy named by a file path, a version number or a label. A store is opened only when
    the reference is not a file (`store` may be an open store, a URL, or None for the default)."""
    if looks_like_file(ref):
        if (LABEL_PATTERN.match(ref) or _VERSION_REF.match(ref)) and "/" not in ref and os.sep not in ref:
            # a file named `live` (or `3`) beside the user would silently win over the store's label
            raise StoreError(f"{ref!r} names both a file here and a store version or label; write ./{ref} for "
                             "the file, or move the file away to use the store")
        return PolicyRef(load_policy(ref), ref, None)
    if isinstance(store, PolicyStore):
        version = store.resolve(ref)
    else:
        with PolicyStore(store, create=False) as opened:
            version = opened.resolve(ref)
    label = None if _VERSION_REF.match(ref.strip()) else ref
    return PolicyRef(version.policy(), f"store:{label or f'v{version.number}'}", version.number)
