"""Write `coachctx/data/common_words.txt.gz`, the everyday words typo matching must never read as a
misspelling of a vocabulary term, `function_words.txt.gz`, the words no term is made of, and
`glued_words.txt.gz`, the English words a word run together is read apart into.

    python -m bench.common_words [--check]

A question word one letter from a term is read as that term misspelt ("recovry" -> "recovery").
That guess is wrong when the word is itself a word: "faster" is not a misspelt "fasted", German
"wegen" (because of) is not "wiegen" (to weigh), Russian "сколько" (how much) is not "скользко"
(slippery). The list is the `TOP` most frequent words of every spaced-script policy language
(wordfreq's lists, which ship with that package: nothing is downloaded), normalised the way the
tokeniser normalises, kept only where typo matching could apply (5+ letters of an alphabet with
written vowels). wordfreq is a dev extra; the engine reads only the file this writes.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Final

from coachctx.engine.chat_text import collapse_runs
from coachctx.engine.common_words import (
    COMMON_WORDS_FILE,
    EVERYDAY_WORDS_FILE,
    FUNCTION_WORDS_FILE,
    GLUED_LANGUAGE,
    GLUED_WORDS_FILE,
)
from coachctx.engine.matching import fuzzy_distance
from coachctx.engine.policy import LANGUAGES
from coachctx.engine.text import normalise, tokenise

TOP: Final = 10_000
FUNCTION_TOP: Final = 400
"""The function words: each language's commonest words of any length ("the", "when", "still"),
which no vocabulary term may be (tests/engine/test_vocabulary.py) and `coachctx suggest` never offers."""
EVERYDAY_TOP: Final = 5_000
"""The everyday words per language, of any length: what says which language a question is written
in, so that a word of that language is not read as another language's term ("tired" is not
Spanish "tirada", "stretch" not Swedish "stretcha")."""
WORDFREQ_CODES: Final = {"no": "nb"}
ROMANISED_HINDI: Final = """
    hai hain tha thi the ho hoon hun hu hota hoti hote hua hui hue raha rahi rahe
    ka ki ke ko se mein mai main par pe tak liye wala wali wale saath baad pehle
    mera meri mere mujhe mujhko hum humko hamara tum tumhe aap apna apni apne
    yeh ye woh wo iska iski iske uska uski uske isme usme ise use
    kya kyu kyun kaise kab kahan kitna kitni kitne kaun koi kuch
    aur ya lekin magar agar toh bhi nahi nahin na mat
    aaj abhi ab phir bahut thoda zyada jyada sab
"""
"""Hindi written in Latin letters, as chat writes it ("kya", "mujhe", "liye", "hai"): its commonest
function words (pronouns, postpositions, "to be" and "to become", question words, conjunctions and
particles, and the adverbs English has among its function words: today, now, very, more, all), written
by hand, since wordfreq has no romanised Hindi list. They are function words
only: `coachctx suggest` never offers one as a term (it offered "aaj", "today", as a training term,
and "kya", "what", "liye", "for"). Left out: verbs with a meaning of their own ("karna", to do, as
in the term "run karna"), "kal" (yesterday or tomorrow, in the scope vocabulary) and words that are
other languages' content words ("jab", "tab")."""


def _spaced_language_words(top: int) -> Iterator[tuple[str, list[str]]]:
    """Each spaced-script policy language and its `top` commonest words (wordfreq's list),
    normalised the way the tokeniser normalises, whole words only (`is_word`), commonest first."""
    from wordfreq import top_n_list

    for language, mode in LANGUAGES.items():
        if mode in ("substring", "prefix"):
            continue
        words = (collapse_runs(normalise(w)) for w in top_n_list(WORDFREQ_CODES.get(language, language), top))
        yield language, [w for w in words if is_word(w)]


def is_word(word: str) -> bool:
    """A word the tokeniser reads as one token, itself: letters and the combining marks that
    follow them (Unicode categories L* and M*). Not `str.isalpha`, which is false for a vowel sign
    or a virama and so drops "है", "में" and every other Hindi word but the mark-free ones. Digits,
    apostrophes and hyphens ("don't", "e-mail") are left out: the tokeniser splits at them."""
    return bool(word) and unicodedata.category(word[0]).startswith("L") \
        and all(unicodedata.category(ch)[0] in "LM" for ch in word) and tokenise(word).words == (word,)


def common_words(top: int = TOP, *, typo_length_only: bool = True) -> list[str]:
    return sorted({w for _, words in _spaced_language_words(top) for w in words
                   if fuzzy_distance(w) or not typo_length_only})


def function_words() -> list[str]:
    return sorted({*common_words(FUNCTION_TOP, typo_length_only=False), *ROMANISED_HINDI.split()})


def everyday_words(top: int = EVERYDAY_TOP) -> list[str]:
    """One line per spaced-script language: its code, a tab, its `top` commonest words."""
    return [f"{language}\t{' '.join(dict.fromkeys(words))}" for language, words in _spaced_language_words(top)]


GLUED_ZIPF: Final = 2.0
"""The English words that are words, not words run together: those wordfreq puts at this Zipf
frequency or more (about one in 100 million words; 90,000 words), so "downhill", "backstroke",
"repeats" and "parkrun" stay whole and "kneepain" (never written as one word) does not."""


def glued_words() -> list[str]:
    """English words of `GLUED_ZIPF` or more, letters only, commonest first, on one line."""
    from wordfreq import iter_wordlist, zipf_frequency

    words = (w for w in iter_wordlist(GLUED_LANGUAGE) if w.isascii() and w.isalpha())
    return [" ".join(dict.fromkeys(w for w in words if zipf_frequency(w, GLUED_LANGUAGE) >= GLUED_ZIPF))]


def render(words: Sequence[str]) -> bytes:
    # mtime=0: the same words give the same bytes, so --check can compare them
    return gzip.compress(("\n".join(words) + "\n").encode("utf-8"), mtime=0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.common_words", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the shipped file differs from a fresh one")
    args = parser.parse_args(argv)
    stale = []
    for path, words in ((COMMON_WORDS_FILE, common_words()), (FUNCTION_WORDS_FILE, function_words()),
                        (EVERYDAY_WORDS_FILE, everyday_words()), (GLUED_WORDS_FILE, glued_words())):
        data = render(words)
        if args.check:
            if path.read_bytes() != data:
                stale.append(path)
            continue
        path.write_bytes(data)
        print(f"wrote {path} ({len(data):,} bytes)")
    if stale:
        print(f"stale: {', '.join(map(str, stale))}: rerun without --check")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
