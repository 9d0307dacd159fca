"""Words run together (`corpus/chat_glued.yaml`): messages typed the way athletes chat on phones,
with words run together ("my kneehurts", "#longrunsunday"), 120 English and 8 in each of es, pt,
fr, de and id, half clinical. Per half: how often the route is one the labellers accept, a
clinical message is read as clinical and keeps `readiness_injury`, and an everyday one is read
as clinical.

    python -m bench.chat_glued [--misses]

Written by a helper session that never saw the policy, its vocabulary, the other corpora or the
code; labelled again by a second one from the messages alone (the file's header says how). Only
the `tune` half's misses were read when the rule that reads English words run together was
refined; `test` is only measured, so the gap between the halves is what reading bought.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import yaml

from bench.corpus import CORPUS
from bench.workload import sample_bundles
from coachctx.engine.matching import clinical_terms_in
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy, load_policy

CHAT_GLUED: Final = CORPUS / "chat_glued.yaml"
HALVES: Final = ("tune", "test")


@dataclass(frozen=True)
class GluedMessage:
    q: str
    lang: str
    clinical: bool
    intents: tuple[str, ...]
    half: str


def glued_messages() -> list[GluedMessage]:
    rows = yaml.safe_load(CHAT_GLUED.read_text(encoding="utf-8"))["questions"]
    return [GluedMessage(str(r["q"]), str(r["lang"]), bool(r["clinical"]), tuple(r["intents"]), str(r["half"]))
            for r in rows]


@dataclass(frozen=True)
class ChatGlued:
    """Counts per half: messages and those routed to an accepted intent; clinical messages, those
    read as clinical and those keeping `readiness_injury` (free tier, athlete maya); everyday
    messages, those read as clinical."""

    counts: dict[str, Counter[str]]
    misses: list[GluedMessage]
    """The tune half's messages routed elsewhere, or whose clinical reading is wrong."""

    def share(self, half: str, key: str, of: str) -> float:
        counts = self.counts[half]
        return counts[key] / counts[of] if counts[of] else 1.0


def measure_chat_glued(policy: Policy) -> ChatGlued:
    bundle = sample_bundles()["maya"]
    counts: dict[str, Counter[str]] = {half: Counter() for half in HALVES}
    misses = []
    for m in glued_messages():
        d = select(m.q, bundle, policy, tier="free")
        read, routed = bool(clinical_terms_in(m.q, policy)), d.intent.name in m.intents
        c = counts[m.half]
        c.update(messages=1, routed=routed)
        if m.clinical:
            c.update(clinical=1, read=read, kept="readiness_injury" in d.selected)
        else:
            c.update(everyday=1, false_clinical=read)
        if m.half == "tune" and (not routed or read != m.clinical):
            misses.append(m)
    return ChatGlued(counts, misses)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="print the tune half's misses (never the test half's)")
    args = parser.parse_args(argv)
    found = measure_chat_glued(load_policy())
    for half in HALVES:
        print(f"{half:5} routed {found.share(half, 'routed', 'messages'):6.1%}  read as clinical "
              f"{found.share(half, 'read', 'clinical'):6.1%}  keeps readiness_injury {found.share(half, 'kept', 'clinical'):6.1%}  "
              f"everyday read as clinical {found.share(half, 'false_clinical', 'everyday'):6.1%}")
    if args.misses:
        for m in found.misses:
            print(f"  {m.lang}  {m.q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
