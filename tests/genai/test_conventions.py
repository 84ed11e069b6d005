"""The GenAI view of each convention, from attributes built by hand after its spec."""

from __future__ import annotations

from genai import view_of
from tests.genai.attrs import attrs, dumps, event


def test_otel_genai_attributes_give_model_usage_and_messages() -> None:
    """OTel GenAI (current names): type, provider, the answering model over the asked
    one, every token count, the JSON messages and system instructions."""
    view = view_of(
        attrs(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 30,
                "gen_ai.usage.cache_read.input_tokens": 100,
                "gen_ai.usage.reasoning.output_tokens": 12,
                "gen_ai.system_instructions": dumps([{"type": "text", "content": "Be brief."}]),
                "gen_ai.input.messages": dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Hi\nthere"}]}]
                ),
                "gen_ai.output.messages": dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": "Hello"},
                                {
                                    "type": "tool_call",
                                    "id": "c1",
                                    "name": "lookup",
                                    "arguments": {"q": "x"},
                                },
                            ],
                            "finish_reason": "tool_calls",
                        }
                    ]
                ),
            }
        )
    )
    assert view is not None
    assert (view.type, view.provider, view.model) == ("llm", "openai", "gpt-4o-2024-08-06")
    assert (view.input_tokens, view.output_tokens, view.total_tokens) == (120, 30, 150)
    assert (view.cache_read_tokens, view.reasoning_tokens) == (100, 12)
    assert [m.as_json() for m in view.input_messages] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi\nthere"},
    ]
    assert view.output_messages[0].as_json() == {
        "role": "assistant",
        "content": "Hello",
        "toolCalls": [{"id": "c1", "name": "lookup", "arguments": '{"q":"x"}'}],
    }
    assert view.sources["model"] == "gen_ai.response.model"
    assert view.sources["provider"] == "gen_ai.provider.name"
    assert view.sources["inputMessages"] == "gen_ai.input.messages"
    assert (view.input_preview, view.output_preview) == ("Hi\nthere", "Hello")


def test_older_otel_names_and_indexed_messages() -> None:
    """The older OTel / OpenLLMetry names: gen_ai.system, prompt/completion tokens,
    gen_ai.prompt.N.* and gen_ai.completion.N.* with tool calls; llm.request.type."""
    view = view_of(
        attrs(
            {
                "llm.request.type": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.prompt_tokens": 11,
                "gen_ai.usage.completion_tokens": 4,
                "llm.usage.total_tokens": 15,
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "sys",
                "gen_ai.prompt.1.role": "user",
                "gen_ai.prompt.1.content": "question",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.tool_calls.0.id": "t1",
                "gen_ai.completion.0.tool_calls.0.name": "search",
                "gen_ai.completion.0.tool_calls.0.arguments": '{"q": "a"}',
            }
        )
    )
    assert view is not None
    assert (view.type, view.provider, view.model) == ("llm", "openai", "gpt-4o-mini")
    assert (view.input_tokens, view.output_tokens, view.total_tokens) == (11, 4, 15)
    assert [m.role for m in view.input_messages] == ["system", "user"]
    assert view.input_preview == "question"
    assert view.output_messages[0].tool_calls[0].name == "search"
    assert view.output_preview == 'search({"q": "a"})'
    assert view.sources["inputMessages"] == "gen_ai.prompt.N"
    assert view.sources["type"] == "llm.request.type"


def test_otel_message_events() -> None:
    """The OTel message events: system, user, tool and assistant messages in, a choice
    out (its message a JSON body with tool calls)."""
    view = view_of(
        attrs({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}),
        [
            event("gen_ai.system.message", {"content": "sys"}),
            event("gen_ai.user.message", {"content": "ask"}),
            event("gen_ai.tool.message", {"content": "42", "id": "t1"}),
            event(
                "gen_ai.choice",
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": dumps({"role": "assistant", "content": "the answer"}),
                },
            ),
        ],
    )
    assert view is not None
    assert [(m.role, m.content) for m in view.input_messages] == [
        ("system", "sys"),
        ("user", "ask"),
        ("tool", "42"),
    ]
    assert [(m.role, m.content) for m in view.output_messages] == [("assistant", "the answer")]
    assert view.sources["outputMessages"] == "gen_ai.choice"


def test_operation_details_event() -> None:
    """gen_ai.client.inference.operation.details carries the JSON message attributes."""
    view = view_of(
        attrs({"gen_ai.operation.name": "chat"}),
        [
            event(
                "gen_ai.client.inference.operation.details",
                {
                    "gen_ai.input.messages": dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
                    ),
                    "gen_ai.output.messages": dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]
                    ),
                },
            )
        ],
    )
    assert view is not None
    assert (view.input_preview, view.output_preview) == ("q", "a")


