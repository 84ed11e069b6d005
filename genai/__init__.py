"""LLM semantics of spans: one view over every instrumentation's conventions (pure).

`view_of` reads a canonical span's attributes and events into a GenAIView (model,
provider, tokens, messages, agent and tool names, user and session); `prices` turns a
view's tokens into a cost. No I/O here but the price file's reading, which the caller
asks for.
"""

from genai.messages import Message, ToolCall
from genai.view import MODEL_TYPES, TYPES, GenAIView, view_of

__all__ = [
    "MODEL_TYPES",
    "TYPES",
    "GenAIView",
    "Message",
    "ToolCall",
    "view_of",
]
