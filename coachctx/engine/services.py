"""The four upstream services behind one small interface, and the fetch that never raises.

`Upstream` is what a real deployment implements (HTTP clients); `FixtureUpstream` reads
`sample_athletes/`. `fetch_bundle` turns every fault into a typed `ServiceResult`:
timeouts, connection errors, 5xx and malformed payloads are `unreachable`; a 404 ("no record
for this athlete") is `never_computed`. Conditions are per city and fetched once per city.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from coachctx.engine.fragments import SERVICES, ServiceName
from coachctx.engine.policy_errors import did_you_mean
from coachctx.errors import InputError
from coachctx.reading import ReadError, file_path, parse_json, printable, read_bytes, shown

SAMPLE_ATHLETES_DIR: Final = Path(__file__).resolve().parents[2] / "sample_athletes"
MAX_FIXTURE_BYTES: Final = 2 * 1024 * 1024

Availability = Literal["ok", "unreachable", "never_computed"]


@dataclass(frozen=True)
class Response:
    """What a service said: an HTTP-like status and the decoded JSON body."""

    status: int
    body: Any
    latency_ms: float | None = None


class Upstream(Protocol):
    """Calls one service. May raise (timeouts, connection errors): `fetch_bundle` handles it."""

    def call(self, service: ServiceName, key: str) -> Response: ...


class ServiceTimeout(TimeoutError):
    pass


@dataclass(frozen=True)
class ServiceResult:
    service: ServiceName
    status: Availability
    detail: str
    body: Any = None
    """The raw body as received (also for errors), for the naive baseline and traces."""
    latency_ms: float | None = None

    @property
    def data(self) -> Mapping[str, Any]:
        """The payload's `data` object ({} unless status is ok)."""
        if self.status == "ok" and (type(self.body) is dict or isinstance(self.body, Mapping)):
            data = self.body.get("data")
            if type(data) is dict or isinstance(data, Mapping):
                return data
        return {}

    def to_snapshot(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "body": self.body, "latency_ms": self.latency_ms}

    @classmethod
    def from_snapshot(cls, service: ServiceName, snap: Mapping[str, Any]) -> ServiceResult:
        if not isinstance(snap, Mapping):
            raise ValueError(f"bundle.services.{service}: expected an object, got {type(snap).__name__}")
        refuse_unknown_keys(snap, _RESULT_KEYS, f"bundle.services.{service}")
        status = snap.get("status")
        if status not in ("ok", "unreachable", "never_computed"):
            raise ValueError(f"bundle.services.{service}.status: {shown(status)} is not ok/unreachable/never_computed")
        return cls(service=service, status=status, detail=str(snap.get("detail", "")), body=snap.get("body"),
                   latency_ms=snap.get("latency_ms"))


@dataclass(frozen=True)
class Bundle:
    """Everything fetched for one athlete: one result per service."""

    athlete: str
    results: Mapping[ServiceName, ServiceResult]
    city: str | None = None
    language: str | None = None

    def __getitem__(self, service: ServiceName) -> ServiceResult:
        return self.results[service]

    def naive_payload(self) -> dict[str, Any]:
        """The whole fetched bundle, as a naive integration would paste it into a prompt."""
        return {service: (r.body if r.status == "ok" else {"error": r.detail}) for service, r in self.results.items()}

    def to_snapshot(self) -> dict[str, Any]:
        return {"athlete": self.athlete, "city": self.city, "language": self.language,
                "services": {s: r.to_snapshot() for s, r in self.results.items()}}

    @classmethod
    def from_snapshot(cls, snap: Mapping[str, Any]) -> Bundle:
        services = snap.get("services")
        if not isinstance(services, Mapping):
            raise ValueError("bundle.services: expected a mapping of the four services")
        refuse_unknown_keys(snap, _BUNDLE_KEYS, "bundle")
        refuse_unknown_keys(services, SERVICES, "bundle.services")
        missing = [s for s in SERVICES if s not in services]
        if missing:
            raise ValueError(f"bundle.services: missing {', '.join(missing)}")
        for key in ("city", "language"):
            if not isinstance(snap.get(key), str | None):
                raise ValueError(f"bundle.{key}: expected text or null, got {type(snap.get(key)).__name__}")
        return cls(athlete=str(snap.get("athlete", "")),
                   results={s: ServiceResult.from_snapshot(s, services[s]) for s in SERVICES},
                   city=snap.get("city"), language=snap.get("language"))


_RESULT_KEYS: Final = ("status", "detail", "body", "latency_ms")
_BUNDLE_KEYS: Final = ("athlete", "city", "language", "services")


