"""Versions and the labels that point at them: reading the history, saving a version (optimistic,
by compare-and-swap on the label), pointing a label, every move logged, and checking it all."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from coachctx.engine.policy import Policy, parse_policy
from coachctx.errors import PolicyError
from coachctx.tools.store import tables
from coachctx.tools.store.checks import (
    MAX_AUTHOR_CHARS,
    MAX_MESSAGE_CHARS,
    VERSION_REF,
    check_label,
    check_text,
    one_line,
)
from coachctx.tools.store.database import Database
from coachctx.tools.store.errors import (
    ChangedVersionError,
    NoChangeError,
    StaleSaveError,
    UnknownVersionError,
)
from coachctx.tools.store.header import based_on, strip_header
from coachctx.tools.store.tables import utc


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
    parsed: Policy | None = field(default=None, compare=False, repr=False)
    """The policy `save` just parsed from `yaml`, so reading it back (to lint it) parses nothing again."""

    def policy(self) -> Policy:
        if self.parsed is not None:
            return self.parsed
        return self.checked(parse_policy(self.yaml, f"version {self.number}"))

    def checked(self, policy: Policy) -> Policy:
        """`policy`, read from this version's YAML, when it is the policy that was saved: a YAML
        edited in the database since would decide under the version's number but not as saved."""
        if policy.digest != self.digest:
            raise ChangedVersionError(
                f"version {self.number} was changed in the store after it was saved: its YAML now has digest "
                f"{policy.digest}, it was saved as {self.digest}; save the policy you want as a new version")
        return policy


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


