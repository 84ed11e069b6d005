"""A model call's cost in USD, from its tokens: the operator's prices, then a table.

The order: a cost the client sent wins (the view's client_cost); else the first
`[[model]]` of the operator's price file whose `match` (and `provider`, when given)
matches the whole model name; else the `genai-prices` package's table, by provider and
model. No price known: None, never 0. Input tokens include the cached ones (the OTel
rule), which are priced at their own rates when the price has them.

The table's own price calculation costs about 0.6 ms a call; a worker prices every
model call it stores, so the rates of each (provider, model) are looked up once and
applied here. A model whose table price is tiered by size keeps the table's
calculation.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol, overload

import genai_prices
from genai_prices import data_snapshot

from genai.view import GenAIView


@overload
def settled(cost: float) -> float: ...
@overload
def settled(cost: float | None) -> float | None: ...
def settled(cost: float | None) -> float | None:
    """A cost, or a sum of them, to twelve significant places: a float sum's last bits
    depend on the order it was added in (0.00058764 came out as 0.0005876400000000001),
    and equal costs should read alike wherever they are shown."""
    return None if cost is None else float(f"{cost:.12g}")


def least_settled_at(bound: float) -> float:
    """The least cost that `settled` makes `bound` or more (costs are stored as summed,
    shown settled): a bound on the costs shown, as a bound on the costs stored."""
    if not math.isfinite(bound) or bound <= 0:
        return bound
    low, high = bound / 2, bound * 2  # settled(low) < bound <= settled(high)
    while True:  # bisect the floats between them, by their order
        middle = (low + high) / 2
        if middle in (low, high):
            return high
        if settled(middle) >= bound:
            high = middle
        else:
            low = middle


_RATES = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok")
_KEYS = frozenset(("match", "provider", *_RATES))
_MAX_CACHED = 4096


class Usage(Protocol):
    """What a price is of: a GenAIView, or a stored span row with its view's facts."""

    @property
    def model(self) -> str | None: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cache_read_tokens(self) -> int | None: ...
    @property
    def cache_write_tokens(self) -> int | None: ...


class PriceFileError(ValueError):
    """The price file cannot be used; the message names the line."""


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens; a cache rate of None is the input rate."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, view: Usage) -> float | None:
        """The tokens at these rates; None when it reports no token."""
        if view.input_tokens is None and view.output_tokens is None:
            return None
        read, write = view.cache_read_tokens or 0, view.cache_write_tokens or 0
        fresh = max((view.input_tokens or 0) - read - write, 0)
        dollars = (
            fresh * self.input
            + read * (self.input if self.cache_read is None else self.cache_read)
            + write * (self.input if self.cache_write is None else self.cache_write)
            + (view.output_tokens or 0) * self.output
        )
        return dollars / 1_000_000


@dataclass(frozen=True, slots=True)
class OperatorPrice:
    """One `[[model]]` of the price file."""

    match: re.Pattern[str]
    provider: re.Pattern[str] | None
    rates: Rates
    line: int

    def applies(self, model: str, provider: str | None) -> bool:
        """Whether the model (and provider, when this price names one) match wholly."""
        if self.match.fullmatch(model) is None:
            return False
        return self.provider is None or (
            provider is not None and self.provider.fullmatch(provider) is not None
        )


def _header_lines(text: str) -> list[int]:
    return [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if re.fullmatch(r"\s*\[\[\s*model\s*\]\]\s*(#.*)?", line)
    ]


class _Entry:
    """One [[model]] table: its values, and the text's lines from its header on."""

    def __init__(self, values: Any, header: int, lines: list[str]) -> None:
        self.values = values
        self.header = header
        self.lines = lines

    def line(self, key: str) -> int:
        """The line `key` is set on in this table (the header's, if none is found)."""
        pattern = re.compile(rf"\s*{re.escape(key)}\s*=")
        for number in range(self.header + 1, len(self.lines) + 1):
            text = self.lines[number - 1]
            if re.fullmatch(r"\s*\[.*", text):
                break
            if pattern.match(text):
                return number
        return self.header


def _rate(entry: _Entry, key: str, required: bool) -> float | None:
    value = entry.values.get(key)
    line = entry.line(key)
    if value is None:
        if required:
            raise PriceFileError(f"line {entry.header}: [[model]] needs {key}")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PriceFileError(f"line {line}: {key} must be a number")
    if value < 0:
        raise PriceFileError(f"line {line}: {key} must be 0 or more")
    return float(value)


def _pattern(entry: _Entry, key: str, flags: int = 0) -> re.Pattern[str]:
    value = entry.values.get(key)
    line = entry.line(key)
    if not isinstance(value, str) or not value:
        raise PriceFileError(f"line {line}: {key} must be a non-empty string")
    try:
        return re.compile(value, flags)
    except re.error as e:
        raise PriceFileError(f"line {line}: {key} is not a regular expression: {e}") from None


