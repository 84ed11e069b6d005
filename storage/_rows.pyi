from typing import Any

def span_rows_json(
    body: bytes, project_id: str, received_ms: int, row_type: type[Any]
) -> list[Any] | None: ...
