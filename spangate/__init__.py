"""spangate: span ingest gateway and scores service for LLM and agent tracing."""

__version__ = "0.1.0"
