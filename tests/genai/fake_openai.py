"""A local OpenAI-compatible HTTP server that answers with fixed, known token counts.

Chat completions (plain, with a tool call when the request offers tools and the last
message is not a tool result, and streamed as server-sent events; refused with a 429
when they ask for REFUSED_MODEL) and embeddings. Only
what the real `openai` SDK needs to parse the answers, so that instrumentations read
real response objects.
"""

from __future__ import annotations

import base64
import json
import struct
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.genai.loopback import LoopbackServer

CHAT_MODEL = "gpt-4o-mini-2024-07-18"
#: A chat call asking for this model is refused with a 429, before any answer.
REFUSED_MODEL = "gpt-4o-rate-limited"
EMBEDDING_MODEL = "text-embedding-3-small"
PROMPT_TOKENS = 21
COMPLETION_TOKENS = 7
TOTAL_TOKENS = PROMPT_TOKENS + COMPLETION_TOKENS
CACHED_TOKENS = 5
REASONING_TOKENS = 3
EMBEDDING_TOKENS = 8
ANSWER = "Paris is the capital of France."
TOOL_CALL_ID = "call_fake_weather_1"
TOOL_ARGUMENTS = '{"city": "Paris", "unit": "celsius"}'
TOOL_ANSWER = "It is 18 degrees and sunny in Paris."
EMBEDDING = [0.25, -0.5, 0.125, 1.0]
CREATED = 1_700_000_000


def usage() -> dict[str, Any]:
    """The usage block of every chat completion."""
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": TOTAL_TOKENS,
        "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": REASONING_TOKENS,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _assistant_message(request: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The answer's message and finish reason: a tool call when tools are offered."""
    messages = request.get("messages") or [{}]
    tools = request.get("tools") or []
    if tools and messages[-1].get("role") != "tool":
        call = {
            "id": TOOL_CALL_ID,
            "type": "function",
            "function": {"name": tools[0]["function"]["name"], "arguments": TOOL_ARGUMENTS},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    content = TOOL_ANSWER if tools else ANSWER
    return {"role": "assistant", "content": content}, "stop"


def chat_completion(request: dict[str, Any]) -> dict[str, Any]:
    """A non-streamed chat completion answering `request`."""
    message, finish_reason = _assistant_message(request)
    return {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion",
        "created": CREATED,
        "model": CHAT_MODEL,
        "system_fingerprint": "fp_fake",
        "service_tier": "default",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": usage(),
    }


def chat_chunks(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The streamed form of the same answer; usage in a last chunk when asked for."""
    message, finish_reason = _assistant_message(request)
    head = {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": CHAT_MODEL,
        "system_fingerprint": "fp_fake",
    }
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        deltas.append({"tool_calls": [{"index": 0, **call}]})
    else:
        words = message["content"].split(" ")
        deltas += [{"content": word if i == 0 else " " + word} for i, word in enumerate(words)]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        for delta in deltas
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**head, "choices": [], "usage": usage()})
    return chunks


def embeddings(request: dict[str, Any]) -> dict[str, Any]:
    """One embedding per input, as floats or base64 little-endian float32 as asked."""
    inputs = request.get("input")
    count = len(inputs) if isinstance(inputs, list) and isinstance(inputs[0], str) else 1
    vector: list[float] | str = EMBEDDING
    if request.get("encoding_format") == "base64":
        vector = base64.b64encode(struct.pack(f"<{len(EMBEDDING)}f", *EMBEDDING)).decode()
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": vector} for i in range(count)],
        "model": EMBEDDING_MODEL,
        "usage": {"prompt_tokens": EMBEDDING_TOKENS, "total_tokens": EMBEDDING_TOKENS},
    }


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests instead."""

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append((self.path, request))
        if self.path == "/v1/chat/completions" and request.get("model") == REFUSED_MODEL:
            error = {"message": "Rate limit reached", "type": "requests"}
            self._send_json(429, {"error": {**error, "code": "rate_limit_exceeded"}})
        elif self.path == "/v1/chat/completions" and request.get("stream"):
            self._send_stream(chat_chunks(request))
        elif self.path == "/v1/chat/completions":
            self._send_json(200, chat_completion(request))
        elif self.path == "/v1/embeddings":
            self._send_json(200, embeddings(request))
        else:
            error = {"message": f"no route {self.path}", "type": "invalid_request_error"}
            self._send_json(404, {"error": error})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[tuple[str, dict[str, Any]]]


class FakeOpenAI(LoopbackServer):
    """The server on a free loopback port, serving in a thread while the context is open."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.requests = []
        super().__init__(self._server)

    @property
    def base_url(self) -> str:
        """What to pass as the SDK's `base_url`."""
        return f"{self.origin}/v1"

    @property
    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        """Each request's path and JSON body, in arrival order."""
        return self._server.requests
