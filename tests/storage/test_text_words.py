"""The words the text indexes keep of a text (storage/text_words.py), and the C splitter
(storage/_words.c) against the Python one: the very same words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import span_rows, text_words
from storage.text_words import MAX_WORD_BYTES, joined, split, tsquery
from tests.fuzz import FUZZ

FAST = text_words.FAST_WORDS


def words(text: str) -> list[str]:
    """The words `joined` keeps of a text."""
    return joined(text).split()


#: Characters of every kind a word may hold or end at: ASCII, Latin-1, other scripts,
#: combining marks, digits of other systems, symbols, astral ones, lone surrogates.
_CHARACTERS = st.one_of(
    st.sampled_from("aZ09_-.:' \n\t\u00e9\u00c9\u00bd\u00aa\u0130\u0301\u2460\u0663\u4e2d\u00a0"),
    st.characters(codec=None, exclude_categories=()),
)


def test_a_text_gives_its_distinct_words_case_folded_in_order() -> None:
    text = "Hello, World! hello gpt-4o lookup_order \u00c7a 12.5 \u00bd caf\u00e9"
    assert words(text) == [
        "hello",
        "world",
        "gpt",
        "4o",
        "lookup",
        "order",
        "\u00e7a",
        "12",
        "5",
        "\u00bd",
        "caf\u00e9",
    ]
    assert words("") == [] and words(" -- ") == []


def test_a_word_is_folded_as_the_filter_folds_it_whatever_follows_it() -> None:
    """lower() makes a final sigma of a Σ before a separator, but not before a dot and a
    letter: the text's words and the filter's are folded without context."""
    assert words("ΟΔΟΣ.ΑΘΗΝΑ Straße") == [
        "οδοσ",
        "αθηνα",
        "strasse",
    ]
    for asked in ("ΟΔΟΣ", "οδος"):  # ΟΔΟΣ, οδος
        assert tsquery(asked) == "'οδοσ'"


def test_a_word_longer_than_postgresql_keeps_is_left_out() -> None:
    kept, dropped = "a" * MAX_WORD_BYTES, "b" * (MAX_WORD_BYTES + 1)
    assert words(f"{kept} {dropped} c") == [kept, "c"]
    assert words("\u00e9" * (MAX_WORD_BYTES // 2 + 1)) == []  # two bytes each


def test_a_query_needs_every_word_and_one_without_a_keepable_word_matches_nothing() -> None:
    assert tsquery("GPT-4o") == "'gpt' & '4o'"
    assert tsquery("order order") == "'order'"
    assert tsquery("!!") == ""
    assert tsquery("b" * (MAX_WORD_BYTES + 1)) == ""


@FUZZ
@given(st.text(_CHARACTERS, max_size=80))
def test_a_texts_words_are_the_words_of_its_stored_words(text: str) -> None:
    """A text is stored as its words (`joined`), and its words are read from what is
    stored (the words' upgrade, the index of either store): they are the text's."""
    assert words(joined(text)) == words(text)
    assert joined(joined(text)) == joined(text)


@pytest.mark.skipif(FAST is None, reason="the C splitter is not built")
@FUZZ
@given(st.text(_CHARACTERS, max_size=80), st.integers(0, 12))
def test_the_c_splitter_gives_the_words_python_does(text: str, max_bytes: int) -> None:
    assert FAST is not None
    assert FAST.joined_words(text, max_bytes) == " ".join(split(text, max_bytes))


def test_built_with_the_row_builder() -> None:
    """Both extensions build the same way: one missing alone is a broken build."""
    assert (FAST is None) == (span_rows.FAST_ROWS is None)


@pytest.mark.skipif(FAST is None, reason="the C splitter is not built")
def test_the_c_splitter_refuses_what_is_not_text() -> None:
    assert FAST is not None
    with pytest.raises(TypeError):
        FAST.joined_words(b"bytes", 10)
    with pytest.raises(TypeError):
        FAST.joined_words("text")
    assert FAST.joined_words("a a", 1) == "a"
    assert FAST.joined_words("\u0100 x \u0100", 8) == "\u0100 x"
    assert FAST.joined_words("a\u2014b", 8) == "a b"  # of the narrowest width, as a str
