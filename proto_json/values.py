"""Attribute values: native JSON to OTLP AnyValue, and OTLP AnyValue to its canonical form.

Canonical encodings: intValue as a decimal string, doubleValue as a JSON number (or the
strings "NaN", "Infinity", "-Infinity", which JSON has no number for), bytesValue as
padded standard base64, arrayValue/kvlistValue always with a `values` list. An empty
AnyValue `{}` is the OTLP "no value" and stands for a native `null`.
"""

from __future__ import annotations

import binascii
import math
from base64 import b64decode, b64encode
from typing import Any

from proto_json.errors import SpanRejected

AnyValue = dict[str, Any]
KeyValue = dict[str, Any]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: Nesting deeper than this is refused, so a hostile body cannot exhaust the stack.
MAX_DEPTH = 32
_NON_FINITE = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}


def _bad(where: str, message: str) -> SpanRejected:
    return SpanRejected("INVALID_ATTRIBUTES", f"{where}: {message}")


# -- native JSON values -------------------------------------------------------------


def native_value(value: object, where: str, pool: PairPool, depth: int = 0) -> AnyValue:
    """The AnyValue for a value decoded from native JSON."""
    t = type(value)
    if t is str:
        return {"stringValue": value}
    if t is bool:
        return {"boolValue": value}
    if type(value) is int:  # not `t`: mypy narrows only on the value itself
        if INT64_MIN <= value <= INT64_MAX:
            return {"intValue": str(value)}
        # a number no intValue holds is a double, as the JSON parser makes one past 64
        # bits unsigned (and as a JavaScript client's number is one)
        return {"doubleValue": float(value)}
    if t is float:
        return {"doubleValue": value}
    if value is None:
        return {}
    if depth >= MAX_DEPTH:
        raise _bad(where, f"nested deeper than {MAX_DEPTH} levels")
    if type(value) is list:
        values = [native_value(v, where, pool, depth + 1) for v in value]
        return {"arrayValue": {"values": values}}
    if type(value) is dict:
        return {"kvlistValue": {"values": native_key_values(value, where, pool, depth + 1)}}
    raise _bad(where, f"unsupported value type {t.__name__}")


#: Longer strings rarely repeat (prompts, completions): hashing them buys nothing.
_POOLED_STRING_MAX = 256


class PairPool:
    """Per-request pool: a scalar pair that recurs in a request is one shared dict.

    Allocation is most of the cost of a conversion, and agent spans repeat many pairs
    (model, provider, agent name, flags). Each value type has its own table because
    `1 == 1.0 == True` in Python. Zero floats are not pooled (`0.0 == -0.0`). Output
    built with a pool shares structure, so callers must treat it as read-only.
    """

    __slots__ = ("bools", "floats", "strings")

    def __init__(self) -> None:
        self.strings: dict[str, dict[str, KeyValue]] = {}
        self.bools: dict[str, dict[bool, KeyValue]] = {}
        self.floats: dict[str, dict[float, KeyValue]] = {}

    def string(self, key: str, value: str) -> KeyValue:
        by_value = self.strings.get(key)
        if by_value is None:
            by_value = self.strings[key] = {}
        pair = by_value.get(value)
        if pair is None:
            pair = by_value[value] = {"key": key, "value": {"stringValue": value}}
        return pair

    def boolean(self, key: str, value: bool) -> KeyValue:
        by_value = self.bools.get(key)
        if by_value is None:
            by_value = self.bools[key] = {}
        pair = by_value.get(value)
        if pair is None:
            pair = by_value[value] = {"key": key, "value": {"boolValue": value}}
        return pair

    def double(self, key: str, value: float) -> KeyValue:
        if not value:
            return {"key": key, "value": {"doubleValue": value}}
        by_value = self.floats.get(key)
        if by_value is None:
            by_value = self.floats[key] = {}
        pair = by_value.get(value)
        if pair is None:
            pair = by_value[value] = {"key": key, "value": {"doubleValue": value}}
        return pair


def native_key_values(
    mapping: dict[str, Any], where: str, pool: PairPool, depth: int = 0
) -> list[KeyValue]:
    """KeyValue list for a native attributes object, in the object's key order.

    The hot path: scalars and lists of strings are converted inline; anything else goes
    through `native_value`, and `where` (for error messages) is only built then.
    """
    out: list[KeyValue] = []
    append = out.append
    strings = pool.strings
    for key, value in mapping.items():
        t = type(value)
        if t is str:
            by_value = strings.get(key)
            pair = by_value.get(value) if by_value is not None else None
            if pair is not None:
                append(pair)
            elif len(value) <= _POOLED_STRING_MAX:
                append(pool.string(key, value))
            else:
                append({"key": key, "value": {"stringValue": value}})
        elif type(value) is int and INT64_MIN <= value <= INT64_MAX:
            append({"key": key, "value": {"intValue": str(value)}})
        elif type(value) is float:
            append(pool.double(key, value))
        elif type(value) is bool:
            append(pool.boolean(key, value))
        elif type(value) is list and all(type(item) is str for item in value):
            items = [{"stringValue": item} for item in value]
            append({"key": key, "value": {"arrayValue": {"values": items}}})
        else:
            append({"key": key, "value": native_value(value, f"{where}.{key}", pool, depth)})
    return out


