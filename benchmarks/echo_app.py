"""The baseline: the same framework and server as the collector, reading and parsing only.

python -m benchmarks.echo_app PORT
"""

from __future__ import annotations

import sys

import orjson
from quart import Quart, Response, request

from spangate.runner import run


def create_echo_app() -> Quart:
    """POST /v1/spans, /v1/traces and /v1/otlp/v1/traces: parse the JSON body, answer a count;
    POST /v1/spans/batch: parse each line."""
    app = Quart("echo")

    async def echo() -> Response:
        document = orjson.loads(await request.body)
        count = len(
            document.get("spans") or document.get("resourceSpans") or document.get("traces") or ()
        )
        return Response(
            orjson.dumps({"accepted": count, "rejected": 0}), content_type="application/json"
        )

    async def echo_lines() -> Response:
        lines = (await request.body).splitlines()
        count = len([orjson.loads(line) for line in lines if line.strip()])
        return Response(
            orjson.dumps({"accepted": count, "rejected": 0}), content_type="application/json"
        )

    app.add_url_rule("/v1/spans", view_func=echo, methods=["POST"], endpoint="spans")
    app.add_url_rule("/v1/spans/batch", view_func=echo_lines, methods=["POST"], endpoint="batch")
    app.add_url_rule("/v1/otlp/v1/traces", view_func=echo, methods=["POST"], endpoint="otlp")
    app.add_url_rule("/v1/traces", view_func=echo, methods=["POST"], endpoint="traces")
    app.add_url_rule("/health", view_func=lambda: {"status": "ok"}, methods=["GET"])
    return app


if __name__ == "__main__":
    run(create_echo_app(), "127.0.0.1", int(sys.argv[1]))
