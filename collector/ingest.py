"""The four ingest routes: one pipeline, route by route only where their answers differ.

Order: header checks (no I/O), authentication, admission (rate limits, queue depth),
the body under the size limits, decode and convert, one confirmed XADD, the answer. A
small plain body is admitted by the XADD's own script instead, after it is converted,
so that the request takes one round trip to Redis; its answers are the same.

Conversion is pure-Python CPU work, so a thread buys no parallelism (the GIL), and
measured under load it convoys: the event loop waits for the GIL after every socket
operation. Only bodies over OFFLOAD_BYTES go to a thread, where blocking the loop for
their whole conversion would stall health checks and small requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Callable
from typing import Any

from quart import Request, Response
from quart.globals import request_ctx
from werkzeug.exceptions import RequestEntityTooLarge

import proto_json
from collector.admission import Admission
from collector.answers import otlp_answer, spans_answer, traces_answer
from collector.archive import HEADROOM_FRACTION, Archive, ArchiveRecord
from collector.auth import authenticate
from collector.bodies import content_codings, decode, inflated_bound
from collector.errors import GatewayError, unavailable
from collector.inflight import InflightBudget
from collector.ingestion_record import Requester, RequestRecorder, requester
from collector.memory_watch import MemoryWatch
from collector.metrics import Metrics
from collector.queue import RecordArgs, SpanQueue
from collector.request_head import RequestHead
from proto_json import Conversion, EnvelopeError, Limits, fastpath
from proto_json.fastpath import EMPTY_REQUEST
from service.client_address import client_ip
from service.settings import IPNetwork
from service.web import json_response, whole_body
from spanqueue.ingestion import LARGEST_RECORDED
from spanqueue.layout import QueuedRequest
from storage.verifier import KeyVerifier

#: Bodies above this many bytes (as received) are decoded and converted off the loop,
#: at most OFFLOAD_CONCURRENCY at a time.
OFFLOAD_BYTES = 1024 * 1024
OFFLOAD_CONCURRENCY = 2
#: Bodies of at most this many bytes, announced and not compressed, are admitted by the
#: script that queues them (see Ingest._ingest). Kept small: such a body is read and
#: converted before a rate limit can refuse it.
ADMIT_WITH_XADD_BYTES = 16 * 1024
_PROTOBUF = "application/x-protobuf"
_REFUSALS = {
    "TOO_MANY_SPANS": "the request has {count} spans; at most {limit} are accepted per request",
    "TOO_MANY_ATTRIBUTES": "the request has over {limit} attribute pairs; send fewer per request",
}
#: Attribute values in one request at most, counting each value inside an array or a
#: map: a pair's value may be an array of millions of short values, which the canonical
#: form writes at 8 times their size (`0,` as `{"intValue":"0"},`), and which the worker
#: and the dashboard then hold (an array of 5,000,000 zeros, sent in 10 MB, took the
#: worker 2.4 GB). Ample for real spans: the pairs are at most 24,000, and a 10 MB body
#: holds about 500,000 of an embedding's floats.
MAX_VALUES = 1_000_000
#: Every value of the canonical form has one key ending so (`stringValue`, `arrayValue`,
#: ...); no other key does, and a quote inside a string is escaped.
_VALUE_KEY = b'Value":'
#: Each value takes 12 bytes of the canonical text at least (`{"intValue":`, its own):
#: a shorter text holds fewer than MAX_VALUES and is not counted (a count costs a
#: quarter of a conversion: 0.63 ms for a 1,000-span request's 822 KB).
_COUNTED_ABOVE = 12 * MAX_VALUES
#: How much larger than its body a request's canonical form may be: twice, and this.
#: Real spans stay well within (strings are written as they came, and the pairs'
#: wrappers, 24,000 of them at most, and 10,000 spans' own members take less); nested
#: arrays and maps are what goes past it (a body of 1.7 MB of single-value arrays 31
#: deep wrote 22 MB, and took the worker 800 MB).
GROWTH_SLACK = 8 * 1024 * 1024
_TOO_MANY_VALUES = (
    f"the request has over {MAX_VALUES:,} attribute values, counting those inside arrays "
    "and maps, or they take over twice its size in the stored form; send fewer, shorter "
    "or flatter arrays and maps per request"
)


def _too_many_values(queued: bytes, body: bytes) -> bool:
    """Whether a request's canonical form has over MAX_VALUES values, or grew past its
    body's twice and GROWTH_SLACK."""
    if len(queued) > 2 * len(body) + GROWTH_SLACK:
        return True
    return len(queued) > _COUNTED_ABOVE and queued.count(_VALUE_KEY) > MAX_VALUES


