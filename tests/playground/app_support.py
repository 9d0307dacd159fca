"""Shared by the AppTest suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest


@pytest.fixture(autouse=True)
def _clear_streamlit_caches() -> Iterator[None]:
    """st.cache_data and st.cache_resource outlive an AppTest run (streamlit#9139): clear them
    around every test so no test sees another's policy or store."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def open_tab(at: AppTest, label: str) -> AppTest:
    """Open the tab with this label, as a click on it does: only the open tab is laid out."""
    at.session_state["tab"] = label
    at.run()
    assert not at.exception, [e.stack_trace for e in at.exception]
    return at
