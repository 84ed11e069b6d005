"""Where sign-in may send a browser back to: a path on this site, as browsers read it.

A `next` value is judged the way a browser will read the Location it becomes (the
WHATWG URL rules), not as it looks: browsers remove tabs and newlines anywhere in a
URL and read a backslash as a slash, so `/<TAB>/evil.example` and `/\\evil.example` both
lead to another host. Any control character or backslash disqualifies a value; what is
left must be an absolute path (one leading slash) with no scheme and no host, and is
percent-encoded where a Location header needs it.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

HOME = "/"
# Kept as they are: the separators of a path and query, and `%` (already encoded text).
_KEPT = "/?#&=%+:;@,!$'()*-._~[]"


def has_control(text: str) -> bool:
    """Whether `text` holds a C0 control character or DEL (which no header may carry)."""
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def same_site_path(target: str | None) -> str:
    """`target` (percent-encoded where needed) when browsers read it as a path on this
    site, else `/`: never an open redirect."""
    if not target or has_control(target) or "\\" in target:
        return HOME
    if not target.startswith("/") or target.startswith("//"):
        return HOME
    encoded = quote(target, safe=_KEPT)
    parts = urlsplit(encoded)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return HOME
    return encoded