#: Converts a decoded body; True when the body was OTLP/JSON (answered in the OTLP form).
Converter = Callable[[bytes, Limits], tuple[Conversion, bool]]


class _Incoming:
    """One ingest request: Quart's request object and its head, each looked up once,
    and the form its answer takes."""

    __slots__ = ("request", "head", "otlp_form", "received", "conversion")

    def __init__(self) -> None:
        self.request: Request = request_ctx.request
        self.head = RequestHead.of(self.request.scope)
        self.otlp_form = False
        self.received: int | None = None  # the body's bytes as received, once read
        self.conversion: Conversion | None = None  # once the body is converted

    def received_bytes(self) -> int:
        """The body's size as received; before it is read, as announced (else 0; at most
        the largest integer the record's readers write)."""
        if self.received is not None:
            return self.received
        return min(self.head.content_length or 0, LARGEST_RECORDED)

    def answer_in_otlp_form(self) -> None:
        self.otlp_form = True


def _native(convert: Callable[[bytes, Limits], Conversion]) -> Converter:
    return lambda data, limits: (convert(data, limits), False)


class _Caller:
    """Whom a request is admitted as: its project and client address, and whether it
    has been admitted yet."""

    __slots__ = ("project_id", "ip", "admitted", "who", "recorded")

    def __init__(self, ip: str, who: Requester) -> None:
        self.project_id = who.project_id
        self.ip = ip
        self.admitted = False
        self.who = who  # as the ingestion record names the request
        self.recorded = False  # its record is written with its spans


class _OtlpEnvelopeError(Exception):
    """An OTLP body's envelope is invalid: answered in the OTLP form on every route."""

    def __init__(self, error: EnvelopeError) -> None:
        super().__init__(error.message)
        self.error = error


def _convert_otlp(data: bytes, limits: Limits) -> tuple[Conversion, bool]:
    return proto_json.convert_otlp(data, limits), True


#: How an OTLP body begins: its form is its answers' even where it does not parse whole.
_OTLP_START = re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"resourceSpans"[ \t\r\n]*:')


def _convert_traces(data: bytes, limits: Limits) -> tuple[Conversion, bool]:
    """/v1/traces takes a native or an OTLP body; the detector tells them apart."""
    converted = fastpath.otlp_body(data, limits)  # an all-valid body with resourceSpans
    if converted is not None:
        return converted, True
    converted = fastpath.traces_body(data, limits)  # an all-valid body of native traces
    if converted is not None:
        return converted, False
    try:
        document = proto_json.load_object(data)
    except EnvelopeError as e:
        if _OTLP_START.match(data):  # an OTLP body, unparseable further on
            raise _OtlpEnvelopeError(e) from e
        raise
    if proto_json.traces_format(document) == "otlp":
        try:
            return proto_json.convert_otlp_document(document, limits), True
        except EnvelopeError as e:
            raise _OtlpEnvelopeError(e) from e
    return proto_json.convert_traces_document(document, limits), False


_SPANS = _native(proto_json.convert_spans)
_SPANS_BATCH = _native(proto_json.convert_ndjson)


