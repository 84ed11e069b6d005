"""A trace made to be hard to read, and hostile: the browser tests of the trace page
store it."""

from __future__ import annotations

from typing import Any

import orjson

from tests.proto_json.spans import span

TRACE = "7e" * 16
AGENT, CALL, TOOL = "a" * 16, "b" * 16, "c" * 16
#: Text that would run script if it reached the page as HTML: a script element, an event
#: handler, a `javascript:` link in Markdown, and text that closes an SVG.
SCRIPT = "<script>window.pwned = 1</script>"
HANDLER = '<img src=x onerror="window.pwned = 2">'
JS_LINK = "[click me](javascript:window.pwned=3)"
SVG_BREAK = '</svg></text><svg onload="window.pwned = 4">'
HOSTILE = f"{SCRIPT} {HANDLER} {JS_LINK} {SVG_BREAK}"
SYSTEM_PROMPT = "You are a careful support agent. " * 250  # 8,250 characters
UNBROKEN = "x" * 20_000
STACK = 'Traceback (most recent call last):\n  File "app.py", line 3\nValueError: bad order'
ANSWER = (
    "It **ships** today.\n\n- line one\n- line two\n\nSee [the docs](https://example.com/docs)."
)


def _parts(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def reading_run() -> list[dict[str, Any]]:
    """An agent (input JSON, output Markdown), its LLM call (a long system prompt sent
    three times, hostile user text, a tool call, a Markdown answer) and a tool call."""
    asked = [
        _parts("user", f"Where is my order?\nIt is #7.\n{HOSTILE}"),
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "lookup",
                                         "arguments": {"order": 7, "note": SCRIPT}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                    "response": '{"status": "shipped", "eta": "today"}'}]},
    ]  # fmt: skip
    base = {"traceId": TRACE, "endTime": "2026-11-22T10:00:09Z"}
    return [
        span(**base, spanId=AGENT, name="support agent", kind="agent",
             startTime="2026-11-22T10:00:00Z",
             attributes={"input.value": orjson.dumps({"question": "Where?", "order": 7}).decode(),
                         "output.value": ANSWER, "stack": STACK, "blob": UNBROKEN,
                         "hostile": HOSTILE,
                         "hostile.json": orjson.dumps({"x": HOSTILE}).decode()}),
        span(**base, spanId=CALL, parentSpanId=AGENT, name=f"chat {SVG_BREAK}",
             startTime="2026-11-22T10:00:01Z",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         "gen_ai.system_instructions": orjson.dumps(
                             [{"type": "text", "content": SYSTEM_PROMPT}]).decode(),
                         "gen_ai.input.messages": orjson.dumps(asked).decode(),
                         "gen_ai.output.messages": orjson.dumps(
                             [_parts("assistant", f"{ANSWER}\n\n{JS_LINK}")]).decode(),
                         "app.prompt": SYSTEM_PROMPT, "langfuse.prompt": SYSTEM_PROMPT,
                         "prompt.copy": SYSTEM_PROMPT}),
        span(**base, spanId=TOOL, parentSpanId=AGENT, name="execute_tool lookup",
             startTime="2026-11-22T10:00:02Z", status="error",
             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                         "gen_ai.tool.call.arguments": '{"order": 7}',
                         "gen_ai.tool.call.result": STACK}),
    ]  # fmt: skip
