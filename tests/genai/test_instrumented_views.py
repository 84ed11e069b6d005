"""The GenAI view of the spans the real OpenAI instrumentations emit (tests/genai's
harness: the openai SDK against a local fake server), and those spans stored."""

from __future__ import annotations

import json

import orjson
import pytest

import proto_json
from genai import GenAIView, view_of
from genai.parameters import offered_tools, request_parameters
from genai.prices import Pricer
from genai.view import message_view
from storage import llm_text
from storage.database import Database
from storage.span_genai import with_views
from storage.span_rows import FAST_ROWS, rows_of
from storage.spans import SpanStore
from storage.trace_list import TraceFilter, TraceSummaries
from tests.genai import emit, fake_openai
from tests.genai.emit import LIBRARIES
from tests.genai.instrumented import SCENARIOS, Instrumented, every_pair
from tests.storage.test_llm_text import read_alike
from tests.storage.test_rows_genai import same_rows

EVENT_MODES = ("otel-v2-events", "openllmetry-events")  # content goes to log records
#: Who reports cached and reasoning tokens (the OTel v2 instrumentation reports neither;
#: OpenLLMetry no reasoning tokens when streaming).
CACHED = ("openinference", "openllmetry", "openllmetry-events")


def _views(instrumented: Instrumented, library: str, scenario: str) -> list[GenAIView]:
    spans = instrumented.spans(library, scenario)
    views = [view_of(s.get("attributes"), s.get("events"), s["name"], None) for s in spans]
    assert all(view is not None for view in views), library
    for span, view in zip(spans, views, strict=True):  # as the text index reads them
        assert view is not None
        alone = message_view(span.get("attributes"), span.get("events"), view.type)
        assert alone.input_messages == view.input_messages, library
        assert alone.output_messages == view.output_messages, library
    return [view for view in views if view is not None]


def _roles(view: GenAIView) -> list[tuple[str, str | None]]:
    return [(m.role, m.content) for m in view.input_messages]


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_chat_call(instrumented: Instrumented, library: str) -> None:
    """A chat call: its type, the answering model, the provider, the tokens, the
    messages in and out (where the mode puts them on the span), a cost."""
    (view,) = _views(instrumented, library, "chat")
    assert (view.type, view.model, view.provider) == ("llm", fake_openai.CHAT_MODEL, "openai")
    assert (view.input_tokens, view.output_tokens) == (
        fake_openai.PROMPT_TOKENS,
        fake_openai.COMPLETION_TOKENS,
    )
    assert view.total_tokens == fake_openai.TOTAL_TOKENS
    if library.startswith(CACHED):
        assert view.cache_read_tokens == fake_openai.CACHED_TOKENS
    if library == "openinference":
        assert view.reasoning_tokens == fake_openai.REASONING_TOKENS
    if library in EVENT_MODES:
        assert view.input_messages == () and view.output_messages == ()
    else:
        assert _roles(view) == [("system", emit.SYSTEM_PROMPT), ("user", emit.USER_PROMPT)]
        assert view.output_messages[-1].content == fake_openai.ANSWER
        assert (view.input_preview, view.output_preview) == (emit.USER_PROMPT, fake_openai.ANSWER)
    assert Pricer().cost(view)[1] == "price-table"


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_chats_second_turn_asks_its_own_question(
    instrumented: Instrumented, library: str
) -> None:
    """A chat's second call holds the first turn: its previews (what a trace list shows)
    are the chat's first question, the answer, and the question it asked, as the
    worker stores them (read alike in C, where it reads them, and through the view)."""
    first, second = _views(instrumented, library, "chat-turns")
    if library in EVENT_MODES:
        return
    assert first.previews() == [emit.USER_PROMPT, fake_openai.ANSWER]
    asked = [emit.USER_PROMPT, fake_openai.ANSWER, emit.FOLLOW_UP_PROMPT]
    assert second.previews() == asked
    span = instrumented.spans(library, "chat-turns")[1]
    attributes = orjson.dumps(span.get("attributes") or []).decode()
    read_alike(attributes, second.type)  # C's reading, where it reads one, is the view's
    read = llm_text.text_and_previews(second.type, attributes, "[]")
    assert read is not None and orjson.loads(read[1]) == asked


#: Who records the tools a call offers (OpenTelemetry's v2 instrumentation does not;
#: OpenLLMetry not in its events mode).
TOOLS_OFFERED = ("openinference", "openinference-genai", "openllmetry")


@pytest.mark.parametrize("library", LIBRARIES)
def test_the_request_parameters_and_the_tools_offered(
    instrumented: Instrumented, library: str
) -> None:
    """The chat call's temperature and max tokens (as the app passed them), whichever
    attributes the library writes them in; the tools call's offered tool by name."""
    (chat,) = instrumented.spans(library, "chat")
    parameters = dict(request_parameters(chat.get("attributes")))
    assert (parameters["temperature"], parameters["max tokens"]) == ("0.2", "64"), library
    asking = instrumented.spans(library, "tools")[0]
    expected = ["get_weather"] if library in TOOLS_OFFERED else []
    assert offered_tools(asking.get("attributes")) == expected, library


