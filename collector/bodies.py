"""Request bodies: Content-Encoding, and gzip inflated under the size limit.

Inflation is incremental with zlib's `max_length`, so a gzip bomb never allocates
more than the limit (plus one byte, to see that it is over).
"""

from __future__ import annotations

import zlib

from collector.errors import GatewayError

_GZIP = frozenset(("gzip", "x-gzip"))
_IDENTITY = "identity"
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container only


def content_codings(header: str | None) -> list[str]:
    """The codings applied to the body, in application order, `identity` dropped.

    An unsupported coding raises 415 UNSUPPORTED_CONTENT_ENCODING; callers whose route
    answers decode failures otherwise turn it into their own form.
    """
    if not header:
        return []
    codings: list[str] = []
    for token in header.split(","):
        coding = token.strip().lower()
        if not coding or coding == _IDENTITY:
            continue
        if coding not in _GZIP:
            raise GatewayError(
                415,
                "UNSUPPORTED_CONTENT_ENCODING",
                f"Content-Encoding {coding!r} is not supported; use gzip or identity",
                body_error=True,
            )
        codings.append("gzip")
    return codings


def _too_large(limit: int) -> GatewayError:
    return GatewayError(
        413,
        "DECOMPRESSED_PAYLOAD_TOO_LARGE",
        f"body is over {limit} bytes after gzip decompression",
        body_error=True,
    )


def _not_gzip(detail: str) -> GatewayError:
    return GatewayError(
        400, "SERIALIZATION_ERROR", f"body is not valid gzip: {detail}", body_error=True
    )


#: The most deflate inflates one byte to (a 258-byte match in 2 bits): zlib's bound.
MAX_INFLATE_RATIO = 1032
#: What a gzip member's header and a block's codes may add to that bound, and what
#: zlib holds besides the output (its window and state).
_INFLATE_SLACK = 64 * 1024
#: The most inflated at a time: the pieces are joined once, so a body is held twice at
#: most (its pieces, then the joined body), never in a buffer that grows by copies.
_PIECE_BYTES = 256 * 1024


def inflated_bound(length: int, codings: list[str], limit: int) -> int:
    """The most that decoding a body of `length` bytes by `codings` holds at once: each
    layer's output (at most the limit, plus the byte that tells it is over) twice, as
    `gunzip` holds its pieces and then the body they make."""
    held, size = 0, length
    for _ in codings:
        size = min(limit + 1, size * MAX_INFLATE_RATIO + _INFLATE_SLACK)
        held += 2 * size + _INFLATE_SLACK
    return held


def gunzip(data: bytes, limit: int) -> bytes:
    """Inflate a gzip body (several members allowed) to at most `limit` bytes."""
    pieces: list[bytes] = []
    size = 0
    pending = data
    while True:
        inflater = zlib.decompressobj(_GZIP_WBITS)
        try:
            while True:
                asked = min(_PIECE_BYTES, limit + 1 - size)
                piece = inflater.decompress(pending, asked)
                pieces.append(piece)
                size += len(piece)
                if size > limit:
                    raise _too_large(limit)
                pending = inflater.unconsumed_tail
                # a full piece may leave output inside zlib with no input left to give
                if inflater.eof or (not pending and len(piece) < asked):
                    break
        except zlib.error as e:
            raise _not_gzip(str(e)) from e
        if not inflater.eof:
            raise _not_gzip("truncated")
        pending = inflater.unused_data
        if not pending.strip(b"\0"):  # trailing zero padding after the last member is fine
            return b"".join(pieces)


def decode(data: bytes, codings: list[str], limit: int) -> bytes:
    """The body with every coding undone (innermost last)."""
    for _ in codings:
        data = gunzip(data, limit)
    return data
