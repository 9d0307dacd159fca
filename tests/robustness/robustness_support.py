"""The CLI harnesses of the robustness tests. A module wires the one it needs into its own `cli`
fixture (a line or two), so a reader sees in the module how its commands are run.

- `captured_cli`: `coachctx ARGS` in-process under pytest's capsys; (exit code, stdout, stderr).
- `terminal_cli`: the same with stdout and stderr as a terminal has them, text streams over bytes,
  strict about their encoding (UTF-8 unless the call says Latin-1); a `Result`.
"""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from repo_paths import ROOT

from coachctx.cli import main
from coachctx.engine.policy import DEFAULT_POLICY_PATH, Policy, load_policy

PAIN = "Should I train through this pain?"
POLICY = str(ROOT / "policy" / "default.yaml")
Run = Callable[..., tuple[int, str, str]]


def files_under(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def replaced(text: str, old: str, new: str) -> str:
    """`text` with `old` replaced, which must be there (a test edits what it thinks it edits)."""
    assert old in text, old
    return text.replace(old, new)


def model_threads() -> list[str]:
    """The threads a model call runs in that are still alive: none once every call has ended."""
    return [t.name for t in threading.enumerate() if t.name == "coachctx-model"]


def _exit_code(args: tuple[str, ...]) -> int:
    try:
        return main(list(args))
    except SystemExit as e:  # argparse's own usage errors
        return int(e.code or 0)


# --- under capsys ----------------------------------------------------------------------------------


def captured_cli(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = _exit_code(args)
        out, err = capsys.readouterr()
        return code, out, err

    return run


def refusal(cli: Run, tmp_path: Path) -> Callable[..., str]:
    """Run the CLI and assert the refusal: exit 2, nothing on stdout, one clean line on stderr,
    and no file added or removed under tmp_path. Returns the line."""

    def run(*args: str) -> str:
        before = files_under(tmp_path)
        code, out, err = cli(*args)
        assert "Traceback" not in err
        lines = err.strip().splitlines()
        assert (code, out, len(lines)) == (2, "", 1), (code, out, err)
        assert lines[0].startswith("coachctx: ")
        assert files_under(tmp_path) == before
        return lines[0]

    return run


# --- on terminal-like streams ----------------------------------------------------------------------


class Result:
    def __init__(self, code: int, out: bytes, err: bytes, encoding: str) -> None:
        self.code, self.out_bytes, self.encoding = code, out, encoding
        self.out = out.decode(encoding)  # strict: whatever was written must be the stream's encoding
        self.err = err.decode(encoding)

    def json(self) -> Any:
        def refuse(token: str) -> Any:
            raise AssertionError(f"not strict JSON: {token}")
        return json.loads(self.out, parse_constant=refuse)

    def one_line_error(self) -> str:
        """The refusal as the user sees it: exit 2, nothing on stdout, one `coachctx: ` line on stderr."""
        assert (self.code, self.out) == (2, ""), (self.code, self.out, self.err)
        assert "Traceback" not in self.err
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("coachctx: ")
        return lines[0]


TerminalRun = Callable[..., Result]
_LOADED: dict[tuple[str, int], Policy] = {}


def _cached_load_policy(path: str | Path | None = None) -> Policy:
    """`load_policy` once per (file, mtime): parsing the policy is most of an in-process run."""
    p = Path(path) if path is not None else DEFAULT_POLICY_PATH
    key = (str(p.resolve()), p.stat().st_mtime_ns)
    if key not in _LOADED:
        _LOADED[key] = load_policy(p)
    return _LOADED[key]


def terminal_cli(monkeypatch: pytest.MonkeyPatch, *, cwd: Path | None = None,
                 cached_policy: bool = False) -> TerminalRun:
    """`run(*args, encoding="utf-8")`, in `cwd` when given; with `cached_policy` the CLI parses each
    policy file once."""
    if cwd is not None:
        monkeypatch.chdir(cwd)
    if cached_policy:
        monkeypatch.setattr("coachctx.cli.common.load_policy", _cached_load_policy)

    def run(*args: str, encoding: str = "utf-8") -> Result:
        out, err = io.BytesIO(), io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding=encoding, write_through=True))
        monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding=encoding, write_through=True))
        code = _exit_code(args)
        return Result(code, out.getvalue(), err.getvalue(), encoding)

    return run
