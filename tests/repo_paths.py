"""Where the tests find the repository's files. Tests import these from here, never from a
conftest.py: each test folder may have a conftest of its own, and `import conftest` would get
whichever was imported last."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV_QUESTIONS = ROOT / "tests" / "data" / "questions" / "dev.yaml"
DECISION_SCHEMA = ROOT / "schemas" / "decision.schema.json"
