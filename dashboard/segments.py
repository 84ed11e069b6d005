"""A route part holding any text from span data (a session id), linked and read back.

Span text may hold `/`, `?`, `#`, `%` or be `..`: put in a link as it is, a session id
`x/../../settings` makes the browser resolve the link to the settings page. In a link,
`segment` percent-encodes everything but letters, digits and `-._~`, so the text stays
one path segment. A browser still resolves a segment that is exactly `.` or `..` (also
when written `%2E`), so those (and the empty text) are written behind a `~`, as is any
text that would read back as one of them; everything else is linked as itself.

The server decodes the path before routing (`%2F` becomes `/`), so the route's part
matches across slashes; it must be the last part of its rule.
"""

from __future__ import annotations

from urllib.parse import quote

from werkzeug.routing import BaseConverter

_ESCAPE = "~"
_DOTS = ("", ".", "..")


def _needs_escape(text: str) -> bool:
    """Whether `text` is a dot segment (or empty), or would read back as one."""
    return text in _DOTS or (text.startswith(_ESCAPE) and _needs_escape(text[1:]))


class SegmentConverter(BaseConverter):
    """`<segment:name>`: any text, one segment in links, the rest of the path in routes."""

    part_isolating = False
    regex = "(?s:.+)"  # a newline too: span text may hold one
    weight = 200

    def to_url(self, value: object) -> str:
        text = str(value)
        return quote(_ESCAPE + text if _needs_escape(text) else text, safe="")

    def to_python(self, value: str) -> str:
        if value.startswith(_ESCAPE) and _needs_escape(value[1:]):
            return value[1:]
        return value