def test_openinference_llm_span() -> None:
    """OpenInference: span kind, model, provider, token counts with cache details, the
    indexed messages with contents and tool calls, user and session."""
    view = view_of(
        attrs(
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "claude-3-5-sonnet-20241022",
                "llm.provider": "anthropic",
                "llm.token_count.prompt": 200,
                "llm.token_count.completion": 50,
                "llm.token_count.total": 250,
                "llm.token_count.prompt_details.cache_read": 150,
                "llm.token_count.prompt_details.cache_write": 20,
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.contents.0.message_content.type": "text",
                "llm.input_messages.0.message.contents.0.message_content.text": "part one",
                "llm.input_messages.0.message.contents.1.message_content.text": "part two",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "x",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "f",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}",
                "user.id": "u-7",
                "session.id": "s-1",
                "input.value": '{"raw": "request"}',
            }
        )
    )
    assert view is not None
    assert (view.type, view.model, view.provider) == (
        "llm",
        "claude-3-5-sonnet-20241022",
        "anthropic",
    )
    assert (view.cache_read_tokens, view.cache_write_tokens) == (150, 20)
    assert view.input_messages[0].content == "part one\npart two"
    assert view.output_messages[0].tool_calls[0].as_json() == {
        "id": "x",
        "name": "f",
        "arguments": "{}",
    }
    assert (view.user_id, view.session_id) == ("u-7", "s-1")
    assert view.sources["inputMessages"] == "llm.input_messages.N"


def test_openinference_parameters_name_a_model_nothing_else_names() -> None:
    """`llm.invocation_parameters` (JSON) gives the model only when no other key does;
    a parameters text that is no JSON object, or names no model, gives none."""
    given = {"openinference.span.kind": "LLM", "llm.invocation_parameters": '{"model": "o3"}'}
    view = view_of(attrs(given))
    assert view is not None and view.model == "o3"
    assert view.sources["model"] == "llm.invocation_parameters"
    named = view_of(attrs({**given, "llm.model_name": "o3-2025-04-16"}))
    assert named is not None and named.model == "o3-2025-04-16"
    for parameters in ("{", "[]", '{"model": 3}', '{"model": "  "}', '{"temperature": 1}'):
        view = view_of(attrs({**given, "llm.invocation_parameters": parameters}))
        assert view is not None and view.model is None and "model" not in view.sources
    tool = view_of(attrs({**given, "openinference.span.kind": "TOOL"}))
    assert tool is not None and tool.model is None  # a tool asks for no model


def test_openinference_agent_and_tool_values() -> None:
    """An OpenInference agent and tool: their names, and input/output values as the
    messages (a tool's input from the assistant, its output a tool message)."""
    agent = view_of(
        attrs(
            {
                "openinference.span.kind": "AGENT",
                "agent.name": "planner",
                "input.value": "plan a trip",
                "output.value": "done",
            }
        ),
        name="Agent run",
    )
    tool = view_of(
        attrs(
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "weather",
                "input.value": '{"city": "Oslo"}',
                "output.value": "rain",
            }
        )
    )
    assert agent is not None and tool is not None
    assert (agent.type, agent.name, agent.input_preview) == ("agent", "planner", "plan a trip")
    assert (tool.type, tool.name) == ("tool", "weather")
    assert [(m.role, m.content) for m in tool.output_messages] == [("tool", "rain")]


def test_openllmetry_workflow_and_agent() -> None:
    """OpenLLMetry's traceloop.span.kind and entity name, input and output."""
    view = view_of(
        attrs(
            {
                "traceloop.span.kind": "agent",
                "traceloop.entity.name": "researcher",
                "traceloop.entity.input": dumps({"args": ["find x"]}),
                "traceloop.entity.output": dumps("found"),
            }
        )
    )
    workflow = view_of(attrs({"traceloop.span.kind": "workflow"}))
    assert view is not None and workflow is not None
    assert (view.type, view.name) == ("agent", "researcher")
    assert view.input_messages[0].content == '{"args":["find x"]}'
    assert workflow.type == "chain"


def test_an_otel_workflow_with_messages_is_a_chain_not_a_model_call() -> None:
    """OTel GenAI's `invoke_workflow` (OpenTelemetry's LangChain instrumentation names a
    chain so) is a chain whatever it carries: its messages make it no model call, which
    would count as a call of its trace, and one wrapping the calls below it."""
    workflow = view_of(
        attrs(
            {
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.input.messages": dumps([{"role": "user", "parts": [
                    {"type": "text", "content": "plan a trip"}]}]),
            }
        )
    )  # fmt: skip
    bare = view_of(attrs({"gen_ai.operation.name": "invoke_workflow"}))
    assert workflow is not None and bare is not None
    assert (workflow.type, workflow.sources["type"], bare.type) == (
        "chain", "gen_ai.operation.name", "chain")  # fmt: skip
    assert workflow.input_messages[0].content == "plan a trip"


