"""How times and durations read on the pages."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

from markupsafe import Markup, escape

from genai.prices import settled


def cut(text: str, chars: int) -> str:
    """A text of at most `chars` characters: one longer is cut, ending in "…" (so that
    the cut does not read as the whole)."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def utc_text(value: int | str) -> str:
    """A Unix nanosecond time as UTC, to the microsecond."""
    ns = int(value)
    moment = datetime.fromtimestamp(ns // 10**9, UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{ns % 10**9 // 1000:06d} UTC"


def nanos(value: int | str | None) -> Markup:
    """A Unix nanosecond time as a `<time>` element: UTC to the second in its text and
    to the microsecond in its title; the page's script turns the text into local time
    and "… ago" (UTC stays on hover)."""
    if value is None or value == "":
        return Markup("")
    ms = int(value) // 10**6
    exact = utc_text(value)
    return Markup('<time data-ms="{}" title="{}">{}</time>').format(ms, exact, f"{exact[:19]} UTC")


def iso(value: str | None) -> Markup | str:
    """An ISO 8601 UTC time (as the stores write `created_at`) as `nanos` shows a time;
    text that is no such time, as it is."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int(moment.timestamp())
    return nanos(seconds * 10**9 + moment.microsecond * 1000)


#: A model name's date, as providers suffix them: gpt-4o-2024-08-06, claude-3-5-sonnet-20241022.
_DATED = re.compile(r"(.+?)(-\d{4}-\d{2}-\d{2}|-\d{8})$")


def undated(model: str) -> str:
    """A model's name without its date (`gpt-4o-mini` of `gpt-4o-mini-2024-07-18`)."""
    dated = _DATED.fullmatch(model)
    return dated.group(1) if dated else model


def model_html(model: str, after: str = "") -> Markup:
    """A model's name in a narrow column: its name and its date each on one line, the
    line broken, when it must be, before the date alone (not at each hyphen); `after`
    (a list's comma) in the last part, never on a line of its own."""
    dated = _DATED.fullmatch(model)
    parts = [*dated.groups()] if dated else [model]
    parts[-1] += after
    return Markup('<span class="model" title="{}">{}</span>').format(
        model, Markup("<wbr>").join(Markup('<span class="part">{}</span>').format(p) for p in parts)
    )


def millis(value: float | None) -> str:
    """A duration for people: 0.042 ms, 12.3 ms, 4.56 s, 2 min 2 s, 3 h 12 min, 2 d 18 h."""
    if value is None:
        return "not ended"
    if value == 0:
        return "0 ms"
    if value < 0:  # its end was sent earlier than its start
        return f"ends {millis(-value)} before its start"
    if value >= 60_000:
        s = round(value / 1000)
        if s < 3600:
            return f"{s // 60} min {s % 60} s"
        if s < 86_400:
            return f"{s // 3600} h {s % 3600 // 60} min"
        return f"{s // 86_400} d {s % 86_400 // 3600} h"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.3f} ms" if value < 1 else f"{value:.1f} ms"


def axis_tick(value: float, last: float) -> str:
    """A label of the waterfall's time axis, in the unit that `last` (the axis's last
    label) reads in, so that its labels read alike: 0 s, 30 s, 1 min 0 s, 1 min 30 s,
    where `millis` writes 30.00 s beside 1 min 0 s. Halves round up, as the waterfall's
    script writes one (dashboard/static/waterfall.js), whose labels must be these."""
    last_s = _half_up(last / 1000)
    if last_s >= 60:
        s = _half_up(value / 1000)
        for unit, size, smaller, small_size in _AXIS_UNITS:
            if last_s >= size:
                whole, rest = divmod(s, size)
                part = f"{rest // small_size} {smaller}"
                return f"{whole} {unit} {part}" if whole else part
    if last >= 1000:
        return f"{_fixed(value / 1000, 2)} s"
    return f"{_fixed(value, 3)} ms" if last < 1 else f"{_fixed(value, 1)} ms"


def _half_up(value: float) -> int:
    """`value` to the nearest whole number, halves up (JavaScript's `Math.round`)."""
    return math.floor(value + 0.5)


def _fixed(value: float, places: int) -> str:
    """`value` with `places` decimals, halves of its exact value up (JavaScript's
    `toFixed`; Python's format rounds them to even: 1.125 reads 1.12 there)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


#: The axis's units past a minute, largest first: each with the unit below it.
_AXIS_UNITS = (("d", 86_400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1))


#: Where an id breaks best when its cell is too narrow for it: after its separators.
_BREAKS_AFTER = re.compile(r"([-@._/:])(?=.)")


def breakable(value: str | None) -> Markup:
    """An id (a user's, a session's) as HTML that breaks after its separators when its
    cell is too narrow (`carol@` `acme.io`, not `carol@acme.i` `o`); "" for None."""
    return Markup(_BREAKS_AFTER.sub(r"\1<wbr>", str(escape(value or ""))))


def count(value: int | None) -> str:
    """A token count with thousands separators; "—" when unknown."""
    return "—" if value is None else f"{value:,}"


def usd(value: float | None) -> str:
    """A cost in US dollars: to the cent from a dollar up, to four significant places
    below it, written out; "—" when unknown."""
    if value is None:
        return "—"
    value = settled(value)
    if value == 0:
        return "$0"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    # four significant places, written out (never 4.725e-05), at least to the cent
    places = min(3 - math.floor(math.log10(abs(value))), 20)
    written = f"{value:.{places}f}".rstrip("0")
    return "$" + written + "0" * max(0, 2 - len(written.partition(".")[2]))


#: Why a cost shows "—" (the title of the dash) where tokens were reported.
NO_COST = (
    "No cost known: the span sent none, and neither the operator's price file "
    "(SPANGATE_PRICES_FILE) nor the genai-prices table has a price for its model"
)
#: Why it does where none were: nothing to price (a failed call reports none).
NO_TOKENS = (
    "No cost known: the span sent none, and reported no token counts to price (a call "
    "that failed or was cancelled reports none)"
)


def no_cost_of(input_tokens: int | None, output_tokens: int | None) -> str:
    """Why a cost of these tokens shows "—"."""
    return NO_TOKENS if input_tokens is None and output_tokens is None else NO_COST