def _price(entry: _Entry) -> OperatorPrice:
    if not isinstance(entry.values, dict):
        raise PriceFileError(f"line {entry.header}: [[model]] must be a table")
    unknown = sorted(set(entry.values) - _KEYS)
    if unknown:
        line = entry.line(unknown[0])
        raise PriceFileError(f"line {line}: unknown key {unknown[0]!r} in [[model]]")
    match = _pattern(entry, "match")
    provider = _pattern(entry, "provider", re.IGNORECASE) if "provider" in entry.values else None
    rates = [_rate(entry, key, key in _RATES[:2]) for key in _RATES]
    return OperatorPrice(
        match, provider, Rates(rates[0] or 0.0, rates[1] or 0.0, rates[2], rates[3]), entry.header
    )


def parse_price_file(text: str) -> tuple[OperatorPrice, ...]:
    """The prices of a price file's text, in file order; PriceFileError naming the line
    of what is wrong."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PriceFileError(str(e)) from None  # its text says "(at line N, column M)"
    unknown = sorted(set(document) - {"model"})
    if unknown:
        line = next(
            (n for n, t in enumerate(text.splitlines(), 1) if t.strip().startswith(unknown[0])),
            1,
        )
        raise PriceFileError(f"line {line}: unknown key {unknown[0]!r}; prices go in [[model]]")
    entries = document.get("model", [])
    if not isinstance(entries, list):
        raise PriceFileError("line 1: model must be written as [[model]] tables")
    headers, lines = _header_lines(text), text.splitlines()
    return tuple(
        _price(_Entry(entry, headers[at] if at < len(headers) else 1, lines))
        for at, entry in enumerate(entries)
    )


def read_price_file(path: str) -> tuple[OperatorPrice, ...]:
    """`parse_price_file` of a file; PriceFileError naming the file (and the line)."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as e:
        raise PriceFileError(f"{path}: cannot be read: {e}") from None
    try:
        return parse_price_file(text)
    except PriceFileError as e:
        raise PriceFileError(f"{path}: {e}") from None


#: What the table knows of a (provider, model): rates, a tiered price to calculate, or
#: nothing (None).
_TableEntry = tuple[Any, Any, Any] | Rates | None


class Pricer:
    """Costs of views: the client's, the operator's prices, then the table."""

    def __init__(self, operator: tuple[OperatorPrice, ...] = ()) -> None:
        self.operator = operator
        self._table: dict[tuple[str | None, str], _TableEntry] = {}

    def cost(self, view: GenAIView) -> tuple[float | None, str | None]:
        """The view's cost in USD and where it came from (`client`, `price-file`,
        `price-table`), or (None, None)."""
        if view.client_cost is not None:
            return view.client_cost, "client"
        return self.usage_cost(view)

    def usage_cost(self, view: Usage) -> tuple[float | None, str | None]:
        """`cost` of what a view reports, but for a cost the client sent (the worker
        prices the rows the C row builder filled with their view's facts)."""
        if view.model is None or (view.input_tokens is None and view.output_tokens is None):
            return None, None
        for price in self.operator:
            if price.applies(view.model, view.provider):
                return price.rates.cost(view), "price-file"
        found = self._table_cost(view)
        return (found, "price-table") if found is not None else (None, None)

    def _table_cost(self, view: Usage) -> float | None:
        assert view.model is not None
        key = (view.provider, view.model)
        if key not in self._table:
            if len(self._table) >= _MAX_CACHED:
                self._table.clear()
            self._table[key] = _table_entry(view.provider, view.model)
        entry = self._table[key]
        if entry is None:
            return None
        if isinstance(entry, Rates):
            return entry.cost(view)
        model, provider, when = entry
        usage = genai_prices.Usage(
            input_tokens=view.input_tokens or 0,
            output_tokens=view.output_tokens or 0,
            cache_read_tokens=view.cache_read_tokens or 0,
            cache_write_tokens=view.cache_write_tokens or 0,
        )
        return float(model.calc_price(usage, provider, genai_request_timestamp=when).total_price)


def _provider_id(provider: str | None) -> str | None:
    """A convention's provider name as the table's id: `openai.chat` and `OpenAI` are
    `openai`, `gcp.gemini` is `google`, `aws.bedrock` is `aws`."""
    if provider is None:
        return None
    head = provider.lower().split(".")[0]
    return {"gcp": "google", "az": "azure", "azure_openai": "azure"}.get(head, head)


def _table_entry(provider: str | None, model: str) -> _TableEntry:
    snapshot = data_snapshot.get_snapshot()
    when = datetime.now(UTC)
    found = None
    for provider_id in dict.fromkeys((_provider_id(provider), None)):
        try:
            found = snapshot.find_provider_model(model, None, provider_id, None)
            break
        except LookupError:
            continue
    if found is None:
        return None
    table_provider, table_model = found
    prices = table_model.get_prices(when)
    rates = (prices.input_mtok, prices.output_mtok, prices.cache_read_mtok, prices.cache_write_mtok)
    if rates[0] is None and rates[1] is None:
        return None
    plain = [rate for rate in rates if isinstance(rate, Decimal)]
    if len(plain) < sum(rate is not None for rate in rates):  # a tiered rate
        return (table_model, table_provider, when)
    flat = [float(rate) if isinstance(rate, Decimal) else None for rate in rates]
    return Rates(flat[0] or 0.0, flat[1] or 0.0, flat[2], flat[3])
