"""The two exceptions of proto_json: a whole-request error and a one-span error."""

from __future__ import annotations

from typing import Literal

EnvelopeCode = Literal["SERIALIZATION_ERROR", "VALIDATION_ERROR"]


class EnvelopeError(Exception):
    """The request as a whole is unusable: not JSON, or not shaped like its format.

    `code` is the gateway error code the caller answers 400 with: SERIALIZATION_ERROR when
    the bytes do not decode or parse, VALIDATION_ERROR when they parse but the envelope
    (the object around the spans) has the wrong shape.
    """

    def __init__(self, code: EnvelopeCode, message: str) -> None:
        super().__init__(message)
        self.code: EnvelopeCode = code
        self.message = message


class SpanRejected(Exception):
    """One span breaks a rule; the other spans of the request are still converted.

    Internal to proto_json: the body loops catch it and record a SpanError, so it never
    reaches a caller. `reason` starts with a code word, e.g. `INVALID_TRACE_ID: ...`.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.reason = f"{code}: {message}"
        self.message = message  # the reason without its code word
