"""What a form edit did, in a coach's words, with a one-click follow-up where it probably did not
do what was meant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coachctx.playground.form_edits.data import get
from coachctx.playground.policy_text import _show
from coachctx.playground.words import _and, fragment_title


@dataclass(frozen=True)
class EditFeedback:
    """What a form edit did, in a coach's words; `offer` is a one-click follow-up
    (label, path, value) when the edit probably did not do what was meant."""

    kind: str  # "ok", "info" (nothing changed), "warning" (done, but read this)
    message: str
    offer: tuple[str, tuple[str | int, ...], Any] | None = None


def show_value(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, float):
        return f"{value:g}"
    return _show(value)


def _names(fragments: Sequence[str]) -> str:
    return _and([fragment_title(f) for f in fragments])


def list_edit_feedback(data: Mapping[str, Any], intent: str, field: str, new: Sequence[str]) -> EditFeedback:
    """Feedback for a change to an intent's primary, secondary or exclude list."""
    spec = get(get(data, "intents"), intent)
    old_values = get(spec, field)
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
        asked = set(get(spec, "primary") or []) | set(get(spec, "secondary") or [])
        still_out = [f for f in removed if f not in asked]
        if still_out:
            message += (f" An exclude only withholds a fact the intent might otherwise get (from another intent "
                        f"with evidence, or while routing is unsure). {intent} does not ask for "
                        f"{_names(still_out)} itself, so on a clear {intent} question it stays out — now as "
                        "“not asked for” instead of “excluded”. To send it, add it to the secondary list.")
            secondary = [f for f in (get(spec, "secondary") or []) if isinstance(f, str)]
            return EditFeedback("warning", message, (f"Add {_names(still_out)} to {intent}'s secondary list",
                                                     ("intents", intent, "secondary"), [*secondary, *still_out]))
    if field == "exclude" and added:
        message += (" It is withheld on questions routed to " + intent + " with certainty; a contender or a "
                    "question that names it still gets it.")
    return EditFeedback("ok", message)
