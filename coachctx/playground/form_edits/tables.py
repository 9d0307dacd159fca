"""The form's table editors: an intent's vocabulary and a scope's modifiers as rows, an editor's
edit state applied to them, and the rows back to the draft's data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import pandas as pd

from coachctx.playground.form_edits.data import get


def vocabulary_rows(data: Mapping[str, Any], intent: str) -> pd.DataFrame:
    """The intent's vocabulary as (language, term, weight) rows, for a table editor."""
    rows = []
    by_language = get(get(data, "vocabulary"), intent)
    if isinstance(by_language, Mapping):
        for language, terms in by_language.items():
            if isinstance(terms, Mapping):
                rows += [{"language": str(language), "term": str(t), "weight": w} for t, w in terms.items()]
    return pd.DataFrame(rows, columns=["language", "term", "weight"])


def vocabulary_from_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows back to {language: {term: weight}}; rows without a language or a term are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        language, term = str(row.get("language") or "").strip(), str(row.get("term") or "").strip()
        if language and term:
            weight = row.get("weight")
            out.setdefault(language, {})[term] = 1.0 if weight is None or weight != weight else weight
    return out


def apply_table_edits(rows: Sequence[Mapping[str, Any]], edits: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Apply a data editor's edit state ({edited_rows, added_rows, deleted_rows}) to its rows."""
    out = [dict(r) for r in rows]
    for idx, changes in (edits.get("edited_rows") or {}).items():
        i = int(idx)
        if 0 <= i < len(out):
            out[i].update(changes)
    deleted = {int(i) for i in edits.get("deleted_rows") or []}
    out = [r for i, r in enumerate(out) if i not in deleted]
    out += [dict(r) for r in edits.get("added_rows") or []]
    return out


MODIFIER_COLUMNS: Final = ("action", "fragment", "reason", "intents")


def modifier_rows(data: Mapping[str, Any], scope: str) -> pd.DataFrame:
    mods = get(get(get(data, "scopes"), scope), "modifiers")
    mods = mods if isinstance(mods, list) else []
    rows = [{"action": m.get("action"), "fragment": m.get("fragment"), "reason": m.get("reason"),
             "intents": ", ".join(m["intents"]) if isinstance(m.get("intents"), list) else ""}
            for m in mods if isinstance(m, Mapping)]
    return pd.DataFrame(rows, columns=list(MODIFIER_COLUMNS))


def modifiers_from_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if not any(row.get(c) for c in ("action", "fragment", "reason")):
            continue
        mod: dict[str, Any] = {"action": row.get("action"), "fragment": row.get("fragment"),
                               "reason": row.get("reason")}
        intents = [s.strip() for s in str(row.get("intents") or "").split(",") if s.strip()]
        if intents:
            mod["intents"] = intents
        out.append(mod)
    return out
