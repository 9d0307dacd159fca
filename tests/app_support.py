"""Shared by the AppTest suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _clear_streamlit_caches() -> Iterator[None]:
    """st.cache_data and st.cache_resource outlive an AppTest run (streamlit#9139): clear them
    around every test so no test sees another's policy or store."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()
