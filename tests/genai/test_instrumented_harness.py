"""The harness yields real spans from each instrumentation, with the fake server's numbers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx
import pytest

from tests.genai import emit, fake_openai
from tests.genai.emit import LIBRARIES, SCENARIOS
from tests.genai.fake_openai import FakeOpenAI
from tests.genai.instrumented import Emission, Instrumented, attributes, every_pair

CHAT_SCENARIOS = ("chat", "tools", "chat-stream")
# Where each family puts input and output token counts.
TOKEN_KEYS = {
    "otel": ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
    "openinference": ("llm.token_count.prompt", "llm.token_count.completion"),
    "openllmetry": ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
}
# Cached and reasoning tokens, for the families that record them.
DETAIL_TOKEN_KEYS = {
    "openinference": (
        "llm.token_count.prompt_details.cache_read",
        "llm.token_count.completion_details.reasoning",
    ),
    "openllmetry": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.reasoning_tokens"),
}
EVENT_LIBRARIES = ("otel-v2-events", "openllmetry-events")


def family(library: str) -> str:
    """`otel`, `openinference` or `openllmetry`."""
    return library.split("-")[0]


def pairs(libraries: Iterable[str] = LIBRARIES, scenarios: Iterable[str] = SCENARIOS) -> list[Any]:
    """(library, scenario) parameters named `library/scenario`."""
    return [
        pytest.param(library, scenario, id=f"{library}/{scenario}")
        for library in libraries
        for scenario in scenarios
    ]


def everything(emission: Emission) -> str:
    """The spans and log records as one JSON text, to look for content anywhere in it."""
    return json.dumps([emission.spans, list(emission.log_records)])


def test_every_pair_is_known() -> None:
    """The harness covers six library modes and six scenarios."""
    assert len(every_pair()) == len(LIBRARIES) * len(SCENARIOS) == 36


@pytest.mark.parametrize(("library", "scenario"), pairs())
def test_one_span_per_openai_call(instrumented: Instrumented, library: str, scenario: str) -> None:
    """Each call the SDK made to the fake server is one exported, canonical span."""
    emission = instrumented.emission(library, scenario)
    calls = 2 if scenario in ("tools", "chat-turns") else 1
    assert len(emission.openai_requests) == calls
    assert len(emission.spans) == calls
    for span in emission.spans:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        assert span["startTimeUnixNano"] <= span["endTimeUnixNano"]


@pytest.mark.parametrize(("library", "scenario"), pairs())
def test_spans_carry_the_librarys_own_markers(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """Every span has the attributes by which its library's convention is recognised."""
    for span in instrumented.spans(library, scenario):
        attrs = attributes(span)
        if family(library) == "otel":
            assert attrs["gen_ai.provider.name"] == "openai"
            assert attrs["gen_ai.operation.name"] in ("chat", "embeddings")
            assert "openinference.span.kind" not in attrs
        elif family(library) == "openinference":
            assert attrs["llm.system"] == "openai"
            if scenario == "embedding":
                assert attrs["openinference.span.kind"] == "EMBEDDING"
                assert attrs["embedding.model_name"] == fake_openai.EMBEDDING_MODEL
            elif scenario == "chat-refused":  # no answer: the model asked for, as JSON
                assert attrs["openinference.span.kind"] == "LLM"
                assert "llm.model_name" not in attrs
                assert fake_openai.REFUSED_MODEL in attrs["llm.invocation_parameters"]
            else:
                assert attrs["openinference.span.kind"] == "LLM"
                assert attrs["llm.model_name"] == fake_openai.CHAT_MODEL
        else:
            assert span["name"] in ("openai.chat", "openai.embeddings")
            assert attrs["gen_ai.openai.api_base"].startswith("http://127.0.0.1:")


