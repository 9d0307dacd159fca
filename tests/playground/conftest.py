"""Fixtures of the playground's tests: a clean Streamlit cache around every test, a policy store of
the test's own, and for the browser tests a `streamlit run` server and headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from browser_support import cannot_start, wait_healthy

from bench.playground_server import CHROMIUM, CHROMIUM_ARGS, running_server


@pytest.fixture(autouse=True)
def _clear_streamlit_caches() -> Iterator[None]:
    """st.cache_data and st.cache_resource outlive an AppTest run (streamlit#9139): clear them
    around every test so no test sees another's policy or store."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def store_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test's own policy store, a SQLite file named by COACHCTX_STORE. "Another coach" is a
    `PolicyStore` the test opens on the same file, as a second app instance or the CLI would."""
    url = f"sqlite:///{tmp_path}/s.sqlite"
    monkeypatch.setenv("COACHCTX_STORE", url)
    monkeypatch.delenv("COACHCTX_AUTHOR", raising=False)
    return url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`streamlit run app.py` on a free 127.0.0.1 port, one per test module: no model (the page must
    work fully without one, and must not reach any network) and a policy store of its own, never
    the user's ~/.coachctx one (bench/playground_server.py)."""
    workdir = tmp_path_factory.mktemp("streamlit")
    with running_server(workdir) as (url, proc):
        wait_healthy(url, proc, workdir / "server.log")
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium through Playwright (skipped, or failed under CI=true, when it cannot start)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        cannot_start(f"playwright is not installed ({e})")
    if not Path(CHROMIUM).exists():
        cannot_start(f"{CHROMIUM} is missing (apt-get install chromium)")
    manager = sync_playwright().start()
    try:
        try:
            chromium = manager.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except Exception as e:  # playwright raises its own Error type for every launch failure
            cannot_start(f"{type(e).__name__}: {e}")
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        manager.stop()
