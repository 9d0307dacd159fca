"""What chat apps and copy-paste do to a question before its words are read: markup and escapes
around the words, a word broken at a line end. Undone before tokenising, on terms and questions
alike, so a term meets the question as a person reads it."""

from __future__ import annotations

import html
import re
from typing import Final

_TAG: Final = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]{0,15}(?:\s[^<>]{0,200})?/?>")
"""An HTML tag (`<b>`, `</span>`, `<a href="...">`, `<br/>`): chat apps and pasted mail wrap words in them."""
_ENTITY: Final = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});")
_BROKEN: Final = re.compile(r"([^\W\d_])-[ \t]*\r?\n\s*([^\W\d_])")
"""A word hyphenated at a line end ("inju-\\nry"), as text pasted from a PDF or a mail is."""

def unwrap(question: str) -> str:
    """The question as a person reads it: HTML tags read as a space, character references
    (`&nbsp;`, `&#243;`) as their characters, a word hyphenated at a line end joined. A question
    with none of them is returned as is, after a few substring checks."""
    if "<" in question and ">" in question:
        question = _TAG.sub(" ", question)
    if "&" in question and ";" in question:
        question = _ENTITY.sub(lambda m: html.unescape(m.group()), question)
    if "\n" in question and "-" in question:
        question = _BROKEN.sub(r"\1\2", question)
    return question