def refuse_unknown_keys(obj: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    """A snapshot is read back exactly as it was written: a key it never holds (a hand edit, a
    mistyped name) is refused, naming it, rather than dropped without a word."""
    unknown = [key for key in obj if key not in known]
    if unknown:
        raise ValueError(f"{where}: unknown key {shown(unknown[0])}{did_you_mean(unknown[0], known)}; "
                         f"the keys it may hold are {', '.join(known)}")


# --- fetching --------------------------------------------------------------------------------


def _describe_fault(e: BaseException) -> str:
    if isinstance(e, TimeoutError):
        return f"timed out ({e})" if str(e) else "timed out"
    if isinstance(e, ConnectionError):
        return f"connection failed ({e})" if str(e) else "connection failed"
    return f"call raised {type(e).__name__}: {e}"


def call_service(upstream: Upstream, service: ServiceName, key: str) -> ServiceResult:
    """One call, every outcome typed. Never raises."""
    started = time.perf_counter()
    try:
        response = upstream.call(service, key)
    except Exception as e:
        return ServiceResult(service, "unreachable", f"{service} service {_describe_fault(e)}",
                             latency_ms=round((time.perf_counter() - started) * 1000, 1))
    latency = response.latency_ms
    if response.status == 404:
        return ServiceResult(service, "never_computed",
                             f"{service} service answered 404: nothing has been computed for {key}",
                             body=response.body, latency_ms=latency)
    if response.status >= 500 or response.status < 200 or response.status >= 300:
        return ServiceResult(service, "unreachable", f"{service} service answered HTTP {response.status}",
                             body=response.body, latency_ms=latency)
    body = response.body
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), Mapping):
        shape = type(body).__name__ if not isinstance(body, Mapping) else "an object without a 'data' object"
        return ServiceResult(service, "unreachable", f"{service} service sent a malformed payload ({shape})",
                             body=body, latency_ms=latency)
    return ServiceResult(service, "ok", f"{service} service answered", body=body, latency_ms=latency)


@dataclass
class ConditionsCache:
    """Conditions are the same for everyone in a city: fetch each city once per cache."""

    by_city: dict[str, ServiceResult] = field(default_factory=dict)


def fetch_bundle(upstream: Upstream, athlete: str, cache: ConditionsCache | None = None) -> Bundle:
    """Fetch the four services for one athlete. Faults of the services become typed results; only
    arguments of the wrong kind raise (`InputError`: the arguments swapped read as four unreachable
    services, an adversarial pass found), and an athlete id an upstream with `check(athlete)`
    refuses (FixtureUpstream: "MAYA", "zed", "../maya" are no sample athlete)."""
    if not callable(getattr(upstream, "call", None)):
        raise InputError(f"upstream must be an Upstream (FixtureUpstream, or anything with call(service, key)), "
                         f"got {type(upstream).__name__}")
    if not isinstance(athlete, str):
        raise InputError(f"athlete must be an athlete id (text), got {type(athlete).__name__}")
    check = getattr(upstream, "check", None)
    if callable(check):  # an upstream that knows its athletes refuses an unknown id: a caller's
        check(athlete)   # mistake, not four unreachable services (which read as an outage)
    account = call_service(upstream, "account", athlete)
    results: dict[ServiceName, ServiceResult] = {"account": account}
    for service in ("baselines", "readiness"):
        results[service] = call_service(upstream, service, athlete)  # type: ignore[arg-type]
    prefs = account.data.get("preferences") if account.status == "ok" else None
    city = prefs.get("city") if isinstance(prefs, Mapping) else None
    language = prefs.get("language") if isinstance(prefs, Mapping) else None
    if not isinstance(city, str) or not city.strip():
        why = "the account has no city" if account.status == "ok" else f"the city is unknown ({account.detail})"
        results["conditions"] = ServiceResult("conditions", "unreachable", f"conditions not fetched: {why}")
    elif cache is not None and city in cache.by_city:
        results["conditions"] = cache.by_city[city]
    else:
        results["conditions"] = call_service(upstream, "conditions", city)
        if cache is not None:
            cache.by_city[city] = results["conditions"]
    return Bundle(athlete=athlete, results=results, city=city if isinstance(city, str) else None,
                  language=language if isinstance(language, str) else None)


# --- fixtures --------------------------------------------------------------------------------


ATHLETE_ID: Final = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
"""An athlete is an id, never a path: `../x`, `/etc/x` or `a/b` can only name a file elsewhere."""


