"""A text's distinct words, as the full-text index of either store keeps them.

A span's text is stored as its words (`span_texts.body`, `joined`): the words are all
either index reads of it (SQLite's FTS5, PostgreSQL's tsvector, which is made of the
body). A model call's 3 KB of messages have about 2 KB of distinct words
(bench_worker --genai); SQLite's writer thread stored and indexed a GenAI span in
70-81 us of CPU, 86-92 with the whole text (three drains of 20,000 spans each,
alternated). The `text` filter looks its words up split here too (storage/
index_filters.py). PostgreSQL's own parser (`to_tsvector`) cost the server about 500 us
a model call's 3 KB of text.

A word is a longest run of the characters str.isalnum() accepts (as the dashboard
splits the filter's text) of the case-folded text (`str.casefold`: without context,
where lower() makes a final sigma of a Σ before a separator); a word of more than
MAX_WORD_BYTES bytes is not kept, as PostgreSQL keeps none. The C extension
(storage/_words.c) gives a text's words joined as the regular expression here does, in
3 us where it takes 94 (a 3 KB text of the benchmark's).
"""

from __future__ import annotations

import re
import sys

from proto_json import fastpath

FAST_WORDS = fastpath.extension("storage._words")
#: A word: a longest run of alphanumeric characters (the dashboard splits the `text`
#: filter's text by it too).
WORD = re.compile(r"[^\W_]+")
#: The letters Python's str.isalnum() accepts that the tables of SQLite's unicode61
#: tokenizer take for none (SQLite 3.40: New Tai Lue's vowel signs, two Vedic signs).
_LETTERS_FTS5_SPLITS_AT = "".join(
    map(chr, (*range(0x19B0, 0x19C1), 0x19C8, 0x19C9, 0x1CF2, 0x1CF3))
)
#: SQLite: how FTS5 splits a text (and a query) into its tokens: a stored text's words
#: (`joined`) one token each.
TOKENIZER = f"unicode61 remove_diacritics 0 tokenchars '{_LETTERS_FTS5_SPLITS_AT}'"
#: The FTS5 table option of it, as SQL: `tokenize=` this.
TOKENIZE = "'" + TOKENIZER.replace("'", "''") + "'"
#: The longest lexeme PostgreSQL keeps, in bytes.
MAX_WORD_BYTES = 2046


def tsvector_of(given: str) -> str:
    """SQL of the tsvector of the words given as the text `given` (an expression):
    `joined`, as the worker stores them."""
    return f"array_to_tsvector(string_to_array({given}, ' '))"


def joined(text: str) -> str:
    """What a text's row keeps of it: its distinct words, case-folded, in the order they
    first occur, one space between."""
    folded = text.casefold()
    if FAST_WORDS is not None:
        found: str = FAST_WORDS.joined_words(folded, MAX_WORD_BYTES)
        return found
    return " ".join(split(folded, MAX_WORD_BYTES))


def split(folded: str, max_bytes: int) -> list[str]:
    """The distinct words of a case-folded text of at most `max_bytes` bytes each, in
    the order they first occur (what storage/_words.c does, in Python)."""
    return [word for word in dict.fromkeys(WORD.findall(folded)) if _bytes(word) <= max_bytes]


def tsquery(text: str) -> str:
    """A tsquery of every word of `text` (each quoted: a lexeme as it is); one that
    matches nothing ('') when it has none, or one too long to be kept."""
    every = split(text.casefold(), sys.maxsize)
    if not every or any(_bytes(word) > MAX_WORD_BYTES for word in every):
        return ""
    return " & ".join(f"'{word}'" for word in every)


def _bytes(word: str) -> int:
    return len(word.encode("utf-8", "surrogatepass"))
