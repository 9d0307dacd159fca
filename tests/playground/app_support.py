"""Shared by the AppTest suites: the page, its first run, and what a test reads off it.

The fixtures (a clean Streamlit cache around every test, a policy store of the test's own) are in
this folder's conftest.py.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from streamlit.testing.v1 import AppTest

from coachctx.engine.policy import load_policy, policy_to_yaml

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CHECKED_IN = ROOT / "policy" / "default.yaml"
CHECKED_IN_TEXT = CHECKED_IN.read_text(encoding="utf-8")
ATHLETES = ("maya", "kenji", "lucia", "omar", "ines", "tom", "priya")
READINESS = {"readiness_training", "readiness_injury"}
NO_LABEL = "(no label)"
DEFAULT_TIMEOUT_S = 60  # a loaded machine (two cores, four engineers) takes a while per run


def ok(at: AppTest) -> AppTest:
    """The page after a run that raised nothing (the stack traces if one did)."""
    assert not at.exception, [e.stack_trace for e in at.exception]
    return at


def new_app(timeout: float = DEFAULT_TIMEOUT_S) -> AppTest:
    return AppTest.from_file(APP, default_timeout=timeout)


def open_tab(at: AppTest, label: str) -> AppTest:
    """Open the tab with this label, as a click on it does: only the open tab is laid out."""
    at.session_state["tab"] = label
    return ok(at.run())


def started(tab: str | None = None) -> AppTest:
    """The page after its first run, with `tab` open (only the open tab is laid out)."""
    at = ok(new_app().run())
    return at if tab is None else open_tab(at, tab)


def decision(at: AppTest) -> dict[str, Any]:
    value: dict[str, Any] = at.session_state["decision"]
    return value


# --- drafts ----------------------------------------------------------------------------------------


def draft_with(change: Callable[[dict[str, Any]], None]) -> str:
    """The checked-in policy as data, changed by `change(data)`, dumped as YAML."""
    data = yaml.safe_load(policy_to_yaml(load_policy()))
    change(data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def set_margin_zero(data: dict[str, Any]) -> None:
    data["routing"]["margin"] = 0.0


def margin_zero_and_no_secondaries(data: dict[str, Any]) -> None:
    data["routing"]["margin"] = 0.0
    data["tiers"]["paid"] = 0


def recovery_for_training(data: dict[str, Any]) -> None:
    """The rule a coach edits: training may see last night's recovery (it was excluded)."""
    data["intents"]["training"]["exclude"].remove("readiness_recovery")
    data["intents"]["training"]["secondary"].append("readiness_recovery")


def injury_readiness_for_training(data: dict[str, Any]) -> None:
    data["intents"]["training"]["exclude"].remove("readiness_injury")
    data["intents"]["training"]["secondary"].append("readiness_injury")


def comment_lines(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line]


# --- reading the page ------------------------------------------------------------------------------


def texts(elements: Any) -> list[str]:
    return [str(e.value) for e in elements]


def all_text(at: AppTest) -> str:
    """The page's words: its Markdown, alerts and captions, and its blocks of HTML without their tags."""
    parts = [*at.markdown, *at.error, *at.warning, *at.info, *at.success, *at.caption]
    blocks = [html.unescape(re.sub(r"<[^>]+>", " ", str(h.value))) for h in at.get("html")]
    return "\n".join([*texts(parts), *blocks])


def audit_warnings(at: AppTest) -> list[str]:
    """The audit's warnings as the Decision tab's headline shows them, without their tags."""
    found = (re.findall(r'<div class="coachctx-audit warn"[^>]*>(.*?)</div>', str(h.value)) for h in at.get("html"))
    return [html.unescape(re.sub(r"<[^>]+>", "", w)) for ws in found for w in ws]


def frame_with(at: AppTest, *columns: str) -> Any:
    for df in at.dataframe:
        if set(columns) <= set(df.value.columns):
            return df.value
    raise AssertionError(f"no table with columns {columns} on the page")


def fragments_table(at: AppTest) -> Any:
    """The Decision tab's table of the eleven facts, its expander opened first as a click does
    (it is built only while open)."""
    if "facts_table" not in at.session_state or not at.session_state["facts_table"]:
        at.session_state["facts_table"] = True
        ok(at.run())
    return frame_with(at, "fragment", "line").set_index("fragment")


def click_example(at: AppTest, index: int) -> AppTest:
    """Open the Examples list (its buttons are built only while it is open) and click one."""
    at.session_state["examples"] = True
    ok(at.run())
    return ok(at.button(key=f"example_{index}").click().run())


def save(at: AppTest, message: str, *, label: str, author: str = "ana") -> None:
    """On the Versions tab: a name, a message, a label, Save."""
    open_tab(at, "Versions")
    at.text_input(key="author").input(author)
    at.text_input(key="save_message").input(message)
    at.selectbox(key="save_label").set_value(label)
    ok(at.button(key="save_version").click().run())