class FixtureUpstream:
    """Serves `sample_athletes/`: `<athlete>.json` for account/baselines/readiness and
    `conditions.json` for cities. A fixture entry is `{"status", "body", "latency_ms"}` or
    `{"fault": "timeout" | "connection_error" | "exception"}`; a service missing from an
    athlete's file answers 404. Files are read with `reading.read_bytes` and `parse_json`, so a
    FIFO, a huge file or a file that is not JSON is an `InputError` naming it."""

    def __init__(self, root: str | Path = SAMPLE_ATHLETES_DIR) -> None:
        try:
            self.root = file_path(root, "a directory of athletes' fixture files")
        except ReadError as e:
            raise InputError(f"athletes directory: {e.problem}") from e
        if not self.root.is_dir():
            why = "is not a directory" if self.root.exists() else "does not exist"
            raise InputError(f"athletes directory {shown(str(root))} {why}: name the directory of the athletes' "
                             "fixture files (<athlete>.json)")
        self.calls: list[tuple[str, str]] = []
        self._files: dict[str, Any] = {}

    def athletes(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("*.json")
                      if p.stem != "conditions" and ATHLETE_ID.match(p.stem) and p.is_file())

    def describe(self, athlete: str) -> str:
        return printable(" ".join(str(self._athlete(athlete).get("description", "")).split()))

    def _read(self, name: str) -> Any:
        if name not in self._files:
            path = self.root / f"{name}.json"
            self._files[name] = parse_json(read_bytes(path, MAX_FIXTURE_BYTES, expected="a fixture JSON file"),
                                           str(path))
        return self._files[name]

    def check(self, athlete: str) -> None:
        """InputError unless `athlete` is the id of a sample athlete; the message lists them."""
        if not self.has(athlete):
            known = ", ".join(self.athletes()) or f"none (no fixtures in {self.root})"
            quoted = shown(athlete if isinstance(athlete, str) else str(athlete))
            if isinstance(athlete, str) and ATHLETE_ID.match(athlete):
                path = self.root / f"{athlete}.json"
                if athlete != "conditions" and (path.exists() or path.is_symlink()) and not path.is_file():
                    raise InputError(f"{printable(str(path))} is not a regular file (an athlete's "
                                     f"fixture is a JSON file); sample athletes are: {known}")
                raise InputError(f"unknown athlete {quoted}; sample athletes are: {known}")
            raise InputError(f"athlete {quoted} is not an athlete id (lower-case letters, digits, '-' and '_'; "
                             f"never a path); sample athletes are: {known}")
        data = self._read(athlete)
        if not isinstance(data, Mapping):  # a broken fixture is refused here, naming the file
            raise InputError(f"{self.root / athlete}.json: expected an object")
        _check_services(data.get("services"), f"{self.root / athlete}.json")

    def _athlete(self, athlete: str) -> Mapping[str, Any]:
        self.check(athlete)
        data = self._read(athlete)
        if not isinstance(data, Mapping):
            raise InputError(f"{self.root / athlete}.json: expected an object")
        return data

    def has(self, athlete: str) -> bool:
        return (isinstance(athlete, str) and athlete != "conditions" and ATHLETE_ID.match(athlete) is not None
                and (self.root / f"{athlete}.json").is_file())

    def call(self, service: ServiceName, key: str) -> Response:
        self.calls.append((service, key))
        if service == "conditions":
            cities = self._read("conditions")
            cities = cities.get("cities") if isinstance(cities, Mapping) else None
            entry = cities.get(key) if isinstance(cities, Mapping) else None
        else:
            services = self._athlete(key).get("services")
            entry = services.get(service) if isinstance(services, Mapping) else None
        if entry is None:
            return Response(404, {"error": "not_found", "message": f"no {service} record for {key}"})
        if not isinstance(entry, Mapping):
            raise InputError(f"fixture for {service} ({key}): expected an object, got {type(entry).__name__}")
        fault = entry.get("fault")
        if fault == "timeout":
            raise ServiceTimeout(f"no answer after {_whole(entry.get('after_ms', 2000), 'after_ms', 0, 600_000)} ms")
        if fault == "connection_error":
            raise ConnectionError("connection refused")
        if fault is not None:
            raise RuntimeError(f"simulated fault {shown(str(fault))}")
        latency = entry.get("latency_ms")
        if latency is not None and (isinstance(latency, bool) or not isinstance(latency, int | float)):
            raise InputError(f"fixture for {service} ({key}): latency_ms: expected a number, got {shown(latency)}")
        return Response(_whole(entry.get("status", 200), "status", 100, 599), entry.get("body"), latency)


ATHLETE_SERVICES: Final = tuple(s for s in SERVICES if s != "conditions")
"""What an athlete's fixture holds; conditions are per city, in `conditions.json`."""


def _check_services(services: Any, where: str) -> None:
    """An athlete's fixture holds a `services` object of `ATHLETE_SERVICES` (one left out answers
    404, as a service that never computed anything does). A file without one, a typo'd name or a
    trace saved among the fixtures is refused rather than read as four empty services."""
    listed = ", ".join(ATHLETE_SERVICES)
    if not isinstance(services, Mapping):
        got = "none" if services is None else f"a {type(services).__name__}"
        raise InputError(f"{where}: expected a `services` object ({listed}; one left out answers 404), got {got}")
    for name in services:
        if name not in ATHLETE_SERVICES:
            raise InputError(f"{where}: services.{printable(str(name))}: not a service of an athlete's fixture"
                             f"{did_you_mean(name, ATHLETE_SERVICES)}; those are {listed} (conditions are per "
                             "city, in conditions.json)")


def _whole(value: Any, what: str, low: int, high: int) -> int:
    """A fixture's number: JSON `true` is not 1, and a status must be an HTTP status."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"fixture {what}: expected a whole number from {low} to {high}, got {shown(value)}")
    return value
