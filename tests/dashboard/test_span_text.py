"""Span text as HTML: Markdown, JSON and plain text, never running what strangers wrote."""

from __future__ import annotations

import pytest

from dashboard.span_pane import attribute_rows, conversation_ends, message_sources, message_texts
from dashboard.span_text import FOLD_CHARS, SHOWN_CHARS, content_html, markdown_html, value_html
from genai.messages import MAX_CONTENT
from tests.dashboard.reading import HANDLER, HOSTILE, JS_LINK, SCRIPT, SVG_BREAK, SYSTEM_PROMPT


@pytest.mark.parametrize("render", [markdown_html, value_html, content_html])
@pytest.mark.parametrize("text", [SCRIPT, HANDLER, SVG_BREAK, HOSTILE, f'{{"x": "{SCRIPT}"}}'])
def test_no_markup_of_the_span_survives(render: object, text: str) -> None:
    """Tags and handlers in span text come out as text, in every view."""
    html = str(render(text))  # type: ignore[operator]
    assert "<script" not in html and "<img" not in html and "<svg" not in html
    assert "&lt;" in html


def test_markdown_links_are_http_or_https_only() -> None:
    """A `javascript:` link stays text; an https link is a link that opens nothing of ours."""
    html = str(markdown_html(f"{JS_LINK} [docs](https://example.com) <javascript:alert(1)>"))
    assert 'href="javascript' not in html.lower()
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow">docs</a>' in html


def test_markdown_keeps_newlines_and_skips_images() -> None:
    """A single newline is a line break; an image is not fetched (its text stays)."""
    html = str(markdown_html("one\ntwo ![cat](https://example.com/cat.png)"))
    assert "one<br />\ntwo" in html and "<img" not in html


def test_markdown_tables_and_strikethrough_are_rendered() -> None:
    """A model's answer in GitHub's Markdown: its table is a table, its ~~struck~~ text
    struck; a cell's markup stays text."""
    html = str(markdown_html(f"| step | tool |\n|---|---|\n| 1 | {SCRIPT} |\n\n~~old~~ new"))
    assert "<table>" in html and "<th>step</th>" in html and "<td>1</td>" in html
    assert "<s>old</s> new" in html and "<script" not in html


def test_json_text_is_indented_and_foldable() -> None:
    """A JSON object in a string is shown indented, under a summary that folds it."""
    html = str(value_html('{"order": 7, "items": [1, 2]}'))
    assert '<details class="json" open><summary>JSON object, 2 keys</summary>' in html
    assert "\n  &#34;order&#34;: 7" in html


def test_json_nested_deeper_than_it_can_be_written_is_text() -> None:
    """JSON nested deeper than orjson writes again (254 levels) is shown as its text;
    a find in a span holding it looks through the text."""
    from dashboard.trace_find import span_text

    deep = "[" * 300 + "]" * 300
    for render in (value_html, content_html):
        html = str(render(deep))
        assert "JSON array" not in html and "[[[" in html
    pairs = [
        {"key": "note", "value": {"stringValue": '{"a": "\\u00e9' + deep + '"}'}},
        {"key": "deep", "value": {"stringValue": deep[:299] + '"\\u00e9"' + deep[299:]}},
    ]
    assert "note" in span_text({"name": "s", "attributes": pairs})  # fmt: skip


def test_long_values_fold_and_show_once() -> None:
    """A long text is folded with Show all; the same text again says where it was;
    the attribute the messages came from is folded shut."""
    pairs = [
        {"key": k, "value": {"stringValue": SYSTEM_PROMPT}}
        for k in ("app.prompt", "prompt.copy", "gen_ai.system_instructions")
    ]
    rows = attribute_rows(pairs, message_sources({"inputMessages": "gen_ai.input.messages"}))
    first, second, third = (str(html) for _, html in rows)
    assert "Show all (8,250 characters)" in first and len(SYSTEM_PROMPT) > FOLD_CHARS
    assert "Same text as <code>app.prompt</code>" in second and SYSTEM_PROMPT not in second
    assert "Same text as" in third


@pytest.mark.parametrize("render", [value_html, content_html])
def test_a_text_of_megabytes_is_shown_up_to_its_bound(render: object) -> None:
    """A 9 MB attribute or message puts its first SHOWN_CHARS characters on the page,
    saying how long it is and where the rest is, not 9 MB (nor seconds of Markdown)."""
    text = "line of a very long tool output\n" * 300_000  # 9.6 MB
    html = str(render(text))  # type: ignore[operator]
    assert len(html) < 2 * SHOWN_CHARS + 10_000
    assert f"the first {SHOWN_CHARS:,} of {len(text):,} characters" in html
    assert "the trace's JSON" in html


def test_a_long_text_the_messages_show_is_not_shown_again() -> None:
    """An attribute holding a long message's text says which message shows it."""
    view = {"inputMessages": [{"role": "system", "content": SYSTEM_PROMPT}], "outputMessages": []}
    pairs = [{"key": "app.prompt", "value": {"stringValue": SYSTEM_PROMPT}}]
    ((_, html),) = attribute_rows(pairs, (), message_texts(view))
    assert "Same text as the system message above" in html and SYSTEM_PROMPT not in html


def test_indexed_message_attributes_are_marked_as_shown() -> None:
    """OpenInference's indexed message attributes are folded under "Shown as messages"."""
    pairs = [{"key": "llm.input_messages.0.message.content", "value": {"stringValue": "hi"}}]
    rows = attribute_rows(pairs, message_sources({"inputMessages": "llm.input_messages.N"}))
    assert "Shown as messages above" in str(rows[0][1])


def test_a_long_conversation_folds_all_but_its_instructions_and_last_turns() -> None:
    """Ten messages show whole; past that, the leading system or developer messages (two
    at most) and the last six stay open, the rest fold."""
    turns = [{"role": "user"}, {"role": "assistant"}] * 20
    assert conversation_ends(turns[:10]) == (10, 10)
    assert conversation_ends(turns[:11]) == (0, 5)
    assert conversation_ends([{"role": "system"}, {"role": "developer"}, *turns]) == (2, 36)
    assert conversation_ends([{"role": "system"}] * 3 + turns) == (2, 37)


def test_only_an_attribute_holding_a_cut_text_is_shown_open_as_its_whole() -> None:
    """OpenInference's indexed messages: the content past the view's bound is shown open
    as the whole text; the role beside it stays folded as shown above."""
    long = "x" * (MAX_CONTENT + 100)
    pairs = [
        {"key": "llm.input_messages.0.message.role", "value": {"stringValue": "user"}},
        {"key": "llm.input_messages.0.message.content", "value": {"stringValue": long}},
    ]
    sources = message_sources({"inputMessages": "llm.input_messages.N"})
    (_, role), (_, content) = attribute_rows(pairs, sources, {}, cut=True)
    assert "Shown as messages above" in role and "The whole text" not in role
    assert "The whole text of the messages above" in content
