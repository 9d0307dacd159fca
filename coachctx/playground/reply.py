"""What a reply is checked for on the page: its length against the Decision's `max_words`, and,
on a clinical question, a closing sentence that refers the athlete to a professional — found by
the policy's `referral_terms`. (Streaming the reply is the model adapter's: `coachctx.model`.)"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coachctx.engine.decision import Decision
from coachctx.engine.policy import Policy
from coachctx.engine.text import tokenise


def count_words(text: str) -> int:
    """Words as the engine tokenises them; each Han/Kana character counts as one word."""
    tokens = tokenise(text)
    return len(tokens.words) + len(tokens.unspaced.replace(" ", ""))


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def referral_line(text: str, policy: Policy) -> str | None:
    """The closing sentence that refers the athlete to a professional, if one of the last two
    sentences names one of the policy's referral terms (in any of its languages: a reply may
    not be in the question's)."""
    pattern = policy.derived("referral_terms", _referral_pattern)
    if pattern is None:
        return None
    sentences = [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]
    for sentence in reversed(sentences[-2:]):
        if pattern.search(sentence.casefold()):
            return sentence
    return None


def _referral_pattern(policy: Policy) -> re.Pattern[str] | None:
    """One pattern for every referral term, case folded: an ASCII term starts a word ("physio"
    also finds "physiotherapist"), any other is found anywhere (Han, Kana and Hangul have no
    spaces to start a word at)."""
    terms = dict.fromkeys(t.casefold() for terms in policy.referral_terms.values() for t in terms)
    if not terms:
        return None
    return re.compile("|".join(rf"(?<!\w){re.escape(t)}" if t.isascii() else re.escape(t) for t in terms))


@dataclass(frozen=True)
class ReplyReport:
    words: int
    max_words: int
    clinical: bool
    clinical_terms: tuple[str, ...]
    referral: str | None
    referral_checked: bool
    """False when the policy lists no referral terms, so a referral could not be found."""

    @property
    def within_limit(self) -> bool:
        return self.words <= self.max_words


def reply_report(text: str, d: Decision, policy: Policy) -> ReplyReport:
    """`text` checked against the Decision it answers and the policy that made it."""
    return ReplyReport(words=count_words(text), max_words=d.max_words,
                       clinical=d.clinical.is_clinical,
                       clinical_terms=d.clinical.terms, referral=referral_line(text, policy),
                       referral_checked=any(policy.referral_terms.values()))
