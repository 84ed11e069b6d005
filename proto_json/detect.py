"""Tell a native /v1/traces body from an OTLP/JSON one."""

from __future__ import annotations

from typing import Any, Literal

TracesFormat = Literal["otlp", "native"]


def traces_format(document: dict[str, Any]) -> TracesFormat:
    """`otlp` for a body with `resourceSpans` (or `{}`, the empty OTLP request), else `native`.

    A body with neither `resourceSpans` nor `traces` is treated as native, so that its
    answer is the native VALIDATION_ERROR naming the missing `traces` array.
    """
    if "resourceSpans" in document:
        return "otlp"
    if "traces" in document or document:
        return "native"
    return "otlp"
