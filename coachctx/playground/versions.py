"""The policy store as tables: versions, labels and their moves, and where the policy in use came from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import pandas as pd

from coachctx.playground.words import _short
from coachctx.tools.store import Label, LabelMove, Version


@dataclass(frozen=True)
class PolicyOrigin:
    """Where the policy in use came from: `source` and `version` go into the Decision's
    `policy` record (and so into traces); `description` is for the page."""

    source: str
    version: str | None
    description: str


DRAFT_SOURCE: Final = "playground draft"


def labels_on(number: int, labels: Mapping[str, Label]) -> list[str]:
    return [name for name, label in labels.items() if label.version == number]


def version_title(v: Version, labels: Mapping[str, Label]) -> str:
    """'version 3 [live] · tighter injury excludes · ana'."""
    on = labels_on(v.number, labels)
    tags = f" [{', '.join(on)}]" if on else ""
    return f"version {v.number}{tags} · {_short(v.message)} · {v.author}"


def policy_origin(digest: str, *, checked_in_digest: str, checked_in_source: str, versions: Sequence[Version],
                  labels: Mapping[str, Label], base: int | None) -> PolicyOrigin:
    """Which stored version the policy in use equals, if any: the version the draft was loaded
    from first, then one a label points at, then the newest with the same digest."""
    same = [v for v in versions if v.digest == digest]
    pointed = {label.version for label in labels.values()}
    match = (next((v for v in same if v.number == base), None) or next((v for v in same if v.number in pointed), None)
             or (same[0] if same else None))
    if match is not None:
        on = labels_on(match.number, labels)
        tags = f" ({', '.join(on)})" if on else ""
        return PolicyOrigin(f"store:v{match.number}", str(match.number), f"stored version {match.number}{tags}")
    if digest == checked_in_digest:
        return PolicyOrigin(checked_in_source, None, f"the checked-in policy `{checked_in_source}`")
    if base is not None:
        return PolicyOrigin(f"{DRAFT_SOURCE}, edited from store:v{base}", None,
                            f"your unsaved draft, edited from version {base}")
    return PolicyOrigin(DRAFT_SOURCE, None, "your unsaved draft")


HISTORY_COLUMNS: Final = ("version", "labels", "author", "message", "saved (UTC)", "digest", "parent")


def history_frame(versions: Sequence[Version], labels: Mapping[str, Label]) -> pd.DataFrame:
    """Versions, newest first, with the labels pointing at each."""
    rows = [{"version": v.number, "labels": ", ".join(labels_on(v.number, labels)), "author": v.author,
             "message": v.message, "saved (UTC)": f"{v.created_at:%Y-%m-%d %H:%M:%S}", "digest": v.digest,
             "parent": v.parent} for v in versions]
    return pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))


def labels_frame(labels: Mapping[str, Label], digests: Mapping[int, str]) -> pd.DataFrame:
    rows = [{"label": name, "version": label.version, "digest": digests.get(label.version, "—"),
             "moved by": label.updated_by, "moved at (UTC)": f"{label.updated_at:%Y-%m-%d %H:%M:%S}"}
            for name, label in labels.items()]
    return pd.DataFrame(rows, columns=["label", "version", "digest", "moved by", "moved at (UTC)"])


def label_moves_frame(moves: Sequence[LabelMove]) -> pd.DataFrame:
    rows = [{"at (UTC)": f"{m.at:%Y-%m-%d %H:%M:%S}", "from": m.previous, "to": m.version,
             "how": "saved" if m.kind == "save" else "pointed (revert or promote)", "by": m.author} for m in moves]
    return pd.DataFrame(rows, columns=["at (UTC)", "from", "to", "how", "by"])


def describe_move(move: LabelMove) -> str:
    """'version 1 → 2, saved by ana at 2026-12-03 19:40 UTC'."""
    how = "saved" if move.kind == "save" else "pointed"
    before = f"version {move.previous} → " if move.previous is not None else "created at "
    return f"{before}version {move.version}, {how} by {move.author} at {move.at:%Y-%m-%d %H:%M} UTC"


def default_save_label(labels: Mapping[str, Label], base: int | None) -> str | None:
    """The label a save moves by default: `draft` when the save can move it (it does not exist
    yet, or points at the version the draft is based on), else none, so the default save succeeds."""
    draft = labels.get("draft")
    return "draft" if draft is None or draft.version == base else None


def previous_version(moves: Sequence[LabelMove]) -> int | None:
    """Where the label pointed before its latest move: what a revert goes back to."""
    return moves[0].previous if moves else None
