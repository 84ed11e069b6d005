"""The C fast path (`_fastpath.c`): canonical bytes for requests whose spans are all valid.

It is built by `pip install` where a C compiler is found, and is optional: without it,
or when it declines a request (any span that breaks a rule or is merely unusual: an
unknown member, a bytesValue...), the pure-Python modules convert the request, and they
are the reference: the tests check that both give the same canonical request.
`SPANGATE_PURE_PYTHON=1` turns it off, with every other C extension of the project;
`SPANGATE_PURE_PYTHON=storage._rows,...` turns off the ones it names (to measure what
each one buys).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

from proto_json.result import Conversion, Limits

#: What SPANGATE_PURE_PYTHON may name: the C extensions (setup.py) and the parts of
#: storage._rows that Python can do instead.
PARTS = (
    "proto_json._fastpath",
    "storage._rows",
    "storage._rows_genai",
    "storage._rows_tokens",
    "storage._llm_text",
    "storage._words",
    "storage._sqlite_bulk",
)


def pure_python(value: str) -> str:
    """SPANGATE_PURE_PYTHON's value when it is one this module reads: empty, `0`, `1`,
    or a comma-separated list of PARTS (ValueError names what is not one)."""
    if value in ("", "0", "1"):
        return value
    unknown = [name for name in value.split(",") if name.strip() not in PARTS]
    if unknown:
        raise ValueError(
            f"{', '.join(map(repr, unknown))} is no C extension: "
            f"give 1, or a comma-separated list of {', '.join(PARTS)}"
        )
    return value


def turned_off(name: str) -> bool:
    """Whether SPANGATE_PURE_PYTHON turns the C extension `name` off: `1` turns off
    every one, a comma-separated list of module names the ones it names."""
    value = os.environ.get("SPANGATE_PURE_PYTHON", "")
    return value not in ("", "0") and (
        value == "1" or name in (part.strip() for part in value.split(","))
    )


#: Why each C extension that was built refused to load (its ImportError's message).
REFUSED: dict[str, str] = {}


def extension(name: str) -> ModuleType | None:
    """The optional C extension `name`; None where it was not built, where it refused to
    load (REFUSED says why) and when SPANGATE_PURE_PYTHON turns the extensions off."""
    if turned_off(name):
        return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None
    except ImportError as e:
        REFUSED[name] = str(e)
        return None


_module = extension("proto_json._fastpath")

_NATIVE_HEAD = b'{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":['
_NATIVE_TAIL = b"]}]}]}"
EMPTY_REQUEST = b'{"resourceSpans":[]}'


def available() -> bool:
    """Whether the C fast path was built and is on."""
    return _module is not None


def native_spans(
    spans: list[Any],
    limits: Limits,
    trace_id: str | None = None,
    session_id: str | None = None,
    pairs: int = 0,
) -> tuple[bytes, int] | None:
    """The canonical spans of native ones, comma-joined, and the attribute pairs counted
    so far (`pairs` plus theirs); None when the general path must convert them."""
    if _module is None:
        return None
    result: tuple[bytes, int] | None = _module.native_spans(
        spans, trace_id, session_id, pairs, limits.max_attributes
    )
    return result


def native_body(data: bytes, limits: Limits) -> Conversion | None:
    """A whole /v1/spans body converted from its bytes, without parsing it into Python
    objects; None when any of it needs another path (see _native_bytes.h)."""
    if _module is None:
        return None
    result: tuple[bytes, int, int] | None = _module.native_body(
        data, limits.max_spans, limits.max_attributes
    )
    return None if result is None else all_accepted(*result)


def ndjson_body(data: bytes, limits: Limits) -> Conversion | None:
    """A whole /v1/spans/batch body converted from its bytes, a line at a time; None
    when any line needs another path (one that does not parse included)."""
    if _module is None:
        return None
    result: tuple[bytes, int, int] | None = _module.ndjson_body(
        data, limits.max_spans, limits.max_attributes
    )
    return None if result is None else all_accepted(*result)


def traces_body(data: bytes, limits: Limits) -> Conversion | None:
    """A whole native /v1/traces body converted from its bytes; None when any of it
    needs another path (an OTLP body included)."""
    if _module is None:
        return None
    result: tuple[bytes, int, int, int] | None = _module.traces_body(
        data, limits.max_spans, limits.max_attributes
    )
    if result is None:
        return None
    canonical, spans, pairs, traces = result
    return all_accepted(canonical, spans, pairs, traces_accepted=traces)


def otlp_body(data: bytes, limits: Limits) -> Conversion | None:
    """An OTLP/JSON body (one with `resourceSpans`) converted from its bytes, without
    parsing it into Python objects; None when any of it needs another path.

    /v1/traces tries this before telling a native body from an OTLP one: a body whose
    bytes do not even contain the member name is not scanned only to be declined.
    """
    if _module is None or b'"resourceSpans"' not in data:
        return None
    result: tuple[bytes, int, int] | None = _module.otlp_body(
        data, limits.max_spans, limits.max_attributes
    )
    return None if result is None else all_accepted(*result)


def native_request(spans: bytes) -> bytes:
    """The canonical request holding native spans (see canonical.request_of)."""
    return _NATIVE_HEAD + spans + _NATIVE_TAIL if spans else EMPTY_REQUEST


def all_accepted(canonical: bytes, span_count: int, pairs: int, **extra: Any) -> Conversion:
    """The conversion of a request whose spans were all accepted."""
    return Conversion(
        canonical=canonical,
        accepted=span_count,
        errors=(),
        ignored=(),
        span_count=span_count,
        attribute_count=pairs,
        **extra,
    )
