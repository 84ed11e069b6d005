"""The gateway's one error type; rendered in exactly one place (collector.answers)."""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError

#: Retry-After (s) when the queue store is short of memory.
MEMORY_RETRY_AFTER_S = 5


class GatewayError(Exception):
    """A request the gateway answers with an error status.

    `code` and `message` fill the documented `error` object; `retry_after` (seconds) is set
    only for the codes docs/api.md gives it to, and adds the Retry-After header. `body_error`
    marks failures to read, decode or parse the body: on OTLP-form requests those are
    answered with an OTLP body instead. `bare` answers with no error object at all
    (a body over the limit that came without a Content-Length). `otlp_form` is the form
    of the request's answers, which the ingest pipeline chose for it and gives its errors
    on their way to the handler (collector/answers.render_error).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        retry_after: int | None = None,
        body_error: bool = False,
        bare: bool = False,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.body_error = body_error
        self.bare = bare
        self.otlp_form = False


def unauthorized(message: str) -> GatewayError:
    """401 UNAUTHORIZED."""
    return GatewayError(401, "UNAUTHORIZED", message)


def unavailable(code: str, message: str, retry_after: int | None = None) -> GatewayError:
    """503 with one of the capacity or availability codes of docs/api.md."""
    return GatewayError(503, code, message, retry_after=retry_after)


def redis_refusal(error: BaseException, otherwise: str, message: str) -> GatewayError:
    """The 503 for a Redis failure: out of memory (also inside a script, where Redis
    reports it as a script error), unreachable or silent, else `otherwise`."""
    if isinstance(error, OutOfMemoryError) or "OOM command not allowed" in str(error):
        return unavailable(
            "REDIS_MEMORY_HIGH", "the queue store is out of memory", MEMORY_RETRY_AFTER_S
        )
    if isinstance(error, TimeoutError | RedisConnectionError | RedisTimeoutError):
        return unavailable("ENQUEUE_UNCONFIRMED", "the queue store is unreachable")
    return unavailable(otherwise, message)
