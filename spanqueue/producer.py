"""Producing: the Lua every enqueue script of the collector runs to add an entry.

The XADD and the raise of the project's depth run in one script: in a MULTI, an XADD
failing at EXEC (WRONGTYPE) would leave the depth raised for an entry never added, and
the project refused QUEUE_NEAR_CAPACITY for spans it never queued. Entries are never
trimmed (no MAXLEN): an unconsumed entry is an acknowledged span.

Producers add a stream's key to STREAMS_KEY before their first XADD to it, and again
every REGISTER_EVERY_S, in a command of its own: the set is no project's key, so in a
Redis Cluster it lives in another slot than the stream.
"""

from __future__ import annotations

from spanqueue.layout import QueuedRequest, depth_key, stream_key

#: A Lua function `add(depth_key, stream, count_at)`: XADD the fields and values that
#: follow ARGV[count_at], and raise the depth by ARGV[count_at] (the span count).
ADD = """
local function add(depth_key, stream, count_at)
  redis.call('XADD', stream, '*', unpack(ARGV, count_at + 1))
  redis.call('INCRBY', depth_key, ARGV[count_at])
end
"""
#: How often a producer re-adds a stream it writes to the workers' set (in case the set
#: was lost).
REGISTER_EVERY_S = 60.0


def entry_keys(item: QueuedRequest) -> tuple[str, str]:
    """The keys `add` takes for this entry: the project's depth and its stream."""
    return depth_key(item.project_id), stream_key(item.project_id)


def entry_args(item: QueuedRequest) -> tuple[int | bytes, ...]:
    """The arguments `add` takes from ARGV[count_at]: the span count, then the entry."""
    return (item.span_count, *item.field_values())
