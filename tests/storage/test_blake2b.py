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


@pytest.mark.parametrize("lanes", sorted({1, getattr(FAST, "BLAKE2B_LANES", 1)}))
def test_buffers_hashed_together_as_one_by_one(lanes: int) -> None:
    """Buffers hashed together (four at a time in vector lanes where the CPU has AVX2)
    give each its own digest: buffers of unlike block counts side by side (a lane idles
    while the others go on), empty and exactly full blocks, counts not a multiple of 4."""
    rng = random.Random(4)
    lengths = [0, 1, 127, 128, 129, 255, 256, 257, 1000, 1024, 3000, 5, 640, 641, 0, 128]
    for count in (0, 1, 3, 4, 5, 15, 16, 63, 64):
        items = [rng.randbytes(rng.choice(lengths)) for _ in range(count)]
        assert FAST.blake2b16_many(items, lanes) == [expected(item) for item in items]  # type: ignore[union-attr]
    for length in range(0, 4 * 128 + 2):  # each length beside three others of all sizes
        items = [rng.randbytes(length)] + [rng.randbytes(rng.randrange(600)) for _ in range(3)]
        assert FAST.blake2b16_many(items, lanes) == [expected(item) for item in items]  # type: ignore[union-attr]


def test_more_buffers_than_computed_together_or_missing_lanes_are_refused() -> None:
    with pytest.raises(ValueError):
        FAST.blake2b16_many([b""] * 65, 1)  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        FAST.blake2b16_many([b""], 3)  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        FAST.blake2b16_many(["text"], 1)  # type: ignore[union-attr]
