"""The eleven fragments: which service each comes from, its hand-assigned cost, and how it
pulls one fact out of a payload and renders it as one line.

A fragment's extractor returns the fact (a dict or scalar) or `None`/empty when the field is
empty; availability turns that into `empty_field`. Rendering never sees missing data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

ServiceName = Literal["account", "baselines", "readiness", "conditions"]
SERVICES: Final[tuple[ServiceName, ...]] = ("account", "baselines", "readiness", "conditions")

Renderer = Callable[[Any], str]
"""Takes a non-empty fact, returns one line of plain text."""


@dataclass(frozen=True)
class Fragment:
    name: str
    service: ServiceName
    cost: int
    fields: tuple[str, ...]
    """Dotted paths inside the service's `data` object; every one must be non-empty."""
    render: Renderer

    def read(self, data: Mapping[str, Any]) -> tuple[Any, list[str]]:
        """The fact (the one field's value, or a dict of the fields' values when there are several)
        and the fields that are missing or empty in `data` (None, "", [], {}): each looked up once."""
        if len(self.fields) == 1:
            value = _lookup(data, self.fields[0])
            return value, ([self.fields[0]] if _is_empty(value) else [])
        values = [_lookup(data, path) for path in self.fields]
        return ({path.rsplit(".", 1)[-1]: v for path, v in zip(self.fields, values, strict=True)},
                [path for path, v in zip(self.fields, values, strict=True) if _is_empty(v)])


def _lookup(data: Mapping[str, Any], path: str) -> Any:
    if type(data) is dict and "." not in path:  # the usual case: a top-level field
        return data.get(path)
    value: Any = data
    for part in path.split("."):
        if not (type(value) is dict or isinstance(value, Mapping)):
            return None
        value = value.get(part)
    return value


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, tuple, dict)) and len(value) == 0)


def _fmt(value: Any) -> str:
    if type(value) is str:  # the usual cases first
        return value
    if type(value) is int:
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "; ".join([v if type(v) is str else _fmt(v) for v in value])
    if (type(value) is dict or isinstance(value, Mapping)):
        return ", ".join([f"{k} {v if type(v) is str else _fmt(v)}" for k, v in value.items()])
    return str(value)


def _fields(fact: Any, labels: Mapping[str, str]) -> str:
    """`label value` pairs for the keys present, in the order of `labels`."""
    if not (type(fact) is dict or isinstance(fact, Mapping)):
        return _fmt(fact)
    parts = []
    for key, label in labels.items():
        value = fact.get(key)
        if value is None or value == "" or value == []:  # what `value in (None, "", [])` compares
            continue
        parts.append(f"{label} {value if type(value) is str else _fmt(value)}".strip())
    return ", ".join(parts) if parts else _fmt(fact)


def _pace(seconds: Any) -> str:
    if isinstance(seconds, int | float) and seconds > 0:
        return f"{int(seconds) // 60}:{int(seconds) % 60:02d}/km"
    return _fmt(seconds)


def _profile(fact: Any) -> str:
    if not (type(fact) is dict or isinstance(fact, Mapping)):
        return f"Athlete: {_fmt(fact)}"
    goal = fact.get("goal") or {}
    who = ", ".join(
        [_fmt(v) for v in (fact.get("display_name"), fact.get("level"), fact.get("sport"), fact.get("sex")) if v]
    )
    born = f", born {fact['birth_year']}" if fact.get("birth_year") else ""
    aim = ""
    if (type(goal) is dict or isinstance(goal, Mapping)) and goal:
        aim = "; goal " + " ".join(
            [_fmt(v) for v in (goal.get("event"), goal.get("date") and f"on {goal['date']}",
                               goal.get("target_time") and f"target {goal['target_time']}") if v]
        )
    return f"Athlete: {who}{born}{aim}"


def _chronotype(fact: Any) -> str:
    return "Chronotype: " + _fields(fact, {"type": "type", "preferred_window": "prefers training", "midsleep": "midsleep"})