class VersionStore(Database):
    """The versions and labels part of `PolicyStore`."""

    # --- reading -------------------------------------------------------------------------------

    def get(self, number: int) -> Version:
        with self._errors("read"), self.engine.connect() as conn:
            row = conn.execute(sa.select(tables.versions).where(tables.versions.c.number == number)).first()
            if row is None:
                raise UnknownVersionError(f"no version {number} in the store{self._range(conn)}")
        return _version(row._mapping)

    def resolve(self, ref: str | int) -> Version:
        """A version by number (`3` or `v3`) or by the label pointing at it (`live`)."""
        if isinstance(ref, int):
            return self.get(ref)
        m = VERSION_REF.match(ref.strip())
        if m:
            return self.get(int(m.group(1)))
        labels = self.labels()
        if ref not in labels:
            known = ", ".join(labels) if labels else "none yet"
            raise UnknownVersionError(f"no version or label {ref!r} in the store (labels: {known})")
        return self.get(labels[ref].version)

    def history(self, limit: int | None = None) -> list[Version]:
        """Versions, newest first."""
        query = sa.select(tables.versions).order_by(tables.versions.c.number.desc())
        if limit is not None:
            query = query.limit(limit)
        with self._errors("read"), self.engine.connect() as conn:
            return [_version(r._mapping) for r in conn.execute(query)]

    def labels(self) -> dict[str, Label]:
        with self._errors("read"), self.engine.connect() as conn:
            rows = conn.execute(sa.select(tables.labels).order_by(tables.labels.c.name))
            return {r.name: Label(r.name, r.version, utc(r.updated_at), r.updated_by) for r in rows}

    def label_log(self, label: str) -> list[LabelMove]:
        """Every move of `label`, newest first: saves that advanced it and reverts alike."""
        moves = tables.label_moves
        query = sa.select(moves).where(moves.c.label == label).order_by(moves.c.id.desc())
        with self._errors("read"), self.engine.connect() as conn:
            return [LabelMove(r.label, r.version, r.previous, r.kind, r.author, utc(r.at)) for r in conn.execute(query)]

    def _range(self, conn: Connection) -> str:
        number = tables.versions.c.number
        low, high = conn.execute(sa.select(sa.func.min(number), sa.func.max(number))).one()
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
        message, author = check_text("message", message, MAX_MESSAGE_CHARS), check_text("author", author,
                                                                                        MAX_AUTHOR_CHARS)
        if label is not None:
            check_label(label)
        now = datetime.now(UTC)
        versions = tables.versions
        with self.writing("save") as conn:
            parent_digest = None
            if base is not None:
                parent_digest = conn.execute(
                    sa.select(versions.c.digest).where(versions.c.number == base)).scalar_one_or_none()
                if parent_digest is None:
                    raise UnknownVersionError(f"the policy is based on version {base}, which is not in the store"
                                              f"{self._range(conn)}")
            head = None
            if label is not None:
                head = _head(conn, label)
                if head is not None and base != head:
                    raise self._stale(conn, label, head, base)
            if parent_digest == policy.digest:
                raise NoChangeError(f"nothing to save: the policy is identical to version {base}")
            if base is None:  # from no version: one that already holds this policy is not saved twice
                same = conn.execute(sa.select(sa.func.min(versions.c.number))
                                    .where(versions.c.digest == policy.digest)).scalar_one_or_none()
                if same is not None:
                    raise NoChangeError(f"nothing to save: version {same} already holds this exact policy "
                                        f"(digest {policy.digest}); point a label at version {same} instead")
            inserted = conn.execute(versions.insert().values(
                parent=base, digest=policy.digest, author=author, message=message, created_at=now, yaml=body,
            )).inserted_primary_key
            assert inserted is not None
            number = int(inserted[0])
            if label is not None:
                self._move(conn, label, number, head, "save", author, now)
        return replace(self.get(number), parsed=policy)

    def set_label(self, label: str, ref: str | int, *, author: str, expected: int | None = None) -> LabelMove:
        """Point `label` at a version (a revert when it is an older one). With `expected`, the
        move is refused if the label no longer points there (the app's optimistic move). A label
        that already points there is left as it is, with no move recorded (`previous` == `version`)."""
        check_label(label)
        author = check_text("author", author, MAX_AUTHOR_CHARS)
        version = self.resolve(ref)
        now = datetime.now(UTC)
        with self.writing("move the label") as conn:
            head = _head(conn, label)
            if expected is not None and head != expected:
                raise self._stale(conn, label, head, expected)
            if head != version.number:  # a label already there is not moved: the label log records moves only
                self._move(conn, label, version.number, head, "label", author, now)
        return LabelMove(label, version.number, head, "label", author, now)

    def _move(self, conn: Connection, label: str, number: int, head: int | None,
              kind: Literal["save", "label"], author: str, now: datetime) -> None:
        labels = tables.labels
        if head is None:
            try:
                conn.execute(labels.insert().values(name=label, version=number, updated_at=now, updated_by=author))
            except IntegrityError as e:
                # another save created the label first; the transaction is spoilt, so no lookup
                raise StaleSaveError(f"refused: {label!r} was created by another save while this one ran; "
                                     f"load {label!r}, redo your change there and save again",
                                     label=label, head=None, base=None) from e
        else:
            moved = conn.execute(labels.update()
                                 .where(labels.c.name == label, labels.c.version == head)
                                 .values(version=number, updated_at=now, updated_by=author))
            if moved.rowcount != 1:
                raise self._stale(conn, label, None, head)
        conn.execute(tables.label_moves.insert().values(label=label, version=number, previous=head, kind=kind,
                                                        author=author, at=now))

    def _stale(self, conn: Connection, label: str, head: int | None, base: int | None) -> StaleSaveError:
        if head is None:
            head = _head(conn, label)
        if base is None:
            msg = (f"label {label!r} already points at version {head}; say which version your policy is based "
                   f"on (export it with `coachctx policy show {label}`, or pass --base {head} if you started "
                   f"from it)")
        else:
            versions = tables.versions
            who = conn.execute(sa.select(versions.c.author, versions.c.message, versions.c.created_at)
                               .where(versions.c.number == head)).first() if head is not None else None
            since = (f": version {head} by {who.author} at {utc(who.created_at):%Y-%m-%d %H:%M} UTC "
                     f"({one_line(who.message)!r})") if who is not None else ""
            msg = (f"refused: your policy is based on version {base}, but {label!r} has moved on{since}; "
                   f"load version {head}, redo your change there and save again")
        return StaleSaveError(msg, label=label, head=head, base=base)

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
            for row in conn.execute(sa.select(tables.versions)):
                v = _version(row._mapping)
                numbers.add(v.number)
                try:
                    v.policy()
                except PolicyError as e:
                    problems.append(f"version {v.number} does not parse: {e}")
                except ChangedVersionError as e:
                    problems.append(str(e))
            for row in conn.execute(sa.select(tables.versions.c.number, tables.versions.c.parent)):
                if row.parent is not None and row.parent not in numbers:
                    problems.append(f"version {row.number}: parent {row.parent} is missing")
            for row in conn.execute(sa.select(tables.labels)):
                if row.version not in numbers:
                    problems.append(f"label {row.name} points at missing version {row.version}")
        return problems


def _head(conn: Connection, label: str) -> int | None:
    """The version `label` points at now, None when there is no such label."""
    labels = tables.labels
    return conn.execute(sa.select(labels.c.version).where(labels.c.name == label)).scalar_one_or_none()


def _version(row: sa.RowMapping) -> Version:
    return Version(number=row["number"], parent=row["parent"], digest=row["digest"], author=row["author"],
                   message=row["message"], created_at=utc(row["created_at"]), yaml=row["yaml"])
