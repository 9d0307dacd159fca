"""Two imports of one labels file at the same time store each label once (they stored every label
twice: the driver began the write transaction only at the first INSERT, after the reads), and each
import reports what it stored, not how much the table grew meanwhile."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from coachctx.cli import main
from coachctx.tools.store import PolicyStore, QuestionLabel

N = 2000


def _import(url: str, barrier: Any) -> None:
    labels = [QuestionLabel(question=f"question number {i}, my knee", intents=("injury",), author="ana")
              for i in range(N)]
    barrier.wait()
    with PolicyStore(url) as store:
        store.add_question_labels(labels)


@pytest.mark.timeout(120)
def test_two_imports_at_once_store_each_label_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    with PolicyStore(url) as store:
        store.add_question_labels([])
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [context.Process(target=_import, args=(url, barrier)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=100)
    assert [w.exitcode for w in workers] == [0, 0]
    with PolicyStore(url) as store:
        stored = store.question_labels()
    assert len(stored) == N and len({label.question for label in stored}) == N


def test_an_import_counts_what_it_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    row = {"question": "knee hurts after hills", "intents": ["injury"]}
    first.write_text(json.dumps(row) + "\n", encoding="utf-8")
    second.write_text("".join(json.dumps(r) + "\n" for r in (row, {**row, "question": "calf is tight"},
                                                              {**row, "question": "calf is tight"})), encoding="utf-8")
    assert main(["labels", "import", str(first), "--store", store, "--author", "ana"]) == 0
    assert main(["labels", "import", str(second), "--store", store, "--author", "ana"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("imported 1 label(s) from ")
    assert out[1].startswith("imported 1 label(s) from ") and out[1].endswith(
        "; 1 was stored already; 1 repeated an earlier line of the file")
