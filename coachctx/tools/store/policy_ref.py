"""Naming a policy: a file, a version number or a label, resolved to the policy and where it came from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from coachctx.engine.policy import Policy, load_policy
from coachctx.tools.store.checks import LABEL_PATTERN, VERSION_REF
from coachctx.tools.store.errors import StoreError
from coachctx.tools.store.policy_store import PolicyStore


@dataclass(frozen=True)
class PolicyRef:
    """A policy and where it came from, as a Decision records it."""

    policy: Policy
    source: str
    """`policy/default.yaml`, or `store:live` / `store:v3`."""
    version: int | None
    """The store version, None for a file."""


def looks_like_file(ref: str) -> bool:
    return Path(ref).is_file() or ref.endswith((".yaml", ".yml")) or os.sep in ref or "/" in ref


def resolve_policy(ref: str, store: PolicyStore | str | None = None) -> PolicyRef:
    """A policy named by a file path, a version number or a label. A store is opened only when
    the reference is not a file (`store` may be an open store, a URL, or None for the default)."""
    if looks_like_file(ref):
        if (LABEL_PATTERN.match(ref) or VERSION_REF.match(ref)) and "/" not in ref and os.sep not in ref:
            # a file named `live` (or `3`) beside the user would silently win over the store's label
            raise StoreError(f"{ref!r} names both a file here and a store version or label; write ./{ref} for "
                             "the file, or move the file away to use the store")
        return PolicyRef(load_policy(ref), ref, None)
    if isinstance(store, PolicyStore):
        version = store.resolve(ref)
    else:
        with PolicyStore(store, create=False) as opened:
            version = opened.resolve(ref)
    label = None if VERSION_REF.match(ref.strip()) else ref
    return PolicyRef(version.policy(), f"store:{label or f'v{version.number}'}", version.number)
