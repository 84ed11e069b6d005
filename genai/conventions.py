"""The attribute names of each convention the GenAI view reads, in one table.

Read in order of precedence, earliest first: spangate's native SDK, then the
OpenTelemetry GenAI semantic conventions (v1.37, with the names they replaced),
OpenInference (semantic conventions of openinference-semantic-conventions 0.1),
OpenLLMetry (traceloop's semantic conventions for AI) and the Vercel AI SDK's telemetry
(ai.* attributes of AI SDK 4 and 5). A field takes the first name present with a usable
value, so where two conventions disagree the earlier one wins.
"""

from __future__ import annotations

#: The spangate SDK's own span kinds (proto_json's KIND_ATTRIBUTE) and the view's type.
NATIVE_TYPES = {
    "llm_call": "llm",
    "agent": "agent",
    "tool_call": "tool",
    "retrieval": "retrieval",
    "delegation": "chain",
    "coordination": "chain",
    "decision": "chain",
    "decide": "chain",
    "think": "chain",
    "observe": "chain",
    "reflect": "chain",
    "message": "chain",
}

#: Attributes that name the span's type, each with its values' types.
TYPE_ATTRIBUTES: tuple[tuple[str, dict[str, str]], ...] = (
    (  # OTel GenAI: gen_ai.operation.name
        "gen_ai.operation.name",
        {
            "chat": "llm",
            "text_completion": "llm",
            "generate_content": "llm",
            "embeddings": "embedding",
            "execute_tool": "tool",
            "invoke_agent": "agent",
            "create_agent": "agent",
            "invoke_workflow": "chain",
        },
    ),
    (  # OpenInference: openinference.span.kind
        "openinference.span.kind",
        {
            "LLM": "llm",
            "EMBEDDING": "embedding",
            "TOOL": "tool",
            "AGENT": "agent",
            "RETRIEVER": "retrieval",
            "RERANKER": "retrieval",
            "CHAIN": "chain",
            "GUARDRAIL": "chain",
            "EVALUATOR": "chain",
            "PROMPT": "chain",
        },
    ),
    (  # OpenLLMetry: traceloop.span.kind, and llm.request.type on its provider spans
        "traceloop.span.kind",
        {"workflow": "chain", "task": "chain", "agent": "agent", "tool": "tool"},
    ),
    ("llm.request.type", {"chat": "llm", "completion": "llm", "embedding": "embedding"}),
    (  # Vercel AI SDK: ai.operationId; the outer calls wrap a provider call (doGenerate)
        "ai.operationId",
        {
            "ai.generateText.doGenerate": "llm",
            "ai.streamText.doStream": "llm",
            "ai.generateObject.doGenerate": "llm",
            "ai.streamObject.doStream": "llm",
            "ai.embed.doEmbed": "embedding",
            "ai.embedMany.doEmbed": "embedding",
            "ai.toolCall": "tool",
            "ai.generateText": "chain",
            "ai.streamText": "chain",
            "ai.generateObject": "chain",
            "ai.streamObject": "chain",
            "ai.embed": "chain",
            "ai.embedMany": "chain",
        },
    ),
)

#: The attributes (key, value as text) that make a span an agent, in every convention,
#: as the instrumentations write them, in either case and capitalised (the view also
#: reads other mixtures of cases): the SDK's kind is kept in `spangate.span.kind`.
AGENT_MARKS = tuple(
    sorted(
        {
            (key, written)
            for key, types in (("spangate.span.kind", NATIVE_TYPES), *TYPE_ATTRIBUTES)
            for value, kind in types.items()
            if kind == "agent"
            for written in (value, value.upper(), value.lower(), value.title())
        }
    )
)

#: Each scalar field of the view and the attributes that give it.
MODEL = (
    "llm.model",  # native
    "gen_ai.response.model",  # the model that answered, over the one asked for
    "gen_ai.request.model",
    "llm.model_name",  # OpenInference
    "embedding.model_name",
    "llm.response.model",  # OpenLLMetry, older
    "llm.request.model",
    "ai.response.model",  # Vercel
    "ai.model.id",
)
#: A model call's parameters as JSON (OpenInference): its `model` names the model asked
#: for, read when no key above names one (a call that failed before any answer).
INVOCATION_PARAMETERS = "llm.invocation_parameters"
PROVIDER = (
    "llm.provider",  # native, and OpenInference
    "gen_ai.provider.name",
    "gen_ai.system",  # the older OTel name, also OpenLLMetry's
    "llm.system",  # OpenInference
    "ai.model.provider",  # Vercel
)
AGENT_NAME = ("agent.name", "gen_ai.agent.name", "traceloop.entity.name")
TOOL_NAME = ("tool.name", "gen_ai.tool.name", "ai.toolCall.name", "traceloop.entity.name")
#: OpenLLMetry's association properties (`Traceloop.set_association_properties`) come
#: last: their keys are the application's own, and these two are its documented ones.
ASSOCIATION = "traceloop.association.properties."
USER = ("user.id", "enduser.id", f"{ASSOCIATION}user_id")
SESSION = ("session.id", "gen_ai.conversation.id", f"{ASSOCIATION}session_id")
INPUT_TOKENS = (
    "llm.tokens.prompt",  # native
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",  # older OTel, OpenLLMetry
    "llm.token_count.prompt",  # OpenInference
    "llm.usage.prompt_tokens",
    "ai.usage.inputTokens",  # Vercel 5
    "ai.usage.promptTokens",  # Vercel 4
)
OUTPUT_TOKENS = (
    "llm.tokens.completion",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "llm.usage.completion_tokens",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)
