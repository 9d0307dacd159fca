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


ENGINE_FILES = sorted((PACKAGE / "engine").rglob("*.py"))
ROOT = PACKAGE.parent
SIZED_FILES = sorted(PACKAGE.rglob("*.py")) + [ROOT / "app.py"]
"""Every module of every layer, and the app's entry point: the size limits apply to all of them."""
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def oversized(paths: list[Path], max_module: int, max_function: int) -> list[str]:
    """The modules longer than `max_module` lines and the functions longer than `max_function`."""
    found = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        if (lines := len(source.splitlines())) > max_module:
            found.append(f"{path.name}: {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.end_lineno is None:
                continue
            if (size := node.end_lineno - node.lineno + 1) > max_function:
                found.append(f"{path.name}:{node.lineno} {node.name}: {size} lines")
    return found


class TestTheEngineStandsAlone:
    def test_the_engine_has_its_stages(self) -> None:
        names = {p.stem for p in ENGINE_FILES}
        assert {"text", "routing", "lookup", "modifiers", "availability", "budget", "audit", "prompt",
                "token_count", "plan", "decision", "pipeline"} <= names

    def test_term_matching_is_a_package_of_its_concerns(self) -> None:
        names = {p.stem for p in (PACKAGE / "engine" / "matching").glob("*.py")}
        assert names == {"__init__", "terms", "stems", "starts", "table", "find", "readings", "glued", "language",
                         "policy_terms", "unread"}

    @pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
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


class TestSizes:
    """A module a reader can hold in mind: no module of any layer (engine, tools, cli, playground,
    model) nor app.py over about 400 lines, and no function over about 60."""

    def test_the_scan_covers_every_layer_and_the_app(self) -> None:
        layers = {p.relative_to(PACKAGE).parts[0] for p in SIZED_FILES if p.is_relative_to(PACKAGE)}
        assert {"engine", "tools", "cli", "playground", "model", "errors.py"} <= layers
        assert (ROOT / "app.py").is_file() and ROOT / "app.py" in SIZED_FILES

    @pytest.mark.parametrize("path", SIZED_FILES, ids=lambda p: str(p.relative_to(ROOT)))
    def test_no_module_or_function_is_over_the_limit(self, path: Path) -> None:
        assert oversized([path], MAX_MODULE_LINES, MAX_FUNCTION_LINES) == []

    def test_the_check_sees_a_long_module_and_a_long_function(self, tmp_path: Path) -> None:
        long = tmp_path / "long.py"
        long.write_text("def f():\n" + "    x = 1\n" * 5 + "\n" * 3, encoding="utf-8")
        assert oversized([long], 8, 5) == ["long.py: 9 lines", "long.py:1 f: 6 lines"]
        assert oversized([long], 9, 6) == []


# --- the tests mirror the layout -------------------------------------------------------------------


TESTS = Path(__file__).resolve().parent
LAYERS = frozenset({"engine", "tools", "cli", "model", "playground"})
CROSS_CUTTING = frozenset({"robustness"})  # hostile inputs to every layer at once
TOP_LEVEL_TESTS = frozenset({"test_layout.py", "test_exported_members.py"})  # about the whole package


def python_files_of(tests: Path) -> list[Path]:
    """Every Python file of the tests (test modules, their support modules and conftests), not data."""
    return sorted(p for p in tests.rglob("*.py") if p.relative_to(tests).parts[0] != "data")


def misplaced_tests(tests: Path, package: Path) -> list[str]:
    """Where the tests do not mirror the package: a folder that is not a layer (or a folder of the
    package inside one) nor `robustness`, and a test module at the top other than the checks of
    the whole package."""
    found = []
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir()):
        parts = folder.relative_to(tests).parts
        if parts[0] == "data" or any(p == "__pycache__" or p.startswith(".") for p in parts):
            continue
        mirrored = parts[0] in LAYERS and (package.joinpath(*parts) / "__init__.py").is_file()
        if not mirrored and not (len(parts) == 1 and parts[0] in CROSS_CUTTING):
            found.append(f"{'/'.join(parts)}/: neither a layer of {package.name} nor robustness")
    found += [f"{m.name}: a test module at the top" for m in sorted(tests.glob("test_*.py"))
              if m.name not in TOP_LEVEL_TESTS]
    return found


class TestTheTestsMirrorTheLayout:
    """A newcomer knows where a new test goes: in the folder of the layer it tests (tests/engine for
    coachctx/engine), or in tests/robustness when it attacks every layer at once."""

    def test_the_layers_are_the_package_s(self) -> None:
        assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} == LAYERS

    def test_every_test_folder_is_a_layer_or_robustness_and_every_layer_has_one(self) -> None:
        assert misplaced_tests(TESTS, PACKAGE) == []
        assert {p.name for p in TESTS.iterdir() if p.is_dir()} >= LAYERS | CROSS_CUTTING

    def test_no_test_module_or_function_is_over_the_limit(self) -> None:
        files = python_files_of(TESTS)
        assert {p.parent.name for p in files} >= LAYERS | CROSS_CUTTING
        assert oversized(files, MAX_MODULE_LINES, MAX_FUNCTION_LINES) == []

    def test_the_checks_see_a_stray_folder_a_module_at_the_top_and_a_long_test(self, tmp_path: Path) -> None:
        package, tests = tmp_path / "pkg", tmp_path / "tests"
        for folder in ("engine", "engine/matching", "cli"):
            (package / folder).mkdir(parents=True)
            (package / folder / "__init__.py").write_text("", encoding="utf-8")
        for folder in ("engine/matching", "engine/misc", "cli", "helpers", "robustness/deep", "data/golden",
                       "__pycache__"):
            (tests / folder).mkdir(parents=True)
        for name in ("test_layout.py", "test_app.py", "conftest.py", "robustness/deep/test_long.py"):
            (tests / name).write_text("def test_f():\n" + "    x = 1\n" * 5, encoding="utf-8")
        (tests / "data" / "golden" / "make.py").write_text("x = 1\n" * 20, encoding="utf-8")
        assert misplaced_tests(tests, package) == [
            "engine/misc/: neither a layer of pkg nor robustness", "helpers/: neither a layer of pkg nor robustness",
            "robustness/deep/: neither a layer of pkg nor robustness", "test_app.py: a test module at the top"]
        assert [p.relative_to(tests).as_posix() for p in python_files_of(tests)] == [
            "conftest.py", "robustness/deep/test_long.py", "test_app.py", "test_layout.py"]
        assert "test_long.py:1 test_f: 6 lines" in oversized(python_files_of(tests), 8, 5)
