"""Question labels: questions labelled with the intents that would have been right, what
`coachctx suggest` and the playground's Suggest tab learn from. Every label is checked before it
is stored (`check_question_label`); not to be confused with the labels that name versions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

import sqlalchemy as sa

from coachctx.engine.fragments import FRAGMENT_NAMES
from coachctx.engine.pipeline import MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import INTENTS, LANGUAGES
from coachctx.engine.policy_errors import did_you_mean
from coachctx.engine.services import ATHLETE_ID
from coachctx.reading import shown
from coachctx.tools.store import tables
from coachctx.tools.store.checks import MAX_AUTHOR_CHARS, check_text
from coachctx.tools.store.database import Database
from coachctx.tools.store.errors import StoreError
from coachctx.tools.store.tables import utc

ATHLETE_PATTERN: Final = ATHLETE_ID
"""An athlete id as the services take it (lower-case letters, digits, - and _; never a path)."""
DIGEST_PATTERN: Final = re.compile(r"[0-9a-f]{6,64}\Z")
ROUTE_SOURCES: Final = ("rules", "model", "fallback")
ORIGINS: Final = ("coach", "model")
_IDENTITY: Final = ("question", "athlete", "intents", "needs", "origin", "author")
FEW_LABELS: Final = 16
"""Up to this many labels at once are each looked up in the store; more read the stored ones once."""


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
    """Set by the store when the label is added without one. Stored in UTC: an aware time is
    converted (10:00+05:00 is 05:00Z), a naive one is taken to be UTC already."""
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


class QuestionLabelStore(Database):
    """The question labels part of `PolicyStore`."""

    def add_question_labels(self, labels: Sequence[QuestionLabel]) -> list[QuestionLabel]:
        """Check every label, then store them all in one transaction (or none). A label equal to
        one already stored (same question, athlete, intents, needs, origin and author) is not
        stored twice: the stored one is returned in its place."""
        checked = [check_question_label(label) for label in labels]
        now = datetime.now(UTC)
        out: list[QuestionLabel] = []
        table = tables.question_labels
        with self.writing("store the label") as conn:
            # an import of many labels reads what is stored once, not once a label: the table has no
            # index to find an equal label by, and a query per label made an import quadratic
            stored = _stored_by_identity(conn) if len(checked) > FEW_LABELS else None
            for label in checked:
                row = _label_row(label, now)
                identity = tuple(row[k] for k in _IDENTITY)
                if stored is not None:
                    same = stored.get(identity)
                else:
                    found = conn.execute(sa.select(table).where(*(
                        table.c[k] == v if v is not None else table.c[k].is_(None)
                        for k, v in zip(_IDENTITY, identity, strict=True)))).first()
                    same = None if found is None else _question_label(found._mapping)
                if same is None:
                    inserted = conn.execute(table.insert().values(**row)).inserted_primary_key
                    assert inserted is not None
                    same = QuestionLabel(**{**label.__dict__, "created_at": row["created_at"], "id": int(inserted[0])})
                    if stored is not None:
                        stored[identity] = same
                out.append(same)
        return out

    def add_question_label(self, label: QuestionLabel) -> QuestionLabel:
        return self.add_question_labels([label])[0]

    def question_labels(self) -> list[QuestionLabel]:
        """Every stored label, oldest first (so row numbers stay put as labels are added)."""
        with self._errors("read the labels"), self.engine.connect() as conn:
            rows = conn.execute(sa.select(tables.question_labels).order_by(tables.question_labels.c.id))
            return [_question_label(r._mapping) for r in rows]

    def delete_question_label(self, label_id: int) -> bool:
        """Remove one label; False when there was none with that id."""
        table = tables.question_labels
        with self.writing("delete the label") as conn:
            return conn.execute(table.delete().where(table.c.id == label_id)).rowcount == 1


def check_question_label(label: QuestionLabel) -> QuestionLabel:
    """The label with its text trimmed, or `StoreError` naming the field at fault: a question that
    is empty, too long or holds a control character, an unknown intent or fragment, an author
    that is not one line, an unknown scope, language, origin or route source, or a time that is
    not a datetime or has no UTC equivalent. An aware time is converted to UTC (the store keeps
    no offset); a naive time is taken to be UTC."""
    question = check_text("question", label.question, MAX_QUESTION_CHARS, "label the question the athlete asked")
    intents = _names(label.intents, INTENTS, "intents", "intent")
    if not intents:
        raise StoreError("intents is empty: say which intent(s) the question should have gone to")
    needs = None if label.needs is None else _names(label.needs, FRAGMENT_NAMES, "needs", "fragment")
    scope = _optional(label.scope, "scope", [s for s in SCOPE_REQUESTS if s != "auto"])
    return QuestionLabel(
        question=question, intents=intents, author=check_text("author", label.author, MAX_AUTHOR_CHARS),
        athlete=_optional(label.athlete, "athlete", ATHLETE_PATTERN,
                          "an athlete id is lower-case letters, digits, - and _"), needs=needs, scope=scope,
        lang=_optional(label.lang, "lang", list(LANGUAGES)),
        origin=_optional(label.origin, "origin", ORIGINS) or "coach",  # type: ignore[arg-type]
        created_at=_utc_time(label.created_at), policy_digest=_optional(label.policy_digest, "policy_digest", DIGEST_PATTERN),
        route_source=_optional(label.route_source, "route_source", ROUTE_SOURCES),
        routed=_optional(label.routed, "routed", INTENTS), id=label.id)


def _names(values: Any, known: Sequence[str], what: str, kind: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not all(isinstance(v, str) for v in values):
        raise StoreError(f"{what}: expected a list of {kind} names, got {shown(values)}")
    for v in values:
        if v not in known:
            raise StoreError(f"{what}: unknown {kind} {shown(v)}{did_you_mean(v, known)}; use {', '.join(known)}")
    return tuple(dict.fromkeys(values))  # once each, in the order given


def _optional(value: Any, what: str, allowed: Sequence[str] | re.Pattern[str], form: str = "") -> str | None:
    """The value when it is one of `allowed` or matches it; `form` says what a pattern takes."""
    if value is None or value == "":
        return None
    ok = isinstance(value, str) and (allowed.match(value) if isinstance(allowed, re.Pattern) else value in allowed)
    if not ok:
        use = f"; use one of {', '.join(allowed)}" if not isinstance(allowed, re.Pattern) else f"; {form}" if form else ""
        raise StoreError(f"{what}: {shown(value)} is not valid{use}")
    return str(value)


def _utc_time(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise StoreError(f"at: expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=UTC)  # naive: UTC, as everything the store keeps and exports
    try:
        return value.astimezone(UTC)
    except OverflowError as e:  # 9999-12-31T23:59:59-23:59 is past the last datetime in UTC
        raise StoreError(f"at: {value.isoformat()} is outside the years 1 to 9999 once converted to UTC") from e


def _stored_by_identity(conn: sa.Connection) -> dict[tuple[Any, ...], QuestionLabel]:
    """Every stored label by what makes two labels equal (`_IDENTITY`), the first stored of equals."""
    stored: dict[tuple[Any, ...], QuestionLabel] = {}
    for row in conn.execute(sa.select(tables.question_labels).order_by(tables.question_labels.c.id)).mappings():
        stored.setdefault(tuple(row[k] for k in _IDENTITY), _question_label(row))
    return stored


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
        scope=row["scope"], lang=row["lang"], origin=row["origin"], created_at=utc(row["created_at"]),
        policy_digest=row["policy_digest"], route_source=row["route_source"], routed=row["routed"], id=row["id"])
