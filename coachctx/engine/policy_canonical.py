"""The policy's canonical forms: a content hash that equal policies share whatever their YAML
layout (`policy_digest`), and YAML a coach can read that parses back to an equal policy
(`policy_to_yaml`)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Final

import yaml

from coachctx.engine.policy_loading import YAML_DUMPER
from coachctx.errors import InputError

if TYPE_CHECKING:
    from coachctx.engine.policy import Policy


_LATER_SECTIONS: Final = ("fragment_terms", "referral_terms")
"""Sections added after policies were first written and stored: left out while empty."""


def _as_written_before(data: dict[str, Any]) -> dict[str, Any]:
    """The dumped policy without the sections and keys added after policies were first written and
    stored, while they are empty: such a policy keeps its digest and its YAML."""
    if data.get("unmatched") is None:
        data.pop("unmatched", None)
    for section in _LATER_SECTIONS:
        if not data.get(section):
            data.pop(section, None)
    for scope in data.get("scopes", {}).values():
        if not scope.get("implied_by"):
            scope.pop("implied_by", None)
    return data


def policy_digest(policy: Policy) -> str:
    """A short content hash: equal policies have equal digests whatever their YAML layout."""
    data = _as_written_before(policy.model_dump(mode="json"))
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def policy_to_yaml(policy: Policy) -> str:
    """The policy as YAML a coach can read; `parse_policy` of it gives an equal policy."""
    if not callable(getattr(policy, "derived", None)):
        raise InputError(f"policy must be a coachctx Policy (load_policy), got {type(policy).__name__}")
    return policy.derived("yaml", _to_yaml)


def _to_yaml(policy: Policy) -> str:
    data = _as_written_before(policy.model_dump(mode="json", exclude_defaults=False))
    for scope in data.get("scopes", {}).values():
        for m in scope.get("modifiers", []):
            if m.get("intents") is None:
                m.pop("intents", None)
    return yaml.dump(data, Dumper=YAML_DUMPER, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)