TOTAL_TOKENS = (
    "llm.tokens.total",
    "gen_ai.usage.total_tokens",
    "llm.token_count.total",
    "llm.usage.total_tokens",  # OpenLLMetry
    "ai.usage.totalTokens",
)
CACHE_READ_TOKENS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",  # OpenLLMetry
    "llm.token_count.prompt_details.cache_read",
    "ai.usage.cachedInputTokens",
)
CACHE_WRITE_TOKENS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
)
REASONING_TOKENS = (
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.reasoning_tokens",
    "llm.usage.reasoning_tokens",
    "llm.token_count.completion_details.reasoning",
    "ai.usage.reasoningTokens",
)
#: A cost the client computed, in USD.
COST = ("gen_ai.usage.cost", "llm.cost.total")

#: Messages as one JSON attribute, with their format's reader (genai/messages.py).
INPUT_MESSAGES = (
    ("gen_ai.input.messages", "otel"),
    ("ai.prompt.messages", "vercel"),
    ("ai.prompt", "vercel-prompt"),
)
OUTPUT_MESSAGES = (("gen_ai.output.messages", "otel"),)
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
#: Messages as indexed attributes: prefix, then the member names of role, content, a
#: tool call's id, name and arguments, and the tool call id a tool message answers.
INDEXED_INPUT = (
    ("llm.input_messages.", "openinference"),
    ("gen_ai.prompt.", "indexed"),
)
#: OpenInference: an embedding call's texts (`embedding.embeddings.N.embedding.text`),
#: read as its input messages, of an embedding call only.
EMBEDDING_TEXTS = "embedding.embeddings."
INDEXED_OUTPUT = (
    ("llm.output_messages.", "openinference"),
    ("gen_ai.completion.", "indexed"),
)
#: Every prefix of messages kept as indexed attributes.
INDEXED_PREFIXES = (*(prefix for prefix, _ in (*INDEXED_INPUT, *INDEXED_OUTPUT)), EMBEDDING_TEXTS)
#: A Vercel provider call's answer: its text, and its tool calls (JSON).
VERCEL_TEXT = ("ai.response.text",)
VERCEL_TOOL_CALLS = "ai.response.toolCalls"
#: The input and output of spans that are not model calls, as text or JSON text.
INPUT_VALUE = (
    "input.value",  # OpenInference
    "gen_ai.tool.call.arguments",
    "traceloop.entity.input",
    "ai.toolCall.args",
    "tool.args",  # native
    "input",
)
OUTPUT_VALUE = (
    "output.value",
    "gen_ai.tool.call.result",
    "traceloop.entity.output",
    "ai.toolCall.result",
    "ai.response.text",
    "tool.result",
    "output",
)
#: OTel GenAI message events: the event's name and the role of its message.
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"

#: A model call's request parameters as the span pane shows them: its label, the
#: attributes that give it (OTel GenAI, also OpenLLMetry's; the Vercel AI SDK's), and
#: its key in OpenInference's `llm.invocation_parameters` (JSON), read where none does.
REQUEST_PARAMETERS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("temperature", ("gen_ai.request.temperature", "ai.settings.temperature"), ("temperature",)),
    (
        "max tokens",
        ("gen_ai.request.max_tokens", "ai.settings.maxOutputTokens", "ai.settings.maxTokens"),
        ("max_tokens", "max_completion_tokens", "max_output_tokens"),
    ),
    ("top p", ("gen_ai.request.top_p", "ai.settings.topP"), ("top_p",)),
    ("top k", ("gen_ai.request.top_k", "ai.settings.topK"), ("top_k",)),
    (
        "frequency penalty",
        ("gen_ai.request.frequency_penalty", "ai.settings.frequencyPenalty"),
        ("frequency_penalty",),
    ),
    (
        "presence penalty",
        ("gen_ai.request.presence_penalty", "ai.settings.presencePenalty"),
        ("presence_penalty",),
    ),
    ("seed", ("gen_ai.request.seed", "ai.settings.seed"), ("seed",)),
    ("stop", ("gen_ai.request.stop_sequences", "ai.settings.stopSequences"), ("stop",)),
    ("reasoning effort", ("gen_ai.openai.request.reasoning_effort",), ("reasoning_effort",)),
)
#: The tools a call offered the model: OTel GenAI's (JSON: a list of definitions), and
#: OpenInference's indexed JSON schemas (`llm.tools.N.tool.json_schema`).
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
INDEXED_TOOLS = ("llm.tools.", "tool.json_schema")