# -- OTLP/JSON values ---------------------------------------------------------------


def json_integer(raw: object) -> int | None:
    """An integer as OTLP/JSON may write one: a JSON number (integral) or a decimal string
    (64-bit values are strings in the proto3 JSON mapping); None for anything else."""
    if type(raw) is int:
        return raw
    if type(raw) is str and raw.isascii() and raw.removeprefix("-").isdigit():
        return int(raw)
    if type(raw) is float and raw.is_integer():
        return int(raw)
    return None


def _otlp_int(raw: object, where: str) -> str:
    number = json_integer(raw)
    if number is None:
        raise _bad(where, "intValue must be an integer or a decimal string")
    if not INT64_MIN <= number <= INT64_MAX:
        raise _bad(where, "intValue outside the 64-bit signed range")
    return str(number)


def _otlp_double(raw: object, where: str) -> float | str:
    if type(raw) is float or type(raw) is int:
        return float(raw)
    if type(raw) is str:
        special = _NON_FINITE.get(raw)
        if special is not None:
            return special
        try:
            number = float(raw)
        except ValueError:
            number = math.nan  # refused just below, with the message for this field
        if math.isfinite(number):
            return number
    raise _bad(where, "doubleValue must be a number, 'NaN', 'Infinity' or '-Infinity'")


def _otlp_bytes(raw: object, where: str) -> str:
    if type(raw) is str:
        text = raw.replace("-", "+").replace("_", "/")  # accept the URL-safe alphabet too
        try:
            decoded = b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError) as e:
            raise _bad(where, "bytesValue must be base64") from e
        return b64encode(decoded).decode("ascii")
    raise _bad(where, "bytesValue must be a base64 string")


def _otlp_list(raw: object, where: str, kind: str) -> list[Any]:
    if raw is None:
        return []
    if type(raw) is not dict:
        raise _bad(where, f"{kind} must be an object with a values array")
    values = raw.get("values")
    if values is None:
        return []
    if type(values) is not list:
        raise _bad(where, f"{kind}.values must be an array")
    return values


def _otlp_string(raw: object, where: str) -> str:
    if type(raw) is not str:
        raise _bad(where, "stringValue must be a string")
    return raw


def _otlp_bool(raw: object, where: str) -> bool:
    if type(raw) is not bool:
        raise _bad(where, "boolValue must be true or false")
    return raw


_SCALARS = {
    "stringValue": _otlp_string,
    "boolValue": _otlp_bool,
    "intValue": _otlp_int,
    "doubleValue": _otlp_double,
    "bytesValue": _otlp_bytes,
}
_VALUE_KINDS = frozenset((*_SCALARS, "arrayValue", "kvlistValue"))


def otlp_value(raw: object, where: str, depth: int = 0) -> AnyValue:
    """The canonical AnyValue for an OTLP/JSON AnyValue (unknown members are ignored)."""
    if raw is None:
        return {}
    if type(raw) is not dict:
        raise _bad(where, "value must be an object")
    present = [(k, v) for k, v in raw.items() if k in _VALUE_KINDS and v is not None]
    if not present:
        return {}
    if len(present) > 1:
        raise _bad(where, "value sets more than one of its oneof members")
    key, inner = present[0]
    scalar = _SCALARS.get(key)
    if scalar is not None:
        return {key: scalar(inner, where)}
    if depth >= MAX_DEPTH:
        raise _bad(where, f"nested deeper than {MAX_DEPTH} levels")
    items = _otlp_list(inner, where, key)
    if key == "arrayValue":
        return {"arrayValue": {"values": [otlp_value(v, where, depth + 1) for v in items]}}
    return {"kvlistValue": {"values": otlp_key_values(items, where, depth + 1)}}


def otlp_key_values(raw: object, where: str, depth: int = 0) -> list[KeyValue]:
    """Canonical KeyValue list for an OTLP/JSON attributes array (null counts as empty)."""
    if raw is None:
        return []
    if type(raw) is not list:
        raise _bad(where, "attributes must be an array of {key, value}")
    out: list[KeyValue] = []
    for item in raw:
        if type(item) is not dict:
            raise _bad(where, "each attribute must be an object {key, value}")
        key = item.get("key")
        if type(key) is not str:
            raise _bad(where, "each attribute needs a string key")
        out.append({"key": key, "value": otlp_value(item.get("value"), f"{where}.{key}", depth)})
    return out
