def native_spans(
    spans: list[object],
    trace_id: str | None,
    session_id: str | None,
    pairs: int,
    max_pairs: int,
) -> tuple[bytes, int] | None: ...
def otlp_spans(spans: list[object], pairs: int, max_pairs: int) -> tuple[bytes, int] | None: ...
