"""The address-bar state: a view encoded into query parameters and read back, validated, never raising."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from coachctx.engine.pipeline import COST_MODES, MAX_QUESTION_CHARS, SCOPE_REQUESTS
from coachctx.engine.policy import CUSTOM_TIER, DEFAULT_TIER
from coachctx.tools.store import DRAFT_ID_PATTERN


@dataclass(frozen=True)
class ViewState:
    """What a link restores, and what Back and Forward step through."""

    question: str
    athlete: str
    scope: str = "auto"
    tier: str = DEFAULT_TIER
    budget: int | None = None
    cost_mode: str = "hand"
    policy_digest: str | None = None
    draft_id: str | None = None
    """The edited draft kept in the policy store under this id: a reload restores it."""
    tab: str = "decision"
    """The open tab, by its short name (`TAB_NAMES`)."""


URL_KEYS: Final = ("q", "athlete", "scope", "tier", "budget", "costs", "tab", "policy", "draft")
VIEW_KEYS: Final = ("q", "athlete", "scope", "tier", "budget", "costs", "tab")
"""The parameters Back and Forward restore (the policy and the draft are not history)."""


TAB_NAMES: Final[Mapping[str, str]] = {
    "decision": "Decision", "prompt": "Prompt & reply", "policy": "Policy editor", "versions": "Versions",
    "impact": "Impact", "suggest": "Suggest", "trace": "Reproduce a trace",
}
"""Each tab's short name in the address bar, and its label on the page, in order."""
MAX_URL_BUDGET: Final = 1_000_000


_DIGEST = re.compile(r"[0-9a-f]{6,64}\Z")


_BUDGET = re.compile(r"[0-9]{1,7}\Z")  # ASCII digits only: str.isdigit() accepts '²', which int() refuses


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with lone surrogates (which no encoder accepts) replaced by U+FFFD."""
    try:
        text.encode("utf-8")  # in C, and a policy's text is 400 KB: the usual answer at once
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def cleaned(value: Any) -> Any:
    """`value` with every string (keys too) passed through `clean_text`, for display."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {cleaned(k): cleaned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cleaned(v) for v in value]
    return value


def encode_view(view: ViewState) -> dict[str, str]:
    """Query parameters for a view; the budget only for a custom tier; the policy digest only
    when no draft id restores the policy itself (a digest that changes with every edit would
    add a history entry per keystroke)."""
    params = {"q": clean_text(view.question), "athlete": view.athlete, "scope": view.scope, "tier": view.tier,
              "costs": view.cost_mode, "tab": view.tab}
    if view.tier == CUSTOM_TIER and view.budget is not None:
        params["budget"] = str(view.budget)
    if view.draft_id:
        params["draft"] = view.draft_id
    elif view.policy_digest:
        params["policy"] = view.policy_digest
    return params


def _param(params: Mapping[str, Any], key: str) -> str | None:
    value = params.get(key)
    if isinstance(value, list | tuple):
        value = value[-1] if value else None
    return clean_text(value) if isinstance(value, str) else None


def _shown(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "…")


def decode_view(params: Mapping[str, Any], *, athletes: Sequence[str], tiers: Sequence[str],
                default: ViewState) -> tuple[ViewState, list[str]]:
    """A view from query parameters; anything unusable keeps the default and is reported in a
    one-line note. Never raises, whatever the parameters hold."""
    notes: list[str] = []
    out = dict(question=default.question, athlete=default.athlete, scope=default.scope, tier=default.tier,
               budget=default.budget, cost_mode=default.cost_mode, policy_digest=None, draft_id=None,
               tab=default.tab)

    def take(key: str, field: str, allowed: Sequence[str], what: str) -> None:
        value = _param(params, key)
        if value is None:
            return
        if value not in allowed:
            notes.append(f"the link's {what} {_shown(value)} is not one of {', '.join(allowed)}; "
                         f"kept {out[field]!r}")
            return
        out[field] = value

    q = _param(params, "q")
    if q is not None:
        if q.strip() and len(q) <= MAX_QUESTION_CHARS:
            out["question"] = q
        else:
            notes.append(f"the link's question is empty or longer than {MAX_QUESTION_CHARS:,} characters; "
                         "kept the default question")
    take("athlete", "athlete", athletes, "athlete")
    take("scope", "scope", SCOPE_REQUESTS, "time horizon")
    take("tier", "tier", [*tiers, CUSTOM_TIER], "tier")
    take("costs", "cost_mode", COST_MODES, "cost mode")
    take("tab", "tab", list(TAB_NAMES), "tab")
    budget = _param(params, "budget")
    if budget is not None:
        if _BUDGET.match(budget) and int(budget) <= MAX_URL_BUDGET:
            out["budget"] = int(budget)
        else:
            notes.append(f"the link's budget {_shown(budget)} is not a whole number of tokens from 0 to "
                         f"{MAX_URL_BUDGET:,}; ignored")
    digest = _param(params, "policy")
    if digest is not None:
        if _DIGEST.match(digest):
            out["policy_digest"] = digest
        else:
            notes.append(f"the link's policy digest {_shown(digest)} is not a digest; ignored")
    draft = _param(params, "draft")
    if draft is not None:
        if DRAFT_ID_PATTERN.match(draft):
            out["draft_id"] = draft
        else:
            notes.append(f"the link's draft id {_shown(draft)} is malformed; ignored")
    return ViewState(**out), notes  # type: ignore[arg-type]
