"""The view never raises and stays bounded, whatever a span carries."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from genai import view_of
from genai.messages import MAX_CONTENT, MAX_MESSAGES
from genai.view import PREVIEW_CHARS, message_view
from tests.fuzz import FUZZ
from tests.genai.attrs import attrs, dumps

_KEYS = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.prompt.0.content",
        "gen_ai.prompt.0.role",
        "gen_ai.completion.0.tool_calls.0.arguments",
        "llm.input_messages.0.message.content",
        "llm.input_messages.1.message.contents.0.message_content.text",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
        "openinference.span.kind",
        "llm.token_count.prompt",
        "ai.prompt.messages",
        "ai.prompt",
        "ai.response.toolCalls",
        "gen_ai.usage.cost",
        "input.value",
        "agent.name",
    ]
)
_JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_VALUES = st.one_of(
    st.text(max_size=40),
    st.integers(),
    st.floats(),
    st.booleans(),
    _JSONISH.map(dumps),
    st.lists(st.text(max_size=5), max_size=3),
)
_ANY_VALUE = st.one_of(
    st.fixed_dictionaries({"stringValue": st.text(max_size=10) | st.integers()}),
    st.fixed_dictionaries({"intValue": st.text(max_size=10) | st.integers()}),
    st.fixed_dictionaries({"doubleValue": st.floats() | st.text(max_size=3)}),
    st.dictionaries(st.text(max_size=12), _JSONISH, max_size=2),
    _JSONISH,
)
#: OTLP/JSON attributes of any keys and values, and GenAI events of any attributes.
_ATTRIBUTES = st.lists(
    st.fixed_dictionaries({"key": _KEYS | st.text(max_size=5), "value": _ANY_VALUE})
)
_EVENTS = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["gen_ai.choice", "gen_ai.user.message", "x"])},
        optional={"attributes": st.lists(st.dictionaries(st.text(max_size=5), _JSONISH))},
    )
)


@FUZZ
@given(st.dictionaries(_KEYS, _VALUES), st.sampled_from([None, "llm_call", "agent", "server"]))
def test_any_values_of_the_known_attributes_give_a_view_or_none(
    pairs: dict[str, Any], kind: str | None
) -> None:
    """Any value of any attribute the view reads (wrong types, bad JSON, negative or
    huge counts) gives a view with sane fields, or None; never an exception."""
    view = view_of(attrs(pairs), None, "span", kind)
    if view is not None:
        for tokens in (view.input_tokens, view.output_tokens, view.total_tokens):
            assert tokens is None or (isinstance(tokens, int) and tokens >= 0)
        assert view.client_cost is None or view.client_cost >= 0
        assert len(view.input_preview or "") <= PREVIEW_CHARS


@FUZZ
@given(_ATTRIBUTES, _EVENTS | _JSONISH)
def test_malformed_otlp_never_raises(attributes: list[Any], events: Any) -> None:
    """Malformed OTLP/JSON itself (values of no known shape, events of any form)."""
    view_of(attributes, events, None, None)


def _same_messages(attributes: Any, events: Any, kind: str | None) -> None:
    """The messages-only view of a span of its view's type has the view's messages."""
    view = view_of(attributes, events, "span", kind)
    if view is None:
        return
    alone = message_view(attributes, events, view.type)
    assert (alone.input_messages, alone.output_messages) == (
        view.input_messages,
        view.output_messages,
    )
    assert (alone.input_preview, alone.output_preview) == (view.input_preview, view.output_preview)


@FUZZ
@given(st.dictionaries(_KEYS, _VALUES), st.sampled_from([None, "llm_call", "agent", "tool"]))
def test_the_messages_alone_are_the_views(pairs: dict[str, Any], kind: str | None) -> None:
    """Any values of the attributes the view reads: the messages read alone (as the
    worker reads them for the text index) are the whole view's."""
    _same_messages(attrs(pairs), None, kind)


@FUZZ
@given(_ATTRIBUTES, _EVENTS)
def test_the_messages_alone_of_any_otlp_are_the_views(attributes: list[Any], events: Any) -> None:
    """The same for malformed OTLP/JSON and message events."""
    _same_messages(attributes, events, None)


def test_ten_thousand_indexed_messages_are_bounded() -> None:
    """10,000 indexed message attributes give at most MAX_MESSAGES messages."""
    pairs: dict[str, Any] = {"openinference.span.kind": "LLM"}
    for n in range(10_000):
        pairs[f"llm.input_messages.{n}.message.role"] = "user"
        pairs[f"llm.input_messages.{n}.message.content"] = f"message {n}"
    view = view_of(attrs(pairs))
    assert view is not None
    assert len(view.input_messages) == MAX_MESSAGES
    assert view.input_messages[0].content == "message 0"


def test_a_200_kb_message_is_cut() -> None:
    """A 200 KB message is kept to MAX_CONTENT characters (and the preview shorter)."""
    big = "x" * 200_000
    view = view_of(
        attrs(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": big}]}]
                ),
            }
        )
    )
    assert view is not None
    content = view.input_messages[0].content or ""
    assert MAX_CONTENT <= len(content) <= MAX_CONTENT + 1
    assert view.input_preview == "x" * PREVIEW_CHARS


def test_bad_token_counts_are_none() -> None:
    """Negative, fractional, non-numeric and boolean token counts, and those of a
    trillion or more, are None, and the next attribute in the order is read instead."""
    for bad in (
        -1,
        1.5,
        "many",
        True,
        "1e3",
        "\u00b2",
        " \u00b3 ",  # superscripts: digits
        10**12,
        str(10**12),
        2**62,
        "4611686018427387903",
    ):  # no real count
        view = view_of(
            attrs(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.usage.input_tokens": bad,
                    "gen_ai.usage.prompt_tokens": 7,
                }
            )
        )
        assert view is not None
        assert view.input_tokens == 7, bad
        assert view.sources["inputTokens"] == "gen_ai.usage.prompt_tokens"


def test_digits_no_number_is_made_of_are_no_count_and_no_index() -> None:
    """A superscript is a digit (str.isdigit) that int() refuses: as an intValue, a
    token count in text, a message's index, it gives nothing, never an exception."""
    attributes = [
        {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "\u00b2"}},
        {"key": "gen_ai.usage.output_tokens", "value": {"stringValue": "\u00b9\u00b2"}},
        {"key": "gen_ai.prompt.\u00b2.content", "value": {"stringValue": "x"}},
        {"key": "gen_ai.completion.0.tool_calls.\u00b9.name", "value": {"stringValue": "t"}},
    ]
    view = view_of(attributes)
    assert view is not None and view.model == "m"
    assert (view.input_tokens, view.output_tokens, view.input_messages) == (None, None, ())


def test_invalid_json_messages_are_empty() -> None:
    """A messages attribute that is not JSON gives no messages, not an error."""
    view = view_of(attrs({"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{oops"}))
    assert view is not None
    assert view.input_messages == ()
    assert "inputMessages" not in view.sources
