"""A feature that has a page and a JSON form answers both from one view: the request is
parsed and read once, into one typed context, which the template renders or which
becomes the contract's JSON. A new parameter is parsed in `context` and reaches both."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from quart import Response
from quart.typing import ResponseReturnValue

from service.web import json_response

Context = TypeVar("Context")


class View(ABC, Generic[Context]):
    """`html` and `json` are the routes; a subclass says how to read the request
    (`context`, given the route's parts) and how each form shows it."""

    @abstractmethod
    async def context(self, *parts: Any, **named: Any) -> Context:
        """What the request asks, read from the stores."""

    @abstractmethod
    async def page(self, context: Context) -> ResponseReturnValue:
        """The context as a page (which may read what only the page shows)."""

    @abstractmethod
    async def data(self, context: Context) -> Any:
        """The context as the contract's JSON (which may read what only it holds)."""

    async def html(self, **parts: str) -> ResponseReturnValue:
        """The page's route."""
        return await self.page(await self.context(**parts))

    async def json(self, **parts: str) -> Response:
        """The JSON route under /api/v1."""
        return json_response(await self.data(await self.context(**parts)))
