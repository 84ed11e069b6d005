"""One instrumentation library, one scenario, the real `openai` SDK: export what it emits.

Run as `python -m tests.genai.emit LIBRARY SCENARIO OPENAI_BASE_URL OTLP_BASE_URL` with
the library's environment (`LIBRARIES[name].environment`) already set: each library
patches `openai` for the whole process, so each run gets a process of its own. Spans go
through the OTLP/HTTP JSON span exporter to `OTLP_BASE_URL/v1/traces`, log records (where
a library writes its GenAI events) through the JSON log exporter to `.../v1/logs`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.genai import fake_openai

REQUEST_MODEL = "gpt-4o-mini"
EMBEDDING_REQUEST_MODEL = "text-embedding-3-small"
SYSTEM_PROMPT = "You are a terse geography assistant."
USER_PROMPT = "What is the capital of France?"
TOOLS_PROMPT = "What is the weather in Paris?"
FOLLOW_UP_PROMPT = "And of Italy?"
EMBEDDING_INPUT = "The quick brown fox"
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TOOL_RESULT = '{"temperature": 18, "unit": "celsius", "sky": "sunny"}'
EXPORT_TIMEOUT_SECONDS = 10.0
SDK_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Library:
    """An instrumentation, the environment that turns its content capture on, and the
    keyword arguments its `OpenAIInstrumentor` is built with."""

    module: str
    environment: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


_OTEL_LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}

LIBRARIES: dict[str, Library] = {
    # opentelemetry-instrumentation-openai-v2: content on the span as
    # gen_ai.input.messages / gen_ai.output.messages ...
    "otel-v2-attributes": Library(
        "opentelemetry.instrumentation.openai_v2",
        {**_OTEL_LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
    ),
    # ... or in a gen_ai.client.inference.operation.details event, a log record
    "otel-v2-events": Library(
        "opentelemetry.instrumentation.openai_v2",
        {**_OTEL_LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only"},
    ),
    "openinference": Library("openinference.instrumentation.openai"),
    # OpenInference's own attributes plus the OTel GenAI ones alongside
    "openinference-genai": Library(
        "openinference.instrumentation.openai", {"OPENINFERENCE_ENABLE_GENAI_SEMCONV": "true"}
    ),
    # OpenLLMetry (traceloop): content as gen_ai.input.messages / gen_ai.output.messages ...
    "openllmetry": Library(
        "opentelemetry.instrumentation.openai", {"TRACELOOP_TRACE_CONTENT": "true"}
    ),
    # ... or, with use_attributes=False, as gen_ai.* events written as log records
    "openllmetry-events": Library(
        "opentelemetry.instrumentation.openai",
        {"TRACELOOP_TRACE_CONTENT": "true"},
        {"use_attributes": False},
    ),
}


def _chat(client: Any) -> None:
    client.chat.completions.create(
        model=REQUEST_MODEL,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_PROMPT},
        ],
        temperature=0.2,
        max_tokens=64,
    )


def _tools(client: Any) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": TOOLS_PROMPT}]
    first = client.chat.completions.create(
        model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL]
    )
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": TOOL_RESULT})
    client.chat.completions.create(model=REQUEST_MODEL, messages=messages, tools=[WEATHER_TOOL])


def _chat_stream(client: Any) -> None:
    stream = client.chat.completions.create(
        model=REQUEST_MODEL,
        messages=[
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_PROMPT},
        ],
        stream=True,
        stream_options={"include_usage": True},
    )
    for _ in stream:
        pass


def _chat_refused(client: Any) -> None:
    import openai

    try:
        client.chat.completions.create(
            model=fake_openai.REFUSED_MODEL, messages=[{"role": "user", "content": USER_PROMPT}]
        )
    except openai.RateLimitError:
        return
    raise AssertionError("the fake server answered a call it refuses")


def _chat_turns(client: Any) -> None:
    """A chat's two turns: the second call holds the first's question and answer."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_PROMPT},
    ]
    first = client.chat.completions.create(model=REQUEST_MODEL, messages=messages)
    messages.append({"role": "assistant", "content": first.choices[0].message.content})
    messages.append({"role": "user", "content": FOLLOW_UP_PROMPT})
    client.chat.completions.create(model=REQUEST_MODEL, messages=messages)


def _embedding(client: Any) -> None:
    client.embeddings.create(model=EMBEDDING_REQUEST_MODEL, input=EMBEDDING_INPUT)


SCENARIOS: dict[str, Callable[[Any], None]] = {
    "chat": _chat,
    "tools": _tools,
    "chat-stream": _chat_stream,
    "chat-refused": _chat_refused,
    "chat-turns": _chat_turns,
    "embedding": _embedding,
}


def run(library: str, scenario: str, openai_url: str, otlp_url: str) -> None:
    """Instrument `openai` with `library`, play `scenario`, flush every span and log record."""
    import openai
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.json.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create({"service.name": "genai-harness"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=otlp_url + "/v1/traces", timeout=EXPORT_TIMEOUT_SECONDS)
        )
    )
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(
        SimpleLogRecordProcessor(
            OTLPLogExporter(endpoint=otlp_url + "/v1/logs", timeout=EXPORT_TIMEOUT_SECONDS)
        )
    )
    trace.set_tracer_provider(tracer_provider)
    _logs.set_logger_provider(logger_provider)
    chosen = LIBRARIES[library]
    instrumentor = importlib.import_module(chosen.module).OpenAIInstrumentor(**chosen.options)
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    client = openai.OpenAI(
        base_url=openai_url, api_key="sk-fake", max_retries=0, timeout=SDK_TIMEOUT_SECONDS
    )
    try:
        SCENARIOS[scenario](client)
    finally:
        client.close()
        tracer_provider.shutdown()
        logger_provider.shutdown()


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in LIBRARIES or sys.argv[2] not in SCENARIOS:
        sys.exit(
            "usage: python -m tests.genai.emit LIBRARY SCENARIO OPENAI_BASE_URL OTLP_BASE_URL\n"
            f"libraries: {', '.join(LIBRARIES)}; scenarios: {', '.join(SCENARIOS)}"
        )
    run(*sys.argv[1:])
