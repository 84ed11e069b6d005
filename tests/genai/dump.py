"""Write, as Markdown, every span, attribute, event and log record each library emits.

`python -m tests.genai.dump OUTPUT.md`: for mapping conventions by hand. Long values are
cut to `LIMIT` characters, except arrays, maps and strings holding a JSON array or object
(messages, tool definitions, request and response bodies), shown whole because their
structure is what has to be mapped; everything else is exactly what the converter kept.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tests.genai import emit, fake_openai
from tests.genai.emit import LIBRARIES, SCENARIOS
from tests.genai.instrumented import Emission, Instrumented, every_pair, plain

LIMIT = 200
PACKAGES = (
    "openai",
    "opentelemetry-instrumentation-openai-v2",
    "opentelemetry-util-genai",
    "openinference-instrumentation-openai",
    "openinference-semantic-conventions",
    "opentelemetry-instrumentation-openai",
    "opentelemetry-semantic-conventions-ai",
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-json-http",
)
SPAN_KINDS = {
    0: "UNSPECIFIED",
    1: "INTERNAL",
    2: "SERVER",
    3: "CLIENT",
    4: "PRODUCER",
    5: "CONSUMER",
}


def _is_json_document(value: Any) -> bool:
    if not isinstance(value, str) or value[:1] not in ("[", "{"):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def _example(value: dict[str, Any]) -> str:
    """`type: value` with the value as compact JSON, cut to LIMIT characters."""
    kind = next(iter(value), "empty")
    example = plain(value)
    text = json.dumps(example, ensure_ascii=False)
    structured = kind in ("arrayValue", "kvlistValue") or _is_json_document(example)
    if len(text) > LIMIT and not structured:
        text = f"{text[:LIMIT]}… ({len(text)} chars)"
    return f"{kind}: `{text}`"


def _attribute_lines(item: dict[str, Any], indent: str) -> list[str]:
    return [
        f"{indent}- `{pair['key']}` {_example(pair.get('value', {}))}"
        for pair in item.get("attributes", [])
    ]


def _span_lines(number: int, scope: dict[str, Any], span: dict[str, Any]) -> list[str]:
    kind = span.get("kind", 0)
    lines = [
        f"#### span {number}: `{span['name']}`",
        "",
        f"- kind: {kind} ({SPAN_KINDS.get(kind, '?')}); status: `{json.dumps(span.get('status'))}`",
        f"- scope: `{scope.get('name', '')}` version `{scope.get('version', '')}`",
        f"- parentSpanId: `{span.get('parentSpanId', '')}`",
        "- attributes:",
        *_attribute_lines(span, "  "),
    ]
    events = span.get("events", [])
    lines.append(f"- events: {len(events) or 'none'}")
    for event in events:
        keys = ", ".join(f"`{pair['key']}`" for pair in event.get("attributes", []))
        lines.append(f"  - `{event['name']}` attribute keys: {keys or 'none'}")
        lines += _attribute_lines(event, "    ")
    return [*lines, ""]


def _log_lines(number: int, record: dict[str, Any]) -> list[str]:
    return [
        f"#### log record {number}: eventName `{record.get('eventName', '')}`",
        "",
        f"- spanId: `{record.get('spanId', '')}`; body {_example(record.get('body', {}))}",
        "- attributes:",
        *_attribute_lines(record, "  "),
        "",
    ]


def _emission_lines(emission: Emission) -> list[str]:
    calls = ", ".join(f"`POST {path}`" for path, _ in emission.openai_requests)
    lines = [f"### {emission.library} / {emission.scenario}", "", f"OpenAI calls: {calls}", ""]
    for number, (scope, span) in enumerate(emission.scoped_spans, 1):
        lines += _span_lines(number, scope, span)
    for number, record in enumerate(emission.log_records, 1):
        lines += _log_lines(number, record)
    return lines


def render(harness: Instrumented) -> str:
    """The whole report."""
    lines = [
        "# Spans emitted by OpenAI instrumentations",
        "",
        f"The fake server answers model `{fake_openai.CHAT_MODEL}` (requested: "
        f"`{emit.REQUEST_MODEL}`) with usage prompt {fake_openai.PROMPT_TOKENS}, completion "
        f"{fake_openai.COMPLETION_TOKENS}, total {fake_openai.TOTAL_TOKENS}, cached "
        f"{fake_openai.CACHED_TOKENS}, reasoning {fake_openai.REASONING_TOKENS}; embeddings "
        f"`{fake_openai.EMBEDDING_MODEL}` with {fake_openai.EMBEDDING_TOKENS} prompt tokens.",
        "",
        "## Versions",
        "",
    ]
    lines += [f"- {package} {version(package)}" for package in PACKAGES]
    lines += ["", "## Libraries", ""]
    for name, library in LIBRARIES.items():
        settings = {**library.environment, **library.options}
        lines.append(f"- `{name}`: `{library.module}` with `{json.dumps(settings)}`")
    lines += ["", f"Scenarios: {', '.join(SCENARIOS)}.", ""]
    for name in LIBRARIES:
        lines += [f"## {name}", ""]
        for scenario in SCENARIOS:
            lines += _emission_lines(harness.emission(name, scenario))
    return "\n".join(lines) + "\n"


def main(output: str) -> None:
    """Run every library on every scenario and write the report to `output`."""
    harness = Instrumented()
    try:
        harness.prefetch(every_pair())
        Path(output).write_text(render(harness), encoding="utf-8")
    finally:
        harness.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.genai.dump OUTPUT.md")
    main(sys.argv[1])
