"""The queue's keys and entries in Redis.

One stream per project, `spangate:{<project_id>}:spans`; the braces are a Redis Cluster
hash tag, so every key of a project lives on one shard. One entry per request: the
canonical OTLP/JSON of its accepted spans plus where and when it came from.

Producers add a stream's key to the set STREAMS_KEY before their first XADD to it (and
again now and then, in case the set was lost); workers find the streams there. Finding
them with SCAN instead would walk every key of the instance: the rate limits', the
ingestion record's and any other application's sharing it.
"""

from __future__ import annotations

from dataclasses import dataclass

STREAMS_KEY = "spangate:streams"
#: The consumer group every worker reads each stream in.
GROUP = "spangate-workers"


def stream_key(project_id: str) -> str:
    """The stream holding a project's queued requests."""
    return f"spangate:{{{project_id}}}:spans"


def depth_key(project_id: str) -> str:
    """Queued-but-not-stored spans of a project: raised with each XADD, lowered at XACK."""
    return f"spangate:{{{project_id}}}:depth"


def dead_letter_key(project_id: str) -> str:
    """Where a project's entries go when they keep failing."""
    return f"spangate:{{{project_id}}}:dead"


def attempts_key(project_id: str) -> str:
    """Failed attempts per entry id of a project's stream."""
    return f"spangate:{{{project_id}}}:attempts"


def rate_key(project_id: str) -> str:
    """The project's request rate (collector/admission.py's GCRA state)."""
    return f"spangate:{{{project_id}}}:rate"


def ip_rate_key(ip: str) -> str:
    """A client address's request rate, across projects (in a slot of its own)."""
    return f"spangate:ip:{{{ip}}}:rate"


def refused_counter(project_id: str) -> str:
    """Running count of a project's spans the worker refused by the re-sending window."""
    return f"spangate:{{{project_id}}}:refused"


def requests_key(project_id: str) -> str:
    """The ingestion record's stream of a project's requests (capped: spanqueue.ingestion)."""
    return f"spangate:{{{project_id}}}:ingest:requests"


def refused_key(project_id: str) -> str:
    """The ingestion record's stream of the spans the worker refused after a 200 (capped)."""
    return f"spangate:{{{project_id}}}:ingest:refused"


def dead_notes_key(project_id: str) -> str:
    """The ingestion record's notes of entries moved to the dead letters (capped; the
    dead-letter stream itself holds the bodies)."""
    return f"spangate:{{{project_id}}}:ingest:dead"


def lag_key(project_id: str) -> str:
    """The ingestion record's recent lags from a 200 to its spans stored (a capped list)."""
    return f"spangate:{{{project_id}}}:ingest:lag"


def minutes_key(project_id: str, day: int) -> str:
    """The ingestion record's spans per minute of one UTC day (days since 1970), a hash
    that expires after two days."""
    return f"spangate:{{{project_id}}}:ingest:minutes:{day}"


#: The workers' names, each scored by its last heartbeat (ms): how `--check` and the
#: collector's readiness find them without scanning the keyspace.
WORKERS_KEY = "spangate:workers"


def heartbeat_key(consumer: str) -> str:
    """A worker's heartbeat: what it last did, expiring unless it beats again."""
    return f"spangate:worker:{{{consumer}}}:heartbeat"


def project_of_stream(key: str) -> str:
    """The project id in a stream key."""
    return key[key.index("{") + 1 : key.rindex("}")]


@dataclass(frozen=True, slots=True)
class QueuedRequest:
    """One stream entry: the accepted spans of one request, as canonical OTLP/JSON bytes."""

    project_id: str
    route: str
    received_ms: int
    span_count: int
    body: bytes

    def fields(self) -> dict[bytes, bytes]:
        """The entry's fields as redis-py's XADD takes them."""
        values = iter(self.field_values())
        return dict(zip(values, values, strict=True))

    def field_values(self) -> tuple[bytes, ...]:
        """The entry's fields and values, in turn, as they follow XADD's id."""
        return (
            b"project",
            self.project_id.encode(),
            b"route",
            self.route.encode(),
            b"received_ms",
            b"%d" % self.received_ms,
            b"spans",
            b"%d" % self.span_count,
            b"body",
            self.body,
        )

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> QueuedRequest:
        """Read an entry back (KeyError or ValueError when it is not one of ours)."""
        return cls(
            project_id=fields[b"project"].decode(),
            route=fields[b"route"].decode(),
            received_ms=int(fields[b"received_ms"]),
            span_count=int(fields[b"spans"]),
            body=fields[b"body"],
        )
