"""The routing chart: keyword score per intent against the threshold and the margin, as a plain
Vega-Lite spec (a dict: no Altair objects to build and validate on every rerun)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from coachctx.engine.decision import Decision
from coachctx.playground.words import score_rows

STANDING_COLORS: Final[Mapping[str, str]] = {"routed": "#1f77b4", "contender": "#ff7f0e", "other": "#b0b0b0"}


def routing_chart(d: Decision) -> dict[str, Any]:
    """Keyword score per intent with the confidence threshold (a red rule) and the margin (a
    shaded band below the top score: a runner-up inside it makes routing unsure)."""
    rows = score_rows(d)
    threshold = d.intent.threshold
    margin = d.intent.required_margin
    top = max((float(r["score"]) for r in rows), default=0.0)
    x_max = max(top, threshold, 0.5) * 1.25 + 0.25
    scale = {"domain": [0, x_max]}
    bars = {
        "data": {"values": rows}, "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "intent", "type": "nominal", "sort": [r["intent"] for r in rows], "title": None,
                  "axis": {"labelOverlap": False}},
            "x": {"field": "score", "type": "quantitative", "title": "keyword score", "scale": scale,
                  "axis": {"tickCount": 6}},
            "color": {"field": "standing", "type": "nominal", "title": "standing",
                      "scale": {"domain": list(STANDING_COLORS), "range": list(STANDING_COLORS.values())}},
            "tooltip": [{"field": f} for f in ("intent", "score", "standing", "matched")],
        },
    }
    layers: list[dict[str, Any]] = []
    if top > 0:
        band = {"values": [{"start": max(top - margin, 0.0), "end": top,
                            "label": f"margin {margin:g}: a runner-up in here makes the rules unsure"}]}
        layers.append({"data": band, "mark": {"type": "rect", "opacity": 0.12, "color": "#ff7f0e"},
                       "encoding": {"x": {"field": "start", "type": "quantitative", "scale": scale},
                                    "x2": {"field": "end"}, "tooltip": [{"field": "label"}]}})
        # the margin's label sits a line above the threshold's: both can be at the same x (a
        # runner-up at zero with threshold 1 and margin 1)
        layers.append({"data": band, "mark": {"type": "text", "align": "left", "dx": 3, "dy": -18, "color": "#c45f00",
                                              "baseline": "bottom"},
                       "encoding": {"x": {"field": "start", "type": "quantitative", "scale": scale},
                                    "y": {"value": 0}, "text": {"value": f"margin {margin:g}"}}})
    rule = {"values": [{"threshold": threshold, "label": f"threshold {threshold:g}"}]}
    layers += [
        bars,
        {"data": rule, "mark": {"type": "rule", "color": "#d62728", "strokeDash": [6, 4], "size": 2},
         "encoding": {"x": {"field": "threshold", "type": "quantitative", "scale": scale},
                      "tooltip": [{"field": "label"}]}},
        {"data": rule, "mark": {"type": "text", "align": "left", "dx": 4, "dy": -4, "color": "#d62728",
                                "baseline": "bottom"},
         "encoding": {"x": {"field": "threshold", "type": "quantitative", "scale": scale},
                      "text": {"field": "label", "type": "nominal"}, "y": {"value": 0}}},
    ]
    return {"height": 36 * len(rows) + 20, "layer": layers}
