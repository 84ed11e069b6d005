"""Types of collector/_resp.c."""

from collections.abc import Sequence

def pack(commands: Sequence[Sequence[bytes | str | int | float]], /) -> bytes: ...