class Ingest:
    """Route handlers bound to the collector's limits, admission, key verifier and queue."""

    def __init__(
        self,
        limits: Limits,
        max_body_bytes: int,
        verifier: KeyVerifier,
        queue: SpanQueue,
        admission: Admission,
        inflight: InflightBudget,
        memory: MemoryWatch,
        metrics: Metrics,
        trusted_proxies: tuple[IPNetwork, ...] = (),
        archive: Archive | None = None,
        max_queued_spans: int = 0,
        recorder: RequestRecorder | None = None,
    ) -> None:
        self.limits = limits
        self.max_body_bytes = max_body_bytes
        self.verifier = verifier
        self.queue = queue
        self.admission = admission
        self.inflight = inflight
        self.memory = memory
        self.metrics = metrics
        self.archive = archive
        self.recorder = recorder
        self.archive_headroom = int(max_queued_spans * HEADROOM_FRACTION)
        self.trusted_proxies = trusted_proxies
        # Parsing expands a body about tenfold in memory: cap the large ones in flight.
        self.offloaded = asyncio.Semaphore(OFFLOAD_CONCURRENCY)

    async def spans(self) -> Response:
        """POST /v1/spans."""
        return await self._ingest(_Incoming(), "spans", _SPANS, spans_answer)

    async def spans_batch(self) -> Response:
        """POST /v1/spans/batch."""
        return await self._ingest(_Incoming(), "spans_batch", _SPANS_BATCH, spans_answer)

    async def traces(self) -> Response:
        """POST /v1/traces: native or OTLP body; OTLP answers when Content-Encoding is set."""
        incoming = _Incoming()
        head = incoming.head
        if head.content_encoding is not None or head.mimetype == _PROTOBUF:
            incoming.answer_in_otlp_form()
        return await self._ingest(incoming, "traces", _convert_traces, traces_answer)

    async def otlp(self) -> Response:
        """POST /v1/otlp/v1/traces: OTLP/JSON only, OTLP answers."""
        incoming = _Incoming()
        incoming.answer_in_otlp_form()
        return await self._ingest(incoming, "otlp", _convert_otlp, otlp_answer)

    # -- the pipeline ----------------------------------------------------------------

    def _check_headers(self, incoming: _Incoming) -> list[str]:
        head = incoming.head
        if incoming.otlp_form and head.mimetype == _PROTOBUF:
            raise GatewayError(
                415,
                "UNSUPPORTED_MEDIA_TYPE",
                "binary protobuf (application/x-protobuf) is not supported; send OTLP/JSON "
                "with Content-Type: application/json",
                body_error=True,
            )
        try:
            codings = content_codings(head.content_encoding)
        except GatewayError as e:
            if not incoming.otlp_form:
                raise
            raise GatewayError(400, "SERIALIZATION_ERROR", e.message, body_error=True) from e
        length = head.content_length
        if length is not None and length > self.max_body_bytes:
            raise GatewayError(
                413,
                "PAYLOAD_TOO_LARGE",
                f"Content-Length {length} is over the {self.max_body_bytes}-byte limit",
                body_error=True,
            )
        return codings

    async def _body(self, incoming: _Incoming) -> bytes:
        request = incoming.request
        try:
            # a body has SPANGATE_BODY_TIMEOUT_S (Quart's BODY_TIMEOUT) to arrive whole:
            # one that stops coming holds its in-flight bytes no longer than that
            data: bytes = await asyncio.wait_for(whole_body(request.body), request.body_timeout)
            incoming.received = len(data)
            return data
        except TimeoutError as e:
            raise GatewayError(
                408,
                "REQUEST_TIMEOUT",
                f"the body did not arrive whole within {request.body_timeout} s",
                body_error=True,
            ) from e
        except RequestEntityTooLarge as e:
            # read no further once past the limit: the record says the least it was
            incoming.received = self.max_body_bytes + 1
            raise GatewayError(
                413,
                "PAYLOAD_TOO_LARGE",
                f"body is over the {self.max_body_bytes}-byte limit",
                body_error=True,
                bare=True,
            ) from e

    def _decode_and_convert(
        self, raw: bytes, codings: list[str], convert: Converter
    ) -> tuple[Conversion, bool, bytes | None, bytes]:
        """Pure work (no request context): safe to run in a worker thread."""
        data = decode(raw, codings, self.max_body_bytes)
        try:
            conversion, was_otlp = convert(data, self.limits)
        except EnvelopeError as e:
            raise GatewayError(400, e.code, e.message, body_error=True) from e
        queued = conversion.payload if conversion.accepted else None
        if queued is not None and _too_many_values(queued, data):
            refused = dataclasses.replace(
                conversion, canonical=EMPTY_REQUEST, accepted=0, refusal="TOO_MANY_ATTRIBUTES"
            )
            return refused, was_otlp, None, data
        return conversion, was_otlp, queued, data

    def _reservation(self, head: RequestHead, codings: list[str]) -> int:
        """Bytes this request may hold: its body (the limit when unannounced), plus the
        most its gzip layers inflate to (a small body cannot inflate to the limit)."""
        length = head.content_length
        body = length if length is not None else self.max_body_bytes
        return body + inflated_bound(body, codings, self.max_body_bytes)

    async def _convert(
        self, incoming: _Incoming, raw: bytes, codings: list[str], convert: Converter
    ) -> tuple[Conversion, bool, bytes | None, bytes]:
        try:
            if len(raw) <= OFFLOAD_BYTES:
                return self._decode_and_convert(raw, codings, convert)
            async with self.offloaded:
                return await asyncio.to_thread(self._decode_and_convert, raw, codings, convert)
        except _OtlpEnvelopeError as e:
            incoming.answer_in_otlp_form()
            raise GatewayError(400, e.error.code, e.error.message, body_error=True) from e

    async def _ingest(
        self,
        incoming: _Incoming,
        route: str,
        convert: Converter,
        answer: Callable[[Conversion], dict[str, Any]],
    ) -> Response:
        """The request's answer; an error raised on the way carries the form the answer
        takes (OTLP's or the gateway's), for the handler that renders it."""
        try:
            return await self._answer(incoming, route, convert, answer)
        except GatewayError as e:
            e.otlp_form = incoming.otlp_form
            raise

    async def _answer(
        self,
        incoming: _Incoming,
        route: str,
        convert: Converter,
        answer: Callable[[Conversion], dict[str, Any]],
    ) -> Response:
        head = incoming.head
        try:
            codings = self._check_headers(incoming)
        except GatewayError as e:
            if self.recorder is not None:  # recorded when its key is valid
                received = incoming.received_bytes()
                await self.recorder.refused_early(self.verifier, head, route, received, e)
            raise
        identity = await authenticate(self.verifier, head.authorization)
        forwarded = head.forwarded_for if self.trusted_proxies else None
        ip = client_ip(incoming.request.remote_addr, forwarded, self.trusted_proxies)
        caller = _Caller(ip, requester(identity.project_id, route, head.authorization))
        try:
            conversion = await self._ingest_as(incoming, caller, route, codings, convert)
        except Exception as e:
            if self.recorder is not None and not caller.recorded:
                received, converted = incoming.received_bytes(), incoming.conversion
                self.recorder.refused(caller.who, received, converted, e)
            raise
        self.metrics.spans.inc((route, "accepted"), conversion.accepted)
        self.metrics.spans.inc((route, "rejected"), conversion.rejected)
        return json_response(otlp_answer(conversion) if incoming.otlp_form else answer(conversion))

    async def _ingest_as(
        self,
        incoming: _Incoming,
        caller: _Caller,
        route: str,
        codings: list[str],
        convert: Converter,
    ) -> Conversion:
        """The request of an authenticated caller, through to its spans queued."""
        head = incoming.head
        self.memory.check()
        # A small plain body is read and converted first, then admitted by the script that
        # queues it: one round trip to Redis. Any other is admitted before it is read, so
        # a refused one is never read or inflated.
        if not self._admits_late(head, codings):
            await self._admit(caller)
        with self.inflight.reserve(self._reservation(head, codings), caller.project_id):
            conversion, queued, data = await self._converted(incoming, caller, codings, convert)
            if queued is not None:
                item = QueuedRequest(
                    caller.project_id, route, int(time.time() * 1000), conversion.accepted, queued
                )
                record = None
                if self.recorder is not None:
                    record = self.recorder.queued(caller.who, incoming.received_bytes(), conversion)
                await self._enqueue(caller, item, record)
                if self.archive is not None:
                    self.archive.append(
                        ArchiveRecord(
                            item.received_ms, item.project_id, route, head.content_type, data
                        )
                    )
            elif self.recorder is not None:
                self.recorder.answered(caller.who, incoming.received_bytes(), conversion)
        return conversion

    def _admits_late(self, head: RequestHead, codings: list[str]) -> bool:
        """Whether the request is admitted by the script that queues it (see _ingest)."""
        length = head.content_length
        return (
            length is not None
            and length <= ADMIT_WITH_XADD_BYTES
            and not codings
            and (self.archive is None or not self.archive.degraded)
        )

    async def _converted(
        self, incoming: _Incoming, caller: _Caller, codings: list[str], convert: Converter
    ) -> tuple[Conversion, bytes | None, bytes]:
        """The body read and converted: the conversion, the bytes to queue (None when no
        span is accepted) and the decoded body.

        A caller not admitted yet is admitted before the body's own refusal, and before
        a body with nothing to queue is answered: the answers stay those of admission
        first, and every request spends the rate limits.
        """
        try:
            raw = await self._body(incoming)
            conversion, was_otlp, queued, data = await self._convert(
                incoming, raw, codings, convert
            )
        except GatewayError:
            await self._admit(caller)
            raise
        incoming.conversion = conversion
        if was_otlp:
            incoming.answer_in_otlp_form()
        if queued is None or conversion.refusal is not None:
            await self._admit(caller)
        if conversion.refusal is not None:
            limit = self._limit_of(conversion.refusal)
            message = _REFUSALS[conversion.refusal].format(count=conversion.span_count, limit=limit)
            if conversion.refusal == "TOO_MANY_ATTRIBUTES" and conversion.attribute_count <= limit:
                message = _TOO_MANY_VALUES  # the pairs are within theirs: their values are not
            raise unavailable(conversion.refusal, message)
        return conversion, queued, data

    async def _admit(self, caller: _Caller) -> None:
        """Admission on its own, once: 429 or 503 unless the request may go on."""
        if caller.admitted:
            return
        depth = await self.admission.admit(self.admission.checks(caller.project_id, caller.ip))
        self._admitted(caller, depth)
        if self.archive is not None and self.archive.degraded and depth >= self.archive_headroom:
            raise unavailable(
                "ARCHIVE_DEGRADED_NO_HEADROOM",
                "the request archive cannot be written and the project's queue is half full",
            )

    def _admitted(self, caller: _Caller, depth: int) -> None:
        """Note an admission, with the project's queue depth it saw."""
        caller.admitted = True
        self.metrics.queue_depth.set((caller.project_id,), depth)

    def _limit_of(self, refusal: str) -> int:
        if refusal == "TOO_MANY_SPANS":
            return self.limits.max_spans
        return self.limits.max_attributes

    async def _enqueue(
        self, caller: _Caller, item: QueuedRequest, record: RecordArgs | None
    ) -> None:
        """XADD (and the request's record), admitting the caller in the same script when
        not admitted yet."""
        started = time.perf_counter()
        if caller.admitted:
            await self.queue.enqueue(item, record)
        else:
            checks = self.admission.checks(caller.project_id, caller.ip)
            self._admitted(caller, await self.queue.admit_and_enqueue(item, checks, record))
        caller.recorded = record is not None
        self.metrics.enqueue_seconds.observe(time.perf_counter() - started)
