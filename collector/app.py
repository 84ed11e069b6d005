"""The collector app factory: routes, error rendering, and the clients' lifespan."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException

from collector import queue as span_queue
from collector.admission import Admission
from collector.answers import render_error
from collector.archive import Archive
from collector.errors import GatewayError
from collector.health import Health
from collector.inflight import InflightBudget
from collector.ingest import Ingest
from collector.ingestion_record import RequestRecorder
from collector.memory_watch import MemoryWatch
from collector.metrics import Metrics
from collector.request_tags import RequestTags
from proto_json import Limits
from service.cors import install_cors
from service.framing import FramingGuard
from service.settings import Settings
from service.web import http_exception_parts, install_lifespan, json_response
from storage.database import Database
from storage.identity import IdentityStore
from storage.verifier import KeyVerifier

log = logging.getLogger("spangate.collector")
INGEST_ROUTES = ("/v1/spans", "/v1/spans/batch", "/v1/traces", "/v1/otlp/v1/traces")


def _http_error(error: HTTPException) -> Response:
    status, code, message, headers = http_exception_parts(error)
    return json_response({"error": {"code": code, "message": message}}, status, headers)


def create_app(settings: Settings) -> Quart:
    """The gateway; `settings.redis_url` must name the queue store."""
    if settings.redis_url is None:
        raise ValueError("the collector needs a Redis URL (SPANGATE_REDIS_URL)")
    app = Quart("spangate.collector", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["BODY_TIMEOUT"] = settings.body_timeout_s
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = True
    db = Database(settings.database_url, settings.database_statement_timeout_ms)
    verifier = KeyVerifier(IdentityStore(db).identity_for_hash)
    timeout_s = settings.enqueue_timeout_ms / 1000
    queue = span_queue.SpanQueue(
        span_queue.connect(settings.redis_url, timeout_s), timeout_s, settings.redis_replica_acks
    )
    limits = Limits(settings.max_spans_per_request, settings.max_attributes_per_request)
    admission = Admission(
        queue.client,
        settings.rate_limit_project_rps,
        settings.rate_limit_ip_rps,
        settings.queue_max_spans_per_project,
    )
    memory = MemoryWatch(queue.client, settings.redis_memory_high_ratio)
    inflight = InflightBudget(settings.max_inflight_bytes)
    metrics = Metrics()
    archive = Archive(settings.archive_dir) if settings.archive_dir is not None else None
    metrics.watch(lambda: inflight.used, lambda: memory.used_ratio)
    queue.client.node_failed = lambda node: metrics.redis_node_errors.inc((node,))
    recorder = None
    if settings.ingestion_record:
        recorder = RequestRecorder(queue.client, lambda n: metrics.records_dropped.inc((), n))
    ingest = Ingest(
        limits,
        settings.max_body_bytes,
        verifier,
        queue,
        admission,
        inflight,
        memory,
        metrics,
        settings.trusted_proxies,
        archive,
        settings.queue_max_spans_per_project,
        recorder,
    )
    health = Health(queue, db)
    closers = [queue.close] if recorder is None else [recorder.close, queue.close]
    if archive is not None:
        app.before_serving(_start_archive(archive))
        closers.append(lambda: asyncio.to_thread(archive.stop))
    install_lifespan(app, db, log, *closers, background=[memory])

    for path, handler in zip(
        INGEST_ROUTES, (ingest.spans, ingest.spans_batch, ingest.traces, ingest.otlp), strict=True
    ):
        app.add_url_rule(path, view_func=handler, methods=["POST"], endpoint=path)
    app.add_url_rule("/health", view_func=health.health, methods=["GET"])
    app.add_url_rule("/health/live", view_func=health.live, methods=["GET"])
    app.add_url_rule("/health/ready", view_func=health.ready, methods=["GET"])
    app.add_url_rule("/health/ingest", view_func=health.ingest, methods=["GET"])
    app.add_url_rule("/metrics", view_func=metrics.endpoint, methods=["GET"])
    _install_handlers(app, metrics)
    install_cors(app, settings.cors_allowed_origins)
    routes = {rule.rule: frozenset(rule.methods or ()) for rule in app.url_map.iter_rules()}
    app.asgi_app = RequestTags(app.asgi_app, metrics, routes)  # type: ignore[method-assign,assignment]
    app.asgi_app = FramingGuard(app.asgi_app, "SERIALIZATION_ERROR")  # type: ignore[method-assign,assignment]
    return app


def _start_archive(archive: Archive) -> Callable[[], Awaitable[None]]:
    async def start() -> None:
        archive.start()

    return start


def _install_handlers(app: Quart, metrics: Metrics) -> None:
    """The rendering of every error (request ids and counts: collector/request_tags.py)."""

    @app.errorhandler(GatewayError)
    async def gateway_error(error: GatewayError) -> Response:
        metrics.refusals.inc((error.code,))
        log.log(
            logging.WARNING if error.status >= 500 else logging.DEBUG,
            "request refused",
            extra={
                "status": error.status,
                "code": error.code,
                "reason": error.message,
                "route": request.path,
            },
        )
        return render_error(error)

    @app.errorhandler(HTTPException)
    async def http_error(error: HTTPException) -> Response:
        return _http_error(error)

    @app.errorhandler(Exception)
    async def internal_error(error: Exception) -> Response:
        log.exception("request failed")
        return render_error(
            GatewayError(500, "INTERNAL_ERROR", "the gateway could not complete the request")
        )