def _block(fact: Any) -> str:
    if not (type(fact) is dict or isinstance(fact, Mapping)):
        return f"Training block: {_fmt(fact)}"
    head = " ".join([_fmt(v) for v in (fact.get("name"), fact.get("phase") and f"({fact['phase']} phase)") if v])
    week = f", week {fact['week']} of {fact['of_weeks']}" if fact.get("week") and fact.get("of_weeks") else ""
    rest = _fields(fact, {"weekly_volume_km": "km/week", "planned_volume_km_next_week": "next week km",
                          "key_sessions": "key sessions", "ends_on": "ends"})
    return f"Training block: {head}{week}; {rest}"


def _aerobic(fact: Any) -> str:
    if (type(fact) is dict or isinstance(fact, Mapping)) and "threshold_pace_s_per_km" in fact:
        fact = {**fact, "threshold_pace_s_per_km": _pace(fact["threshold_pace_s_per_km"])}
    return "Aerobic baseline: " + _fields(fact, {
        "vo2max_ml_kg_min": "VO2max", "threshold_pace_s_per_km": "threshold pace", "threshold_hr_bpm": "threshold HR",
        "resting_hr_bpm": "resting HR", "trend_28d": "28-day trend"})


def _mobility(fact: Any) -> str:
    return "Mobility baseline: " + _fields(fact, {"score": "score", "scale": "on", "limiters": "limiters"})


def _strength(fact: Any) -> str:
    return "Strength baseline: " + _fields(fact, {
        "relative_squat_1rm_bw": "squat 1RM x bodyweight", "single_leg_calf_raises": "single-leg calf raises",
        "plank_s": "plank seconds"})


def _readiness(label: str, labels: Mapping[str, str]) -> Renderer:
    head, every = f"{label} readiness today: ", {"score": "score", "band": "band", **labels}

    def render(fact: Any) -> str:
        return head + _fields(fact, every)

    return render


def _conditions(fact: Any) -> str:
    if not (type(fact) is dict or isinstance(fact, Mapping)):
        return f"Conditions today: {_fmt(fact)}"
    parts = []
    weather = fact.get("weather")
    if (type(weather) is dict or isinstance(weather, Mapping)) and weather:
        parts.append("weather " + _fields(weather, {"summary": "", "temp_c": "temp C", "feels_like_c": "feels like C",
                                                     "humidity_pct": "humidity %", "high_c": "high C"}).lstrip())
    air = fact.get("air_quality")
    if (type(air) is dict or isinstance(air, Mapping)) and air:
        parts.append("air " + _fields(air, {"aqi": "AQI", "category": "", "dominant_pollutant": "mainly",
                                            "pollen": "pollen"}))
    return "Conditions today: " + ("; ".join(parts) or "none reported")


FRAGMENTS: Final[tuple[Fragment, ...]] = (
    Fragment("athlete_profile", "account", 12, ("profile",), _profile),
    Fragment("chronotype", "account", 12, ("chronotype",), _chronotype),
    Fragment("training_block", "account", 30, ("training_block",), _block),
    Fragment("baseline_aerobic", "baselines", 25, ("aerobic",), _aerobic),
    Fragment("baseline_mobility", "baselines", 25, ("mobility",), _mobility),
    Fragment("baseline_strength", "baselines", 25, ("strength",), _strength),
    Fragment("readiness_training", "readiness", 45, ("training",),
             _readiness("Training", {"advice": "advice", "drivers": "drivers"})),
    Fragment("readiness_recovery", "readiness", 45, ("recovery",),
             _readiness("Recovery", {"sleep_h": "sleep h", "sleep_debt_h": "sleep debt h", "hrv_ms": "HRV ms",
                                     "hrv_baseline_ms": "HRV baseline ms"})),
    Fragment("readiness_nutrition", "readiness", 45, ("nutrition",),
             _readiness("Nutrition", {"carbs_g_per_kg_yesterday": "carbs g/kg yesterday",
                                      "carbs_target_g_per_kg": "target g/kg", "hydration": "hydration"})),
    Fragment("readiness_injury", "readiness", 45, ("injury",),
             _readiness("Injury-risk", {"flags": "flags", "pain_reported": "pain reported"})),
    Fragment("conditions_today", "conditions", 40, ("weather", "air_quality"), _conditions),
)

FRAGMENT_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in FRAGMENTS)
BY_NAME: Final[Mapping[str, Fragment]] = {f.name: f for f in FRAGMENTS}
