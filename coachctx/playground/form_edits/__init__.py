"""Form edits on the draft's text: each rewrites only the value it changes (the comments and
layout stay) and says what it did.

`data` reads the draft as plain data and changes it as a copy; `nodes` finds where a value stands
in the text; `text` makes the edit on the text itself; `feedback` says what an edit did; `tables`
turns vocabularies and modifiers into rows for the table editors and back.
"""

from __future__ import annotations

from coachctx.playground.form_edits.data import (
    draft_data,
    draft_to_yaml,
    draft_value,
    find_term,
    with_setting,
)
from coachctx.playground.form_edits.feedback import (
    EditFeedback,
    list_edit_feedback,
    show_value,
)
from coachctx.playground.form_edits.tables import (
    MODIFIER_COLUMNS,
    apply_table_edits,
    modifier_rows,
    modifiers_from_rows,
    vocabulary_from_rows,
    vocabulary_rows,
)
from coachctx.playground.form_edits.text import (
    _round_trip as _round_trip,  # the last way before a canonical dump, which a test calls directly
)
from coachctx.playground.form_edits.text import (
    add_term_text,
    edit_draft_text,
)

__all__ = [
    "MODIFIER_COLUMNS",
    "EditFeedback",
    "add_term_text",
    "apply_table_edits",
    "draft_data",
    "draft_to_yaml",
    "draft_value",
    "edit_draft_text",
    "find_term",
    "list_edit_feedback",
    "modifier_rows",
    "modifiers_from_rows",
    "show_value",
    "vocabulary_from_rows",
    "vocabulary_rows",
    "with_setting",
]