@pytest.mark.parametrize("library", [name for name in LIBRARIES if name not in EVENT_MODES])
def test_a_tool_call_and_its_answer(instrumented: Instrumented, library: str) -> None:
    """The model asks for a tool (its id, name and arguments); the next call sends the
    tool's result as a tool message and gets the answer."""
    asking, answering = _views(instrumented, library, "tools")
    (call,) = asking.output_messages[-1].tool_calls
    assert (call.id, call.name) == (fake_openai.TOOL_CALL_ID, "get_weather")
    assert json.loads(call.arguments or "") == json.loads(fake_openai.TOOL_ARGUMENTS)
    tool_messages = [m for m in answering.input_messages if m.role == "tool"]
    assert [json.loads(m.content or "") for m in tool_messages] == [json.loads(emit.TOOL_RESULT)]
    assert answering.output_messages[-1].content == fake_openai.TOOL_ANSWER


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_streamed_chat_call(instrumented: Instrumented, library: str) -> None:
    """A streamed call reports its model and usage like a plain one."""
    (view,) = _views(instrumented, library, "chat-stream")
    assert (view.type, view.model) == ("llm", fake_openai.CHAT_MODEL)
    assert view.input_tokens == fake_openai.PROMPT_TOKENS
    if library not in EVENT_MODES:
        assert view.output_messages[-1].content == fake_openai.ANSWER


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_call_refused_before_an_answer_names_the_model_asked_for(
    instrumented: Instrumented, library: str
) -> None:
    """A 429: no answer, so no answering model; the view names the model the call asked
    for (OpenInference gives it only in its parameters' JSON), and the span an error."""
    (span,) = instrumented.spans(library, "chat-refused")
    (view,) = _views(instrumented, library, "chat-refused")
    assert (view.type, view.model) == ("llm", fake_openai.REFUSED_MODEL)
    assert view.sources["model"] == (
        "llm.invocation_parameters" if library == "openinference" else "gen_ai.request.model"
    )
    assert span["status"]["code"] == 2


@pytest.mark.parametrize("library", LIBRARIES)
def test_an_embedding_call(instrumented: Instrumented, library: str) -> None:
    """An embedding call: its type, model, input tokens and the text it embedded, where
    the library records it (OpenTelemetry's own does not, nor OpenLLMetry's events)."""
    (view,) = _views(instrumented, library, "embedding")
    assert (view.type, view.model) == ("embedding", fake_openai.EMBEDDING_MODEL)
    assert view.input_tokens == fake_openai.EMBEDDING_TOKENS
    recorded = library in ("openinference", "openinference-genai", "openllmetry")
    said = [(m.role, m.content) for m in view.input_messages]
    assert said == ([("user", emit.EMBEDDING_INPUT)] if recorded else []), library


def test_every_library_stored_adds_up(instrumented: Instrumented, tmp_path: object) -> None:
    """Each library's tools run (two calls, a trace each), stored as the worker stores
    it: each trace one LLM call with the model, its tokens and a cost, the question
    asked and the answer got."""
    db = Database(f"sqlite:///{tmp_path}/spans.db")
    try:
        from storage.schema import migrate

        migrate(db)
        for library in LIBRARIES:
            for request in instrumented.emission(library, "tools").requests:
                rows = with_views(rows_of(request, library, 1), Pricer())
                SpanStore(db).upsert(rows, 1_200_000)
        for library in LIBRARIES:
            traces = TraceSummaries(db).page(library, TraceFilter(), 10).traces
            assert len(traces) == 2, library
            for trace in traces:
                assert (trace.llm_calls, trace.models) == (1, [fake_openai.CHAT_MODEL]), library
                assert trace.usage[:2] == (
                    fake_openai.PROMPT_TOKENS,
                    fake_openai.COMPLETION_TOKENS,
                ), library
                assert trace.usage[3] is not None and trace.usage[3] > 0, library
            if library not in EVENT_MODES:
                assert {t.input for t in traces} == {emit.TOOLS_PROMPT}, library
                assert fake_openai.TOOL_ANSWER in {t.output for t in traces}, library
    finally:
        db.close()


@pytest.mark.skipif(FAST_ROWS is None, reason="the C row builder is not built")
@pytest.mark.parametrize("library", LIBRARIES)
def test_the_real_instrumentations_spans(instrumented: Instrumented, library: str) -> None:
    """The spans the real OpenAI instrumentations emit give the same rows either way;
    those without message events are read in C, but for a refused call's model that
    only OpenInference's parameters name."""
    for scenario in SCENARIOS:
        for request in instrumented.emission(library, scenario).requests:
            body = proto_json.convert_otlp(orjson.dumps(request)).payload
            built = same_rows(body)
            assert built is not None, (library, scenario)
            if library not in EVENT_MODES:
                # Python reads the model only OpenInference's parameters name (a refusal)
                python = library == "openinference" and scenario == "chat-refused"
                assert built[1] == ([0] if python else []), (library, scenario)


@pytest.mark.skipif(llm_text._FAST is None, reason="storage._llm_text is not built")
def test_the_text_index_reads_them_alike_in_c(instrumented: Instrumented) -> None:
    """What the text index reads of each span (storage/llm_text.py): the C reading agrees with
    the view's, and reads those of the OTel instrumentation's span-only mode (its
    messages as attributes)."""
    read = set()
    for library, scenario in every_pair():
        for span in instrumented.spans(library, scenario):
            view = view_of(span.get("attributes"), span.get("events"), span["name"])
            attributes = orjson.dumps(span.get("attributes") or []).decode()
            if view is not None and read_alike(attributes, view.type) is not None:
                read.add((library, scenario))
    assert {("otel-v2-attributes", "chat"), ("otel-v2-attributes", "chat-stream")} <= read
