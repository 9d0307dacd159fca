"""The store's schema: every table in one place, and how a stored time reads back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from coachctx.reading import shown
from coachctx.tools.store.checks import MAX_AUTHOR_CHARS
from coachctx.tools.store.errors import StoreError


class StoredTime(sa.TypeDecorator[datetime]):
    """A time column, `DateTime(timezone=True)`. SQLite keeps it as text, so a row edited by hand
    can hold anything there (`1765121131`, "garbage"), and SQLAlchemy's own reading then raised a
    TypeError or ValueError from inside every command that read the row (an adversarial pass):
    here such a value is a `StoreError` naming the column and the value. Written exactly as
    SQLAlchemy writes it, so stores made before read and sort as they did."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def __init__(self, column: str) -> None:
        super().__init__()
        self.column = column

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        return dialect.type_descriptor(sa.Text() if dialect.name == "sqlite" else sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> Any:
        if value is None or dialect.name != "sqlite":
            return value
        return _sqlite_time(dialect)[0](value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> datetime | None:
        if value is None or isinstance(value, datetime):
            return value
        try:
            read = _sqlite_time(dialect)[1](value)
        except (ValueError, TypeError):
            read = None
        if not isinstance(read, datetime):
            raise StoreError(f"the store holds {shown(value)} as a {self.column}, which is not a time such as "
                             "2026-12-07 15:30:00 (was it edited by hand?); correct or delete that row")
        return read


@lru_cache(maxsize=4)
def _sqlite_time(dialect: sa.Dialect) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """SQLAlchemy's own SQLite DATETIME writer and reader, made once per dialect, not once per value."""
    time = sqlite.DATETIME()
    write, read = time.bind_processor(dialect), time.result_processor(dialect, None)
    assert write is not None and read is not None
    return write, read

metadata = sa.MetaData()

versions = sa.Table(
    "policy_versions", metadata,
    sa.Column("number", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("parent", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=True),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("author", sa.String(MAX_AUTHOR_CHARS), nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("created_at", StoredTime("created_at"), nullable=False),
    sa.Column("yaml", sa.Text, nullable=False),
    sqlite_autoincrement=True,  # a number is never handed out twice
)

labels = sa.Table(
    "policy_labels", metadata,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("version", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=False),
    sa.Column("updated_at", StoredTime("updated_at"), nullable=False),
    sa.Column("updated_by", sa.String(MAX_AUTHOR_CHARS), nullable=False),
)

label_moves = sa.Table(
    "policy_label_moves", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.String(32), nullable=False, index=True),
    sa.Column("version", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=False),
    sa.Column("previous", sa.Integer, sa.ForeignKey("policy_versions.number"), nullable=True),
    sa.Column("kind", sa.String(8), nullable=False),
    sa.Column("author", sa.String(MAX_AUTHOR_CHARS), nullable=False),
    sa.Column("at", StoredTime("at"), nullable=False),
    sqlite_autoincrement=True,
)

# Unsaved work from the playground, one row per draft id (the id sits in the page's URL), so a
# reload or a restart of the app does not lose an edited policy. Not a version: no digest, no
# validation, overwritten in place; saving it as a version is a separate, deliberate step.
drafts = sa.Table(
    "policy_drafts", metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("yaml", sa.Text, nullable=False),
    sa.Column("base", sa.Integer, nullable=True),
    sa.Column("updated_at", StoredTime("updated_at"), nullable=False),
)

# Questions a coach (or the model) labelled with the intents that would have been right: what
# `coachctx suggest` and the playground's Suggest tab learn from. Not to be confused with the
# labels above, which are names of versions.
question_labels = sa.Table(
    "question_labels", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("athlete", sa.String(64), nullable=True),
    sa.Column("intents", sa.String(200), nullable=False),
    sa.Column("needs", sa.String(400), nullable=True),
    sa.Column("scope", sa.String(16), nullable=True),
    sa.Column("lang", sa.String(8), nullable=True),
    sa.Column("origin", sa.String(8), nullable=False),
    sa.Column("author", sa.String(MAX_AUTHOR_CHARS), nullable=False),
    sa.Column("created_at", StoredTime("created_at"), nullable=False),
    sa.Column("policy_digest", sa.String(64), nullable=True),
    sa.Column("route_source", sa.String(16), nullable=True),
    sa.Column("routed", sa.String(32), nullable=True),
    sqlite_autoincrement=True,
)


def utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; everything stored here is UTC
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