@pytest.mark.parametrize(("library", "scenario"), pairs(scenarios=CHAT_SCENARIOS))
def test_chat_spans_carry_the_servers_token_counts(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """Input and output tokens are the fake server's usage, under the library's names."""
    input_key, output_key = TOKEN_KEYS[family(library)]
    for span in instrumented.spans(library, scenario):
        attrs = attributes(span)
        assert attrs[input_key] == fake_openai.PROMPT_TOKENS
        assert attrs[output_key] == fake_openai.COMPLETION_TOKENS


@pytest.mark.parametrize(("library", "scenario"), pairs(scenarios=["embedding"]))
def test_embedding_spans_carry_the_servers_token_count(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """An embedding span's input tokens are the fake server's usage."""
    input_key, _ = TOKEN_KEYS[family(library)]
    (span,) = instrumented.spans(library, scenario)
    assert attributes(span)[input_key] == fake_openai.EMBEDDING_TOKENS


@pytest.mark.parametrize(
    ("library", "scenario"),
    pairs(["openinference", "openinference-genai", "openllmetry", "openllmetry-events"], ["chat"]),
)
def test_cached_and_reasoning_tokens_where_recorded(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """The usage block's cached and reasoning tokens reach the libraries that record them."""
    cached_key, reasoning_key = DETAIL_TOKEN_KEYS[family(library)]
    (span,) = instrumented.spans(library, scenario)
    attrs = attributes(span)
    assert attrs[cached_key] == fake_openai.CACHED_TOKENS
    assert attrs[reasoning_key] == fake_openai.REASONING_TOKENS


@pytest.mark.parametrize(("library", "scenario"), pairs(scenarios=["tools"]))
def test_message_content_and_tool_calls_are_captured(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """Prompts, the tool call, the tool result and the answer are all captured somewhere."""
    text = everything(instrumented.emission(library, scenario))
    for expected in (
        emit.TOOLS_PROMPT,
        fake_openai.TOOL_CALL_ID,
        "get_weather",
        "celsius",
        "sunny",
        fake_openai.TOOL_ANSWER,
    ):
        assert expected in text, expected


@pytest.mark.parametrize(("library", "scenario"), pairs(EVENT_LIBRARIES, ["chat"]))
def test_event_modes_write_content_to_log_records_of_the_span(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """In the event modes the prompt is in log records naming the span, not in the span."""
    emission = instrumented.emission(library, scenario)
    (span,) = emission.spans
    assert emit.USER_PROMPT not in json.dumps(span)
    records = [r for r in emission.log_records if emit.USER_PROMPT in json.dumps(r)]
    assert records
    assert {(r["traceId"], r["spanId"]) for r in records} == {(span["traceId"], span["spanId"])}


@pytest.mark.parametrize(
    ("library", "scenario"), pairs([x for x in LIBRARIES if x not in EVENT_LIBRARIES], ["chat"])
)
def test_attribute_modes_keep_content_on_the_span(
    instrumented: Instrumented, library: str, scenario: str
) -> None:
    """Outside the event modes the prompt and answer are on the span itself."""
    (span,) = instrumented.spans(library, scenario)
    assert emit.SYSTEM_PROMPT in json.dumps(span)
    assert emit.USER_PROMPT in json.dumps(span)
    assert fake_openai.ANSWER in json.dumps(span)


def test_fake_server_answers_tools_with_a_tool_call_then_an_answer() -> None:
    """With tools offered the fake calls the first tool, and answers once given its result."""
    tools = [emit.WEATHER_TOOL]
    with FakeOpenAI() as fake:
        url = fake.base_url + "/chat/completions"
        first = httpx.post(url, json={"messages": [{"role": "user"}], "tools": tools}, timeout=5)
        call = first.json()["choices"][0]["message"]["tool_calls"][0]
        result = {"role": "tool", "tool_call_id": call["id"], "content": "{}"}
        second = httpx.post(url, json={"messages": [result], "tools": tools}, timeout=5)
    assert call["function"] == {"name": "get_weather", "arguments": fake_openai.TOOL_ARGUMENTS}
    assert second.json()["choices"][0]["message"]["content"] == fake_openai.TOOL_ANSWER
    assert first.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 5
    assert [path for path, _ in fake.requests] == ["/v1/chat/completions"] * 2


def test_fake_server_refuses_unknown_routes() -> None:
    """An unknown path is a 404 in OpenAI's error shape, so a wrong base URL fails loudly."""
    with FakeOpenAI() as fake:
        answer = httpx.post(fake.base_url + "/completions", json={}, timeout=5)
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "invalid_request_error"
