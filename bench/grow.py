"""The bundle growth generator: the sample athlete's real payloads, grown along three axes a
production service grows along, deterministically (no randomness, so every run is the same).

At level k (k = 0 is the fixture as checked in), every service's body gets:

- more fields: `6k` extra scalar fields in `data` (`metric_001`, ... counters, flags, short
  strings) and `2k` extra keys inside every object a fragment reads (`aux_001`, ...), which a
  fragment's renderer does not print;
- longer histories: `data.history`, `7k` daily records per service (date, score, band, a few
  numbers), and in the account's training block `k` more key sessions (which the rendered
  training_block line does print, until the 600-character line cap);
- more metadata: `3k` extra keys in the body's `meta` object (trace ids, versions, regions).

Everything else, including the fields the fragments read, is left as it was, so the selected
prompt can only grow through the key sessions, while the naive prompt carries all of it.

Level -1 goes the other way, towards payloads as small as the original design measured on:
each body is cut down to `data` holding only the fields the fragments read (plus the
account's preferences, for the city and language); no ids, timestamps, methods or `meta`.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any, Final

from coachctx.engine.fragments import FRAGMENTS, ServiceName
from coachctx.engine.services import Response, Upstream

FIELDS_PER_LEVEL: Final = 6
FACT_KEYS_PER_LEVEL: Final = 2
HISTORY_DAYS_PER_LEVEL: Final = 7
SESSIONS_PER_LEVEL: Final = 1
META_KEYS_PER_LEVEL: Final = 3
BANDS: Final = ("low", "watch", "moderate", "good", "high")
START: Final = dt.date(2026, 12, 1)


def _scalar(service: str, i: int) -> Any:
    """A plausible value for extra field i: counters, ratios, flags and short codes in turn."""
    kind = i % 4
    if kind == 0:
        return (i * 37 + len(service)) % 1000
    if kind == 1:
        return round(((i * 53) % 997) / 97, 2)
    if kind == 2:
        return i % 3 == 0
    return f"{service[:3]}-{i:04d}-{BANDS[i % len(BANDS)]}"


def _history(service: str, days: int) -> list[dict[str, Any]]:
    return [{"date": (START - dt.timedelta(days=d + 1)).isoformat(), "score": (d * 29 + 41) % 100,
             "band": BANDS[d % len(BANDS)], "load": round(((d * 17) % 50) / 10 + 0.5, 1),
             "hrv_ms": 40 + (d * 7) % 30, "sleep_h": round(6 + ((d * 3) % 25) / 10, 1), "source": service}
            for d in range(days)]


def grow_body(service: ServiceName, body: Any, level: int) -> Any:
    """The body at growth level `level` (a new object; `body` is not changed)."""
    if level == 0 or not isinstance(body, Mapping) or not isinstance(body.get("data"), Mapping):
        return body
    if level < 0:
        return stripped_body(service, body)
    out = copy.deepcopy(dict(body))
    data = out["data"]
    for path in {p.split(".")[0] for f in FRAGMENTS if f.service == service for p in f.fields}:
        fact = data.get(path)
        if isinstance(fact, dict):
            for i in range(1, FACT_KEYS_PER_LEVEL * level + 1):
                fact[f"aux_{i:03d}"] = _scalar(path, i)
    for i in range(1, FIELDS_PER_LEVEL * level + 1):
        data[f"metric_{i:03d}"] = _scalar(service, i)
    data["history"] = _history(service, HISTORY_DAYS_PER_LEVEL * level)
    block = data.get("training_block")
    if service == "account" and isinstance(block, dict) and isinstance(block.get("key_sessions"), list):
        block["key_sessions"] = block["key_sessions"] + [
            f"wk-{w} {['Tue', 'Thu', 'Sat'][w % 3]} {6 + w % 10}km {['easy', 'steady', 'tempo'][w % 3]}"
            for w in range(1, SESSIONS_PER_LEVEL * level + 1)]
    meta = dict(out.get("meta") or {})
    for i in range(1, META_KEYS_PER_LEVEL * level + 1):
        meta[f"x_{['trace', 'build', 'region', 'shard'][i % 4]}_{i:03d}"] = f"{service}-{i * 7919 % 100000:05d}"
    out["meta"] = meta
    return out


def stripped_body(service: ServiceName, body: Mapping[str, Any]) -> dict[str, Any]:
    """Only what the fragments read, and inside each fact only the keys its renderer prints."""
    keep = {p.split(".")[0] for f in FRAGMENTS if f.service == service for p in f.fields}
    if service == "account":
        keep.add("preferences")
    data = {k: copy.deepcopy(v) for k, v in body["data"].items() if k in keep}
    for name, fact in data.items():
        if isinstance(fact, dict) and name != "preferences":
            for noise in ("computed_at", "method", "source", "assessed_at", "samples", "block_id", "coach",
                          "starts_on", "created_at", "updated_at", "height_cm", "weight_kg"):
                fact.pop(noise, None)
    if isinstance(data.get("preferences"), dict):
        data["preferences"] = {k: v for k, v in data["preferences"].items() if k in ("language", "city")}
    return {"data": data}


class GrowingUpstream:
    """Wraps an upstream: every successful answer comes back grown to `level`."""

    def __init__(self, inner: Upstream, level: int) -> None:
        self.inner = inner
        self.level = level

    def call(self, service: ServiceName, key: str) -> Response:
        response = self.inner.call(service, key)
        if 200 <= response.status < 300:
            return Response(response.status, grow_body(service, response.body, self.level), response.latency_ms)
        return response
