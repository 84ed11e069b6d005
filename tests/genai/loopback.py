"""An HTTP server on a loopback port, serving in a thread while its context is open."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Self


class LoopbackServer:
    """Serves `server` in a daemon thread from entering the context to leaving it."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._http = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        """`http://host:port` of the server."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
