"""The content hash's BLAKE2b in C (storage/_blake2b.h) against hashlib's."""

from __future__ import annotations

import hashlib
import random

import pytest

from storage import span_rows

FAST = span_rows.FAST_ROWS
pytestmark = pytest.mark.skipif(FAST is None, reason="the C row builder is not built")


def expected(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def test_every_length_over_several_blocks() -> None:
    """Lengths 0 to 9 blocks and a byte: empty input, exactly full last blocks, and one
    byte past them are the cases a block loop gets wrong."""
    rng = random.Random(8)
    for length in range(9 * 128 + 2):
        data = rng.randbytes(length)
        assert FAST.blake2b16(data) == expected(data), length  # type: ignore[union-attr]


def test_large_and_patterned_inputs() -> None:
    """High bytes (a sign-extension slip shows there), zeros, and a long buffer."""
    for data in (b"\xff" * 1000, b"\x00" * 129, b"\x80\x7f" * 3000, bytes(range(256)) * 400):
        assert FAST.blake2b16(data) == expected(data)


def test_only_bytes() -> None:
    with pytest.raises(TypeError):
        FAST.blake2b16("text")  # type: ignore[union-attr, arg-type]
