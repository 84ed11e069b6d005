"""The ingestion record: what became of each request of a project, kept in Redis.

Its parts, all under the project's hash tag (spanqueue.layout), so that the collector
writes a request's record in the script that queues its spans, on the stream's slot:

* the requests: one entry per authenticated ingest request, answered 2xx or refused,
  in a stream trimmed to about KEEP entries (`MAXLEN ~`: Redis trims whole nodes, so a
  few more than KEEP may stay; readers never ask for more than MAX_LIMIT);
* the spans the worker refused after a 200 (the re-sending rule), trimmed alike, and a
  note per entry it moved to the dead letters;
* the lag from a 200 to its spans stored, the last LAG_SAMPLES requests stored;
* spans per minute (accepted and rejected by the collector, refused by the worker), a
  hash per UTC day that expires after MINUTES_TTL_S.

No record holds a key's secret, a body or an attribute value: a request's record has
its route, status, error code, span counts, size and the key's display prefix only.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Requests, refused spans and dead-letter notes kept per project (about: see above).
KEEP = 10_000
#: Lags kept per project, and how old one may be and still count.
LAG_SAMPLES = 1000
LAG_WINDOW_MS = 3_600_000
MINUTES_TTL_S = 2 * 86_400
MS_PER_DAY = 86_400_000
#: A request's record as the scripts take it: this many ARGV, in RequestRecord's order.
RECORD_ARGS = 20
#: Reasons a record keeps (the first rejected spans' or the refusal's), and their length.
MAX_REASONS = 3
#: The largest body size a record gives (a Content-Length may announce any number; the
#: ingestion JSON writes 64-bit integers).
LARGEST_RECORDED = 2**63 - 1
MAX_REASON_CHARS = 200

#: Lua: `record(requests, minutes, at)` adds the record in ARGV[at .. at + 19] to the
#: requests stream and its span counts to its minute of the day's hash.
RECORD = f"""
local function record(requests, minutes, at)
  redis.call('XADD', requests, 'MAXLEN', '~', {KEEP}, '*', unpack(ARGV, at, at + 19))
  local accepted = tonumber(ARGV[at + 9])
  local rejected = tonumber(ARGV[at + 11]) or 0
  if accepted > 0 or rejected > 0 then
    local minute = tostring(math.floor(tonumber(ARGV[at + 1]) / 60000) % 1440)
    if accepted > 0 then redis.call('HINCRBY', minutes, minute .. 'a', accepted) end
    if rejected > 0 then redis.call('HINCRBY', minutes, minute .. 'r', rejected) end
    if redis.call('TTL', minutes) < 0 then redis.call('EXPIRE', minutes, {MINUTES_TTL_S}) end
  end
end
"""
#: Lua: several records of one project and day. KEYS: requests stream, minutes hash.
RECORDS = RECORD + f"for at = 1, #ARGV, {RECORD_ARGS} do record(KEYS[1], KEYS[2], at) end\nreturn 1"


def day_of(at_ms: int) -> int:
    """The UTC day (days since 1970) of a time in ms: the minutes hash it counts in."""
    return at_ms // MS_PER_DAY


def minute_field(at_ms: int, what: str) -> str:
    """The field of the minutes hash counting `what` (a, r or f) in the minute of `at_ms`."""
    return f"{at_ms // 60_000 % 1440}{what}"


#: not frozen: one is made for every request, and a frozen dataclass sets its fields
#: slowly (ten fields: 4.6 times the time of a plain slotted one)
@dataclass(slots=True)
class RequestRecord:
    """One authenticated ingest request: how it was answered and what it held.

    `rejected` is None when the body was never parsed; `body_bytes` the body as received
    (before decompression); `key_prefix` the key's display prefix, never the key.
    """

    at_ms: int
    route: str
    status: int
    code: str | None
    accepted: int
    rejected: int | None
    ignored: int
    body_bytes: int
    key_prefix: str
    #: the first reasons, one a line: of the rejected spans, or of the refusal
    reasons: str = ""

    def field_values(self) -> tuple[bytes | str | int, ...]:
        """The entry's fields and values in turn (RECORD_ARGS of them, in this order:
        the scripts read `at`, `accepted` and `rejected` by position)."""
        return (
            b"at",
            self.at_ms,
            b"route",
            self.route,
            b"status",
            self.status,
            b"code",
            self.code or "",
            b"accepted",
            self.accepted,
            b"rejected",
            "" if self.rejected is None else self.rejected,
            b"ignored",
            self.ignored,
            b"bytes",
            self.body_bytes,
            b"key",
            self.key_prefix,
            b"reasons",
            self.reasons,
        )

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> RequestRecord:
        """Read an entry back (KeyError or ValueError when it is not one)."""
        rejected = fields[b"rejected"]
        return cls(
            at_ms=int(fields[b"at"]),
            route=fields[b"route"].decode(),
            status=int(fields[b"status"]),
            code=fields[b"code"].decode() or None,
            accepted=int(fields[b"accepted"]),
            rejected=int(rejected) if rejected else None,
            ignored=int(fields[b"ignored"]),
            body_bytes=min(int(fields[b"bytes"]), LARGEST_RECORDED),  # as written before it was
            key_prefix=fields[b"key"].decode(),
            reasons=fields.get(b"reasons", b"").decode(),
        )


@dataclass(frozen=True, slots=True)
class RefusedSpan:
    """A span the worker did not store after its request's 200."""

    at_ms: int
    trace_id: str
    span_id: str
    reason: str

    def fields(self) -> dict[bytes, bytes]:
        """The entry's fields, as redis-py's XADD takes them."""
        return {
            b"at": b"%d" % self.at_ms,
            b"trace": self.trace_id.encode(),
            b"span": self.span_id.encode(),
            b"reason": self.reason.encode(),
        }

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> RefusedSpan:
        return cls(
            int(fields[b"at"]),
            fields[b"trace"].decode(),
            fields[b"span"].decode(),
            fields[b"reason"].decode(),
        )


@dataclass(frozen=True, slots=True)
class DeadLetterNote:
    """A queue entry the worker moved to the dead letters: its id, spans and reason."""

    at_ms: int
    entry_id: str
    spans: int
    reason: str

    def fields(self) -> dict[bytes, bytes]:
        """The entry's fields, as redis-py's XADD takes them."""
        return {
            b"at": b"%d" % self.at_ms,
            b"entry": self.entry_id.encode(),
            b"spans": b"%d" % self.spans,
            b"reason": self.reason.encode(),
        }

    @classmethod
    def from_fields(cls, fields: dict[bytes, bytes]) -> DeadLetterNote:
        return cls(
            int(fields[b"at"]),
            fields[b"entry"].decode(),
            int(fields[b"spans"]),
            fields[b"reason"].decode(),
        )


def reasons_of(reasons: list[str]) -> str:
    """The reasons a record keeps: the first MAX_REASONS, each cut to MAX_REASON_CHARS
    (one cut ends in "…", so that it does not read as a whole word)."""
    return "\n".join(_cut(reason) for reason in reasons[:MAX_REASONS])


def _cut(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"


def lag_sample(stored_ms: int, received_ms: int) -> bytes:
    """A lag as the lag list keeps it: when it was stored, and the lag, in ms."""
    return b"%d:%d" % (stored_ms, max(0, stored_ms - received_ms))
