"""Drafts: the playground's unsaved work, kept across reloads under the id in the page's URL.
Not versions: no digest, no validation, overwritten in place, and bounded in age and number."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

import sqlalchemy as sa

from coachctx.tools.store import tables
from coachctx.tools.store.database import Database
from coachctx.tools.store.errors import StoreError
from coachctx.tools.store.tables import utc

DRAFT_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{8,32}\Z")
MAX_DRAFT_CHARS: Final = 1024 * 1024
DRAFT_MAX_AGE: Final = timedelta(days=30)
MAX_DRAFTS: Final = 1000
"""Drafts are bounded: one untouched for DRAFT_MAX_AGE is dropped, and so are all but the newest
MAX_DRAFTS (each is a browser session's unsaved edit, not a version)."""


@dataclass(frozen=True)
class Draft:
    """A playground draft as last kept: its text (valid or not) and the version it builds on."""

    id: str
    yaml: str
    base: int | None
    updated_at: datetime


class DraftStore(Database):
    """The drafts part of `PolicyStore`."""

    draft_max_age: timedelta = DRAFT_MAX_AGE
    max_drafts: int = MAX_DRAFTS

    def put_draft(self, draft_id: str, text: str, base: int | None, *, now: datetime | None = None) -> None:
        """Keep (or overwrite) the draft under `draft_id`, and drop stale ones (`DRAFT_MAX_AGE`, `MAX_DRAFTS`)."""
        if not DRAFT_ID_PATTERN.match(draft_id):
            raise StoreError(f"draft id {draft_id!r} is not valid")
        if len(text) > MAX_DRAFT_CHARS:
            raise StoreError(f"the draft is {len(text)} characters; the limit is {MAX_DRAFT_CHARS}")
        now = now or datetime.now(UTC)
        drafts = tables.drafts
        with self.writing("keep the draft") as conn:
            updated = conn.execute(drafts.update().where(drafts.c.id == draft_id)
                                   .values(yaml=text, base=base, updated_at=now))
            if updated.rowcount == 0:
                conn.execute(drafts.insert().values(id=draft_id, yaml=text, base=base, updated_at=now))
            conn.execute(drafts.delete().where(drafts.c.updated_at < now - self.draft_max_age))
            oldest_kept = conn.execute(sa.select(drafts.c.updated_at).order_by(drafts.c.updated_at.desc())
                                       .offset(self.max_drafts - 1).limit(1)).scalar()
            if oldest_kept is not None:
                conn.execute(drafts.delete().where(drafts.c.updated_at < oldest_kept))

    def get_draft(self, draft_id: str) -> Draft | None:
        if not DRAFT_ID_PATTERN.match(draft_id):
            return None
        with self._errors("read the draft"), self.engine.connect() as conn:
            row = conn.execute(sa.select(tables.drafts).where(tables.drafts.c.id == draft_id)).first()
        if row is None:
            return None
        return Draft(id=row.id, yaml=row.yaml, base=row.base, updated_at=utc(row.updated_at))
