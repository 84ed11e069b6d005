"""Costs: the client's, the operator's price file, then the genai-prices table."""

from __future__ import annotations

import pytest

from genai import GenAIView
from genai.prices import PriceFileError, Pricer, parse_price_file

PRICES = """
# private models first
[[model]]
match = "acme-(small|large)"
provider = "acme"
input_per_mtok = 1.0
output_per_mtok = 4.0
cache_read_per_mtok = 0.1

[[model]]
match = "gpt-4o"
input_per_mtok = 100
output_per_mtok = 200
"""


def _llm(model: str | None, provider: str | None = None, **usage: object) -> GenAIView:
    return GenAIView(type="llm", model=model, provider=provider, **usage)  # type: ignore[arg-type]


def test_the_client_cost_wins() -> None:
    """A cost the client sent is the cost, whatever the prices say."""
    pricer = Pricer(parse_price_file(PRICES))
    view = _llm("gpt-4o", input_tokens=10**6, client_cost=0.5)
    assert pricer.cost(view) == (0.5, "client")


def test_the_price_file_matches_whole_names_and_providers() -> None:
    """A price applies to a model its pattern matches wholly (and its provider, when it
    names one); cached input tokens are priced at their own rate."""
    pricer = Pricer(parse_price_file(PRICES))
    cost, source = pricer.cost(
        _llm("acme-large", "acme", input_tokens=1_000_000, output_tokens=500_000,
             cache_read_tokens=400_000)
    )  # fmt: skip
    assert source == "price-file"
    assert cost == pytest.approx(0.6 * 1.0 + 0.4 * 0.1 + 0.5 * 4.0)
    assert pricer.cost(_llm("acme-large", "other", input_tokens=10))[1] != "price-file"
    assert pricer.cost(_llm("acme-larger", "acme", input_tokens=10)) == (None, None)
    assert pricer.cost(_llm("gpt-4o", input_tokens=10**6)) == (100.0, "price-file")


def test_the_table_prices_known_models() -> None:
    """Without a price file the genai-prices table prices a known model, the cached
    tokens at their own (lower) rate; an unknown model has no cost, not 0."""
    pricer = Pricer()
    plain, source = pricer.cost(_llm("gpt-4o", "openai", input_tokens=1000, output_tokens=100))
    cached, _ = pricer.cost(
        _llm("gpt-4o", "openai", input_tokens=1000, output_tokens=100, cache_read_tokens=800)
    )
    assert source == "price-table"
    assert plain is not None and cached is not None and 0 < cached < plain
    assert pricer.cost(_llm("no-such-model-anywhere", input_tokens=10)) == (None, None)
    assert pricer.cost(_llm("gpt-4o")) == (None, None)  # no tokens: no cost


def test_the_table_agrees_with_its_own_calculation() -> None:
    """The rates applied here give what genai-prices' own calculation gives."""
    import genai_prices

    usage = {"input_tokens": 12_345, "output_tokens": 678, "cache_read_tokens": 2_000}
    expected = genai_prices.calc_price(
        genai_prices.Usage(**usage), "claude-3-5-sonnet-20241022", provider_id="anthropic"
    ).total_price
    cost, _ = Pricer().cost(_llm("claude-3-5-sonnet-20241022", "anthropic", **usage))
    assert cost == pytest.approx(float(expected))


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[[model]]\nmatch = 'a'\ninput_per_mtok = 1\noutput_per_mtok = = 2\n", 4, "line 4"),
        ("\n\n[[model]]\nmatch = '(unclosed'\ninput_per_mtok = 1\noutput_per_mtok = 2\n", 4,
         "regular expression"),
        ("[[model]]\nmatch = 'a'\ninput_per_mtok = 1\noutput_per_mtok = 2\n\n"
         "[[model]]\nmatch = 'b'\ninput_per_mtok = 1\n", 6, "needs output_per_mtok"),
        ("[[model]]\nmatch = 'a'\ninput_per_mtok = -1\noutput_per_mtok = 2\n", 3, "0 or more"),
        ("[[model]]\nmatch = 'a'\ninput_per_mtok = 1\noutput_per_mtok = 2\ninput = 3\n", 5,
         "unknown key 'input'"),
        ("[[model]]\nmatch = 'a'\ninput_per_mtok = 'cheap'\noutput_per_mtok = 2\n", 3,
         "must be a number"),
        ("model_price = 3\n", 1, "unknown key"),
    ],
)  # fmt: skip
def test_a_bad_price_file_names_its_line(text: str, line: int, words: str) -> None:
    """Each mistake in a price file is refused with the line it is on."""
    with pytest.raises(PriceFileError) as refused:
        parse_price_file(text)
    assert f"line {line}" in str(refused.value)
    assert words in str(refused.value)
