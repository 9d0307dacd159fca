"""Matching terms in a question: the policy's term tables (vocabulary, clinical, fragment and scope
terms) compiled once into `TermMatcher`s, which find every term a question uses — stemmed per
language, substrings for Han/Kana, prefixes for Hangul, misspellings and compound parts at reduced
weight, and never a word of the question's own language read as an unrelated language's term.

Routing (`routing.py`) scores intents from what the vocabulary matcher finds. The modules:

- `terms.py`         a term, and the keys it is filed under
- `stems.py`         a question word's stems under every algorithm, a compound's part stems
- `table.py`         `TermMatcher`: a table compiled once, grown or shrunk by one term
- `find.py`          the terms of one question: phrases, substrings, prefixes, readings; the
                     words of a question looked up in several tables at once (`SharedWords`)
- `readings.py`      misspellings, compound parts and Arabic clitics of unknown words
- `language.py`      the question's language; no false friends from unrelated languages
- `policy_terms.py`  the policy's four tables, shared per process and read together; scope and clinical
                     terms, named fragments
- `unread.py`        a question the policy cannot read: most of its words in no language it knows
"""

from coachctx.engine.matching.language import LANGUAGE_FAMILIES
from coachctx.engine.matching.policy_terms import (
    CLINICAL_LABEL,
    clinical_matcher,
    clinical_terms_in,
    compile_matchers,
    compile_shared,
    forget_words,
    fragment_matcher,
    infer_scope,
    named_fragments_in,
    scope_matcher,
    unread_words_in,
    vocabulary_in,
    vocabulary_matcher,
)
from coachctx.engine.matching.readings import FUZZY_FACTOR, FUZZY_SCRIPTS, PART_FACTOR, fuzzy_distance
from coachctx.engine.matching.stems import ALGORITHMS, COMPOUNDING, STEMMER_SCRIPTS, part_stems, word_stems
from coachctx.engine.matching.table import TermMatcher
from coachctx.engine.matching.terms import MAX_PHRASE_WORDS, Term, filed_under, term_matching

__all__ = [
    "ALGORITHMS",
    "CLINICAL_LABEL",
    "COMPOUNDING",
    "FUZZY_FACTOR",
    "FUZZY_SCRIPTS",
    "LANGUAGE_FAMILIES",
    "MAX_PHRASE_WORDS",
    "PART_FACTOR",
    "STEMMER_SCRIPTS",
    "Term",
    "TermMatcher",
    "clinical_matcher",
    "clinical_terms_in",
    "compile_matchers",
    "compile_shared",
    "filed_under",
    "forget_words",
    "fragment_matcher",
    "fuzzy_distance",
    "infer_scope",
    "named_fragments_in",
    "part_stems",
    "scope_matcher",
    "term_matching",
    "unread_words_in",
    "vocabulary_in",
    "vocabulary_matcher",
    "word_stems",
]
