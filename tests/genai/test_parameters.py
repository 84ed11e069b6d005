"""A model call's request parameters and offered tools, from hand-built attributes of
each convention; malformed values give nothing, never an exception."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from genai.parameters import MAX_TOOLS, offered_tools, request_parameters
from tests.genai.attrs import attrs


def test_otel_names_win_over_openinferences_json() -> None:
    given_attributes = attrs(
        {
            "gen_ai.request.temperature": 0.7,
            "gen_ai.request.stop_sequences": ["\\n\\n", "END"],
            "gen_ai.request.seed": 42,
            "llm.invocation_parameters": orjson.dumps(
                {"temperature": 0.1, "top_p": 0.9, "max_completion_tokens": 300}
            ).decode(),
        }
    )
    assert request_parameters(given_attributes) == [
        ("temperature", "0.7"),
        ("max tokens", "300"),
        ("top p", "0.9"),
        ("seed", "42"),
        ("stop", '["\\\\n\\\\n","END"]'),
    ]


def test_the_vercel_ai_sdks_settings() -> None:
    given_attributes = attrs({"ai.settings.maxOutputTokens": 512, "ai.settings.topK": 40})
    assert request_parameters(given_attributes) == [("max tokens", "512"), ("top k", "40")]


def test_tools_by_name_from_either_convention_each_once() -> None:
    definitions = [
        {"type": "function", "name": "get_weather"},
        {"type": "function", "function": {"name": "lookup_order"}},
        {"no": "name"},
        "junk",
    ]
    given_attributes = attrs(
        {
            "gen_ai.tool.definitions": orjson.dumps(definitions).decode(),
            "llm.tools.1.tool.json_schema": '{"type": "function", "function": {"name": "b"}}',
            "llm.tools.0.tool.json_schema": '{"name": "get_weather"}',
            "llm.tools.x.tool.json_schema": '{"name": "not indexed"}',
            "llm.tools.2.tool.json_schema": "{not json",
        }
    )
    assert offered_tools(given_attributes) == ["get_weather", "lookup_order", "b"]


def test_many_tools_are_bounded() -> None:
    many = [{"name": f"tool{n}"} for n in range(10 * MAX_TOOLS)]
    given_attributes = attrs({"gen_ai.tool.definitions": orjson.dumps(many).decode()})
    assert len(offered_tools(given_attributes)) == MAX_TOOLS


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "gen_ai.request.temperature",
                "llm.invocation_parameters",
                "gen_ai.tool.definitions",
                "llm.tools.0.tool.json_schema",
                "ai.settings.topP",
            ]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=8,
        ),
    )
)
def test_any_values_give_a_bounded_answer_never_an_exception(values: dict[str, Any]) -> None:
    pairs = attrs(values)
    assert all(isinstance(v, str) for _, v in request_parameters(pairs))
    assert len(offered_tools(pairs)) <= MAX_TOOLS
