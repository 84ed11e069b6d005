"""Span text as HTML for people: Markdown, JSON pretty-printed and foldable, long text
folded, every newline kept.

Span text is written by strangers. It reaches HTML only escaped (markupsafe) or
through markdown-it-py with raw HTML off, images off and links limited to http and
https (a `javascript:` or `data:` link stays plain text); a link opens nothing of
the dashboard's (`rel="noopener noreferrer nofollow"`). Nothing here is marked safe
that did not go through one of those two.
"""

from __future__ import annotations

from typing import Any

import orjson
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup

FOLD_CHARS = 400  # a value longer than this is folded, with "Show all"
MAX_PRETTY_CHARS = 1_000_000  # longer JSON is shown as sent: indenting it costs too much
#: A text is shown up to this many characters (a span may carry a 10 MB attribute: a page
#: holding it whole would weigh that much); the rest is in the trace's JSON.
SHOWN_CHARS = 1_000_000
#: Longer text is shown as sent, not rendered as Markdown (which takes seconds a MB).
MAX_MARKDOWN_CHARS = 200_000
_SAFE_SCHEMES = ("http://", "https://")


def _safe_link(url: str) -> bool:
    """Only http and https links are links; markdown-it has normalised `url` already."""
    return url.strip().lower().startswith(_SAFE_SCHEMES)


def _link_open(
    renderer: RendererHTML, tokens: list[Token], at: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[at].attrSet("rel", "noopener noreferrer nofollow")
    return renderer.renderToken(tokens, at, options, env)


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable(["table", "strikethrough"])  # GitHub's, which models write
    md.disable("image")  # an image would be fetched as the page opens
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _markdown()


def markdown_html(text: str) -> Markup:
    """`text` as Markdown, rendered safely."""
    return Markup(_MD.render(text))  # raw HTML is off, links are checked


def json_of(text: str) -> Any:
    """The JSON object or array `text` holds, or None when it holds none (or one
    nested too deep to be written again, which is shown as its text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(stripped) > MAX_PRETTY_CHARS:
        return None
    try:
        value = orjson.loads(stripped)
        orjson.dumps(value)  # nested deeper than orjson writes (254 levels): a text
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    return value if isinstance(value, dict | list) else None


def _summary(value: dict[str, Any] | list[Any]) -> str:
    if isinstance(value, dict):
        return f"JSON object, {len(value):,} key{'' if len(value) == 1 else 's'}"
    return f"JSON array, {len(value):,} item{'' if len(value) == 1 else 's'}"


def json_html(value: dict[str, Any] | list[Any]) -> Markup:
    """A JSON object or array, indented, folded under a summary (open)."""
    pretty = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    inner = Markup('<pre class="json">{}</pre>').format(pretty)
    return folded(
        Markup('<details class="json" open><summary>{}</summary>{}</details>').format(
            _summary(value), inner
        ),
        len(pretty),
    )


def folded(html: Markup, chars: int) -> Markup:
    """`html` folded to a few lines when its text is long, with a "Show all" button."""
    if chars <= FOLD_CHARS:
        return html
    return Markup(
        '<div class="fold folded">{}</div><button type="button" class="show-all" '
        'aria-expanded="false">Show all ({} characters)</button>'
    ).format(html, f"{chars:,}")


def plain_html(text: str) -> Markup:
    """Text as it was sent: newlines kept, long lines wrapped, folded when long; its
    first SHOWN_CHARS characters when longer, saying so."""
    if len(text) <= SHOWN_CHARS:
        return folded(Markup('<div class="text">{}</div>').format(text), len(text))
    return folded(
        Markup(
            '<div class="text">{}</div><p class="muted cut">… the first {} of {} characters '
            "(the whole text: the trace's JSON)</p>"
        ).format(text[:SHOWN_CHARS], f"{SHOWN_CHARS:,}", f"{len(text):,}"),
        SHOWN_CHARS,
    )


def value_html(text: str) -> Markup:
    """An attribute's string: JSON indented and foldable, other text as sent."""
    value = json_of(text)
    return plain_html(text) if value is None else json_html(value)


def content_html(text: str) -> Markup:
    """A message's content as people read it (JSON indented, other text as Markdown),
    and as it was sent, for the raw view; both folded when long."""
    value = json_of(text)
    raw = plain_html(text)
    if value is not None:
        shown = json_html(value)
    elif len(text) <= MAX_MARKDOWN_CHARS:
        shown = folded(
            Markup('<div class="markdown">{}</div>').format(markdown_html(text)), len(text)
        )
    else:
        shown = raw
    return Markup('<div class="rendered">{}</div><div class="raw">{}</div>').format(shown, raw)


def arguments_html(arguments: str | None) -> Markup:
    """A tool call's arguments (JSON text): indented when they parse."""
    if arguments is None:
        return Markup("")
    value = json_of(arguments)
    if value is None:
        return Markup("<code>{}</code>").format(arguments)
    return json_html(value)
