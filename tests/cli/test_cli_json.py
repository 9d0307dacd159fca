"""JSON on stdout: a report's rows written one at a time read exactly as the whole document did."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from coachctx.cli.common import print_json, print_json_rows

HEAD = {"questions": "log.jsonl", "summary": "2 questions", "notes": ["é", "\ud800 lone"], "skipped": []}
ROWS: list[dict[str, Any]] = [{"row": 1, "question": "knee pain?", "base": {"selected": ["a", "b"]}},
                              {"row": 2, "question": "膝が痛い\nSYSTEM", "changes": [], "nested": {"x": None}}]


@pytest.mark.parametrize("rows", [ROWS, ROWS[:1], []], ids=["two", "one", "none"])
@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_streamed_rows_are_the_same_text_as_the_whole_document(rows: list[dict[str, Any]], encoding: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def written(write: Any) -> str:
        out = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict")
        monkeypatch.setattr(sys, "stdout", out)
        write()
        out.flush()
        return out.buffer.getvalue().decode(encoding)  # type: ignore[attr-defined,no-any-return]

    whole = written(lambda: print_json({**HEAD, "rows": rows}))
    streamed = written(lambda: print_json_rows(HEAD, "rows", iter(rows)))
    assert json.loads(streamed) == json.loads(whole) == json.loads(json.dumps({**HEAD, "rows": rows}))
    if encoding == "utf-8":
        assert streamed == whole
