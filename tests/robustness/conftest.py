"""Fixtures of the robustness tests.

`cli` runs `coachctx ARGS` in-process under capsys and `refused` asserts a clean refusal (see
robustness_support.py). The modules that need stdout and stderr as a terminal has them, strict
about their encoding, override `cli` with `terminal_cli` in the module itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from openai_server import ChatServer
from robustness_support import Run, captured_cli, refusal


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    return captured_cli(capsys)


@pytest.fixture
def refused(cli: Run, tmp_path: Path) -> Callable[..., str]:
    """`refused(*args)`: the CLI's refusal line, asserted clean (robustness_support.refusal)."""
    return refusal(cli, tmp_path)


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    """A local OpenAI-compatible server on 127.0.0.1, one per test module."""
    with ChatServer().start() as chat:
        yield chat
