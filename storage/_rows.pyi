from collections.abc import Callable
from typing import Any, overload

@overload
def span_rows_json(
    body: bytes, project_id: str, received_ms: int, row_type: type[Any]
) -> list[Any] | None: ...
@overload
def span_rows_json(
    body: bytes,
    project_id: str,
    received_ms: int,
    row_type: type[Any],
    plan: object,
    hash_text: Callable[[str], int] | None = None,
) -> tuple[list[Any], list[int], list[int], list[tuple[tuple[str, int], ...]] | None] | None: ...
def genai_plan(tables: tuple[Any, ...]) -> object: ...