def test_vercel_ai_sdk_provider_call_and_outer_call() -> None:
    """The Vercel AI SDK: doGenerate is the model call (messages, text, tool calls,
    usage); the outer generateText a chain."""
    inner = view_of(
        attrs(
            {
                "ai.operationId": "ai.generateText.doGenerate",
                "ai.model.id": "gpt-4o",
                "ai.model.provider": "openai.chat",
                "ai.usage.promptTokens": 9,
                "ai.usage.completionTokens": 3,
                "ai.prompt.messages": dumps(
                    [
                        {"role": "system", "content": "sys"},
                        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                    ]
                ),
                "ai.response.text": "hi!",
                "ai.response.toolCalls": dumps(
                    [{"toolCallType": "function", "toolCallId": "1", "toolName": "t", "args": "{}"}]
                ),
            }
        )
    )
    outer = view_of(
        attrs(
            {
                "ai.operationId": "ai.generateText",
                "ai.model.id": "gpt-4o",
                "ai.usage.promptTokens": 9,
                "ai.prompt": dumps({"system": "sys", "prompt": "hello"}),
            }
        )
    )
    assert inner is not None and outer is not None
    assert (inner.type, inner.model, inner.provider) == ("llm", "gpt-4o", "openai.chat")
    assert (inner.input_tokens, inner.output_tokens) == (9, 3)
    assert inner.input_preview == "hello"
    assert inner.output_messages[0].content == "hi!"
    assert inner.output_messages[0].tool_calls[0].name == "t"
    assert outer.type == "chain"
    assert [m.role for m in outer.input_messages] == ["system", "user"]


def test_native_kinds_and_attributes() -> None:
    """A native llm_call with the SDK's attribute names; an agent and a tool named by
    their span name unless an attribute names them."""
    llm = view_of(
        attrs({"llm.model": "gpt-4o-mini", "llm.tokens.prompt": 812, "llm.tokens.completion": 96}),
        kind="llm_call",
    )
    agent = view_of([], name="support-agent", kind="agent")
    tool = view_of(attrs({"tool.name": "search_orders"}), name="search", kind="tool_call")
    assert llm is not None and agent is not None and tool is not None
    assert (llm.type, llm.model, llm.total_tokens) == ("llm", "gpt-4o-mini", 908)
    assert llm.sources["type"] == "spangate.span.kind"
    assert (agent.type, agent.name, agent.sources["name"]) == ("agent", "support-agent", "name")
    assert (tool.type, tool.name) == ("tool", "search_orders")


def test_earlier_convention_wins() -> None:
    """Where two conventions disagree, the one earlier in the order wins: the native
    kind over OTel's operation, OTel's model over OpenInference's."""
    view = view_of(
        attrs(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.request.model": "from-otel",
                "llm.model_name": "from-openinference",
            }
        ),
        kind="llm_call",
    )
    assert view is not None
    assert (view.type, view.model) == ("llm", "from-otel")


def test_client_cost_and_conversation_id() -> None:
    """A cost the client sent, and gen_ai.conversation.id as the session."""
    view = view_of(
        attrs(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.cost": 0.0125,
                "gen_ai.conversation.id": "conv-1",
                "enduser.id": "someone",
            }
        )
    )
    assert view is not None
    assert (view.client_cost, view.session_id, view.user_id) == (0.0125, "conv-1", "someone")
    assert view.sources["costUsd"] == "gen_ai.usage.cost"


def test_openllmetry_association_properties_name_user_and_session() -> None:
    """OpenLLMetry's `Traceloop.set_association_properties({"user_id": …, "session_id":
    …})` names the user and session of its workflow's spans; an earlier convention's
    keys win."""
    given = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "support",
             "traceloop.association.properties.user_id": "alice",
             "traceloop.association.properties.session_id": "chat-1"}  # fmt: skip
    view = view_of(attrs(given))
    assert view is not None
    assert (view.user_id, view.session_id) == ("alice", "chat-1")
    assert view.sources["userId"] == "traceloop.association.properties.user_id"
    view = view_of(attrs({**given, "user.id": "bob", "session.id": "s-2"}))
    assert view is not None
    assert (view.user_id, view.session_id) == ("bob", "s-2")


def test_embedding_texts_are_an_embedding_calls_input_only() -> None:
    """OpenInference's `embedding.embeddings.N.embedding.text` are an embedding call's
    input messages; on a span of another type they are not its input (a retriever's is
    its `input.value`)."""
    texts = {"embedding.embeddings.0.embedding.text": "doc one",
             "embedding.embeddings.1.embedding.text": "doc two"}  # fmt: skip
    view = view_of(attrs({"openinference.span.kind": "EMBEDDING", **texts}))
    assert view is not None and view.type == "embedding"
    assert [(m.role, m.content) for m in view.input_messages] == [
        ("user", "doc one"), ("user", "doc two")
    ]  # fmt: skip
    assert view.sources["inputMessages"] == "embedding.embeddings.N"
    for kind, given in (("RETRIEVER", [("user", "q")]), ("CHAIN", []), ("AGENT", [])):
        found = {"openinference.span.kind": kind, **texts}
        if given:
            found["input.value"] = "q"
        view = view_of(attrs(found))
        assert view is not None
        assert [(m.role, m.content) for m in view.input_messages] == given, kind


def test_a_span_no_convention_describes_has_no_view() -> None:
    """Plain HTTP spans, and spans with only a session or a user, have no view."""
    assert view_of(attrs({"http.method": "GET", "session.id": "s", "user.id": "u"})) is None
    assert view_of([], name="GET /", kind="server") is None
