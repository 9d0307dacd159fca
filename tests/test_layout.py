"""The layout says the architecture: the engine stands on its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import coachctx

PACKAGE = Path(coachctx.__file__).parent
OUTSIDE_THE_ENGINE = ("coachctx.tools", "coachctx.cli", "coachctx.playground", "coachctx.model", "app")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, at the top or inside a function, with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.append((node.lineno, node.module))
            # `from coachctx import tools` names the module in the alias
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _outside(module: str) -> bool:
    return any(module == o or module.startswith(o + ".") for o in OUTSIDE_THE_ENGINE)


ENGINE_FILES = sorted((PACKAGE / "engine").glob("*.py"))


class TestTheEngineStandsAlone:
    def test_the_engine_has_its_stages(self) -> None:
        names = {p.stem for p in ENGINE_FILES}
        assert {"text", "routing", "lookup", "modifiers", "availability", "budget", "audit", "prompt",
                "token_count", "plan", "decision", "pipeline"} <= names

    @pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: p.name)
    def test_an_engine_module_imports_nothing_from_tools_cli_playground_or_model(self, path: Path) -> None:
        bad = [f"line {line}: {module}" for line, module in imported_modules(path) if _outside(module)]
        assert bad == []

    def test_the_check_sees_an_import_from_outside(self, tmp_path: Path) -> None:
        # the check above must be able to fail: a stage reaching for the store is caught
        stage = tmp_path / "stage.py"
        stage.write_text("def f():\n    from coachctx.tools.store import PolicyStore\n"
                         "from coachctx import cli\nimport app\n", encoding="utf-8")
        assert sorted(m for _, m in imported_modules(stage) if _outside(m)) == [
            "app", "coachctx.cli", "coachctx.tools.store", "coachctx.tools.store.PolicyStore"]

