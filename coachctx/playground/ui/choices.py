"""Policies a coach can pick in the Versions and Impact tabs: the checked-in file, the draft, labels, versions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from coachctx import playground as pg
from coachctx.engine.policy import Policy
from coachctx.errors import CoachctxError
from coachctx.playground.ui.cache import CHECKED_IN, policy_from_text
from coachctx.playground.ui.state import Context, StoreView

T = TypeVar("T")


CHECKED_IN_CHOICE, DRAFT_CHOICE = "@checked-in", "@draft"


def choice_options(sv: StoreView, *, labels: bool) -> list[str]:
    """Policies a coach can pick: the checked-in file, the draft, labels (optional), versions."""
    out = [CHECKED_IN_CHOICE, DRAFT_CHOICE]
    if labels:
        out += [f"label:{name}" for name in sv.label_map]
    return out + [f"v{v.number}" for v in sv.versions]


def choice_title(choice: str, ctx: Context) -> str:
    if choice == CHECKED_IN_CHOICE:
        return f"the checked-in policy ({CHECKED_IN})"
    if choice == DRAFT_CHOICE:
        return "your draft" + ("" if ctx.policies.draft.ok else " (its last valid state)")
    if choice.startswith("label:"):
        name = choice.removeprefix("label:")
        label = ctx.store.label_map.get(name)
        return f"label {name} → version {label.version}" if label else f"label {name}"
    v = ctx.store.version(int(choice[1:]))
    return pg.version_title(v, ctx.store.label_map) if v is not None else choice


def resolve_choice(choice: str, ctx: Context) -> tuple[Policy, str]:
    """(policy, a short name for it). Raises CoachctxError for a version that cannot be read."""
    if choice == CHECKED_IN_CHOICE:
        return ctx.policies.checked_in, "checked-in"
    if choice == DRAFT_CHOICE:
        return ctx.policies.working, "draft"
    if ctx.store.store is None:
        raise CoachctxError(f"the policy store is not available: {ctx.store.error}")
    if choice.startswith("label:"):
        name = choice.removeprefix("label:")
        version = ctx.store.store.resolve(name)
        return version.checked(policy_from_text(version.yaml)), f"{name} (v{version.number})"
    version = ctx.store.store.get(int(choice[1:]))
    return version.checked(policy_from_text(version.yaml)), f"v{version.number}"


def default_index(options: Sequence[T], *preferred: T | None) -> int:
    for choice in preferred:
        if choice is not None and choice in options:
            return options.index(choice)
    return 0
