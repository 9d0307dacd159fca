"""The chat-style clinical sets: how often a message typed the way athletes chat is read as
clinical when it reports pain, an injury, an illness or medical care, and keeps `readiness_injury`
in the prompt; how often an everyday message is read so.

    python -m bench.chat_clinical [--second | --uncovered] [--misses]

`corpus/chat_clinical.yaml`: written by a helper session that never saw the policy, its vocabulary,
the other corpora or the code (the file's header says how), 15 messages in each of the 22 policy
languages, two thirds clinical. It is only measured: no term was chosen by reading it.

`corpus/chat_clinical_2.yaml` (`--second`): 20 more in each language, written the same way by
another helper, split into halves by a fixed seed: only the `tune` half's misses are ever listed
(`--misses`), `test` is only measured.

`corpus/chat_uncovered.yaml` (`--uncovered`): 20 messages in each of 16 languages the policy has no
terms in, written the same way after the rule that keeps `readiness_injury` for a question the
policy cannot read (`unread_question`) was built; only measured. There an everyday message keeping
`readiness_injury` is the rule's cost, and is reported.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import yaml

from bench.corpus import CORPUS
from bench.workload import sample_bundles
from coachctx.engine.matching import clinical_terms_in
from coachctx.engine.pipeline import select
from coachctx.engine.policy import Policy, load_policy

CHAT_CLINICAL: Final = CORPUS / "chat_clinical.yaml"
CHAT_CLINICAL_2: Final = CORPUS / "chat_clinical_2.yaml"
CHAT_UNCOVERED: Final = CORPUS / "chat_uncovered.yaml"
CHAT_EVERYDAY: Final = CORPUS / "chat_everyday.yaml"
"""220 hard everyday messages (figurative pain, hospital night shifts, a captain called "Doc"): read
once to find false friends, so tuning data."""


@dataclass(frozen=True)
class Message:
    q: str
    lang: str
    clinical: bool
    half: str = ""
    """`tune` or `test` in a set split into halves."""


def messages(path: Path = CHAT_CLINICAL) -> list[Message]:
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]
    return [Message(str(r["q"]), str(r["lang"]), bool(r["clinical"]), str(r.get("half", ""))) for r in rows]


def everyday_read_as_clinical(policy: Policy) -> float:
    """The share of the hard everyday set (`CHAT_EVERYDAY`) read as clinical."""
    found = messages(CHAT_EVERYDAY)
    return sum(bool(clinical_terms_in(m.q, policy)) for m in found) / len(found)


@dataclass(frozen=True)
class ChatClinical:
    """Counts per language: clinical messages, those read as clinical and those keeping
    `readiness_injury` (free tier, athlete maya); everyday messages, those read as clinical and
    those keeping `readiness_injury`. The same per half for a set split into halves (`halves`)."""

    counts: dict[str, Counter[str]]
    misses: list[Message]
    """The clinical messages that lose `readiness_injury` and, in a set split into halves, the
    tune half's messages read wrongly; never a message of a test half."""
    hard_everyday: float
    """`everyday_read_as_clinical`."""
    halves: dict[str, Counter[str]] = field(default_factory=dict)

    def share(self, key: str, of: str, language: str | None = None, *, half: str | None = None) -> float:
        if half is not None:
            counts = self.halves[half]
        else:
            counts = self.counts[language] if language else sum(self.counts.values(), Counter())
        return counts[key] / counts[of] if counts[of] else 1.0


def measure_chat_clinical(policy: Policy, path: Path = CHAT_CLINICAL) -> ChatClinical:
    bundle = sample_bundles()["maya"]
    counts: dict[str, Counter[str]] = {}
    halves: dict[str, Counter[str]] = {}
    misses = []
    for m in messages(path):
        read = bool(clinical_terms_in(m.q, policy))
        found = Counter(clinical=1, read=read) if m.clinical else Counter(everyday=1, false_clinical=read)
        kept = "readiness_injury" in select(m.q, bundle, policy, tier="free").selected
        found["kept" if m.clinical else "everyday_kept"] = kept
        counts.setdefault(m.lang, Counter()).update(found)
        if m.half:
            halves.setdefault(m.half, Counter()).update(found)
        lost = m.clinical and not found["kept"]
        if (lost and not m.half) or (m.half == "tune" and (lost or read != m.clinical)):
            misses.append(m)
    return ChatClinical(counts, misses, everyday_read_as_clinical(policy), halves)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--second", action="store_true", help=f"measure {CHAT_CLINICAL_2.name}, per half")
    which.add_argument("--uncovered", action="store_true", help=f"measure {CHAT_UNCOVERED.name}")
    parser.add_argument("--misses", action="store_true", help="print the clinical messages that lose readiness_injury "
                                                              "(with --second: the tune half's messages read wrongly)")
    args = parser.parse_args(argv)
    found = measure_chat_clinical(load_policy(), CHAT_CLINICAL_2 if args.second else
                                  CHAT_UNCOVERED if args.uncovered else CHAT_CLINICAL)
    for language in sorted(found.counts):
        print(f"{language}  read as clinical {found.share('read', 'clinical', language):6.1%}  "
              f"keeps readiness_injury {found.share('kept', 'clinical', language):6.1%}  "
              f"everyday read as clinical {found.share('false_clinical', 'everyday', language):6.1%}  "
              f"everyday keeps it {found.share('everyday_kept', 'everyday', language):6.1%}")
    print(f"all read as clinical {found.share('read', 'clinical'):6.1%}  keeps readiness_injury "
          f"{found.share('kept', 'clinical'):6.1%}  everyday read as clinical {found.share('false_clinical', 'everyday'):6.1%}  "
          f"everyday keeps it {found.share('everyday_kept', 'everyday'):6.1%}")
    print(f"hard everyday set read as clinical {found.hard_everyday:6.1%}")
    for half in found.halves:
        print(f"{half} half: read as clinical {found.share('read', 'clinical', half=half):6.1%}  keeps readiness_injury "
              f"{found.share('kept', 'clinical', half=half):6.1%}  everyday read as clinical "
              f"{found.share('false_clinical', 'everyday', half=half):6.1%}")
    if args.misses:
        for m in found.misses:
            print(f"  {m.lang}  {m.q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
