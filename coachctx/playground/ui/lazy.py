"""Expanders and popovers whose content is built only while they are open.

A closed expander's content still costs a rerun its time: the script builds it, the server sends it
and the browser lays it out, hidden. These track their state (`on_change="rerun"`): opening one
reruns the page, and only then is its content built. Its state is kept under its key, so an open one
stays open while the question changes, even when that changes its label (a label is part of a
widget's identity: a new label alone would start it closed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import streamlit as st
from streamlit.delta_generator import DeltaGenerator


def lazy_expander(label: str, *, key: str, icon: str | None = None) -> DeltaGenerator | None:
    """The expander when it is open, else None (its content is not built)."""
    keep_states([key])
    box = st.expander(label, key=key, icon=icon, on_change="rerun")
    return box if box.open else None


def lazy_popover(label: str, *, key: str, icon: str | None = None,
                 width: int | Literal["stretch", "content"] = "stretch") -> DeltaGenerator | None:
    """The popover when it is open, else None."""
    keep_states([key])
    box = st.popover(label, key=key, icon=icon, width=width, on_change="rerun")
    return box if box.open else None


def keep_states(keys: Iterable[str]) -> None:
    """Keep these widgets' values while the box that holds them is closed (a widget that is not
    drawn in a run loses its state)."""
    ss = st.session_state
    for key in keys:
        if key in ss:
            ss[key] = ss[key]
