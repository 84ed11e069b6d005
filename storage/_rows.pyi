from collections.abc import Callable
from typing import Any, overload

#: hash_text(value JSON text), key_token(project, key), name_token(project, name).
Makers = tuple[Callable[[str], int], Callable[[str, str], int], Callable[[str, str], int]]

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
    makers: Makers | None = None,
) -> tuple[list[Any], list[int], list[int], list[tuple[str, bytes]] | None] | None: ...
def genai_plan(tables: tuple[Any, ...]) -> object: ...
