"""Saying what is wrong with a policy: `describe_error` turns a pydantic error into the path inside
the document and a message with a "did you mean", or the YAML 1.1 quirk that made a number text.
"""

from __future__ import annotations

import difflib
import math
import reprlib
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final

import yaml
from pydantic import BaseModel

from coachctx.reading import printable

# The wording names the policy's own models and vocabularies, which import this module: they are
# imported where an error is described, by then long loaded.


def _options() -> Mapping[str, Sequence[str]]:
    from coachctx.engine.fragments import FRAGMENT_NAMES
    from coachctx.engine.policy import INTENTS, LANGUAGES, SCOPES

    return {"fragment": FRAGMENT_NAMES, "intent": INTENTS, "scope": SCOPES, "language": tuple(LANGUAGES)}


def format_path(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # a key is data: 400 kB of it, or a newline in it, must not become the error's path; nor
            # may an invisible joiner or mark hide in it (the value beside it is shown escaped too)
            raw = str(part)
            text = "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in printable(raw[:61]))
            out += ("." if out else "") + (text if len(text) <= 60 and len(raw) <= 60 else text[:57] + "...")
    return out


def _kind(expected: Sequence[str]) -> str:
    for kind, options in _options().items():
        if set(expected) <= set(options):
            return kind
    return "value"


def did_you_mean(value: Any, options: Sequence[str]) -> str:
    """" (did you mean 'x'?)" for the option closest to a mistyped name, else ""."""
    if not isinstance(value, str) or len(value) > 100:
        return ""
    close = difflib.get_close_matches(str(value), list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model class a location points into, for suggesting key names."""
    from coachctx.engine.policy import IntentPolicy, Modifier, Policy, Routing, ScopePolicy, UnmatchedPolicy

    model: type[BaseModel] | None = Policy
    steps = list(loc)
    while steps and model is not None:
        step = steps.pop(0)
        if model is Policy and step == "unmatched":
            model = UnmatchedPolicy
        elif model is Policy and step in ("intents", "scopes") and steps:
            steps.pop(0)
            model = IntentPolicy if step == "intents" else ScopePolicy
        elif model is ScopePolicy and step == "modifiers" and steps:
            steps.pop(0)
            model = Modifier
        elif model is Policy and step == "routing":
            model = Routing
        else:
            return model if not steps else None
    return model


def describe_error(err: Mapping[str, Any], data: Any) -> tuple[str, str]:
    path, message = _describe_error(err, data)
    if err["loc"] and err["loc"][-1] == "[key]" and isinstance(err.get("input"), bool):
        message += " (YAML reads an unquoted yes/no/on/off as true/false: quote the key, e.g. 'no')"
    elif isinstance(err.get("input"), bool) and err["type"] in ("int_type", "float_type"):
        message += " (YAML reads an unquoted yes/no/on/off/true/false as a boolean, not a number)"
    elif isinstance(err.get("input"), str) and err["type"] in ("int_type", "float_type"):
        message += f" ({_how_to_write_number(err['input'], whole=err['type'] == 'int_type')})"
    return path, message


_RESOLVER: Final = yaml.resolver.Resolver()


def _how_to_write_number(text: str, *, whole: bool = False) -> str:
    """Why a number arrived as text: one of YAML 1.1's number quirks, or quotes. `whole`: the field
    takes a whole number, so only that is offered (`2.5e+2` was, and was then refused as a float)."""
    plain = text.strip()
    digits = plain.lstrip("+-")
    sign = plain[: len(plain) - len(digits)].replace("+", "")
    try:
        if ":" in digits:
            value: float = 0
            for part in digits.split(":"):
                value = value * 60 + (float(part) if "." in part else int(part))
            return f"YAML 1.1 reads {plain} as a base-60 number ({sign}{value:g}): write the number itself"
        if digits[:2].lower() in ("0x", "0o", "0b"):
            return f"write {sign}{int(digits.replace('_', ''), 0)}, not {plain}: a number is written in decimal"
        if "_" in digits:
            return f"write {sign}{digits.replace('_', '')}, not {plain}: YAML 1.1 reads underscores in a number"
        if len(digits) > 1 and digits[0] == "0" and digits.isdigit():
            return f"write {sign}{int(digits)}, not {plain}: YAML 1.1 reads a leading zero as octal"
        value = float(plain)
        if not math.isfinite(value) and not digits.isalpha():  # 1e309; not inf or nan, which are words
            return f"{plain} is too large to be a number"
        if math.isfinite(value) and _RESOLVER.resolve(yaml.ScalarNode, plain, (True, False)).endswith(":str"):
            # `1e3`: YAML 1.1 wants a dot and a signed exponent; without quotes it is still text
            decimal = f"{int(value)}" if value.is_integer() and abs(value) < 1e15 else ""
            if whole:
                return (f"YAML 1.1 reads {plain} as text, not a number: write {decimal}" if decimal else
                        f"YAML 1.1 reads {plain} as text, and this takes a whole number")
            exponent = f"{value:.1e}".replace("e+0", "e+").replace("e-0", "e-")
            return f"YAML 1.1 reads {plain} as text, not a number: write {decimal + ' or ' if decimal else ''}{exponent}"
    except ValueError:
        pass
    return "a number is written without quotes"


def _describe_error(err: Mapping[str, Any], data: Any) -> tuple[str, str]:
    loc = list(err["loc"])
    kind = err["type"]
    value = err.get("input")
    if loc and loc[-1] == "[key]":
        loc = loc[:-1]
        if loc and not isinstance(value, str):
            loc[-1] = str(value)  # pydantic reports a key of True/False as 1/0: name it as written
        else:
            value = loc[-1] if loc else value
    path = format_path(loc)
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1])
        known = list(model.model_fields) if model else []
        return path, f"unknown key {short_value(loc[-1])}{did_you_mean(loc[-1], known)}" + (
            f"; allowed: {', '.join(known)}" if known else "")
    if kind == "literal_error":
        expected = [s.strip().strip("'") for s in str(ctx.get("expected", "")).replace(" or ", ",").split(",")]
        expected = [e for e in expected if e]
        what = _kind(expected)
        return path, f"unknown {what} {short_value(value)}{did_you_mean(value, expected)}"
    if kind == "missing":
        return path, "required key is missing"
    if kind in ("greater_than", "greater_than_equal", "less_than_equal", "less_than"):
        return path, f"{err['msg'].lower()}, got {short_value(value)}"
    if kind == "value_error":
        msg = str(ctx.get("error", err["msg"]))
        return path, msg
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return path, f"{err['msg'].lower()}, got {type(value).__name__} {short_value(value)}"
    return path, f"{err['msg']}, got {short_value(value)}"


_REPR: Final = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 2, 4, 4, 50, 50


def short_value(value: Any) -> str:
    # reprlib never builds the whole repr: a value YAML aliases made huge stays a short line
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
