"""`PolicyStore`: the versioned policy store as one object, made of its parts (versions and
labels, drafts, question labels) over one database."""

from __future__ import annotations

from coachctx.tools.store.drafts import DraftStore
from coachctx.tools.store.question_labels import QuestionLabelStore
from coachctx.tools.store.versions import VersionStore


class PolicyStore(VersionStore, DraftStore, QuestionLabelStore):
    """Versions and labels in one SQL database. Safe to share between processes."""
