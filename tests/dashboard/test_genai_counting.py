"""A framework's model call over the provider call it makes, on the dashboard: the
usage both report is counted once, everywhere the dashboard adds it up."""

from __future__ import annotations

from typing import Any

import orjson

from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

TRACE = "7c" * 16
AGENT, WRAPPER, PROVIDER_CALL, OTHER_CALL = "a" * 16, "1" * 16, "2" * 16, "3" * 16


def _run() -> list[dict[str, Any]]:
    """An agent whose LangChain-style LLM span (OpenInference) wraps the OpenAI call an
    OTel GenAI instrumentation records below it, both reporting 100 + 20 tokens; and a
    call of its own of 50 + 5."""
    base = {
        "traceId": TRACE,
        "startTime": "2026-11-22T10:00:00Z",
        "endTime": "2026-11-22T10:00:09Z",
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
    }
    return [
        span(**base, spanId=AGENT, name="invoke_agent support",
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                         "session.id": "s-wrapped"}),
        span(**base, spanId=WRAPPER, parentSpanId=AGENT, name="ChatOpenAI",
             attributes={"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                         "llm.token_count.prompt": 100, "llm.token_count.completion": 20}),
        span(**base, spanId=PROVIDER_CALL, parentSpanId=WRAPPER, name="chat gpt-4o",
             attributes={**chat, "gen_ai.response.model": "gpt-4o-2024-08-06",
                         "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20}),
        span(**base, spanId=OTHER_CALL, parentSpanId=AGENT, name="chat gpt-4o",
             attributes={**chat, "gen_ai.usage.input_tokens": 50,
                         "gen_ai.usage.output_tokens": 5}),
    ]  # fmt: skip


async def _json(client: Any, path: str) -> Any:
    return orjson.loads(await (await client.get(f"/api/v1/projects/demo/{path}")).get_data())


async def test_the_usage_a_wrapper_shares_with_its_provider_call_counts_once(
    site: Site,
) -> None:
    """The list, the trace's totals, the agent's sum, the session and the agents JSON
    count the provider call's 100 + 20 tokens once and two LLM calls; the wrapper's
    object shows the sum below it, and the topology has no node of the wrapper."""
    store(site.db, site.demo, _run())
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    [listed] = (await _json(client, "traces"))["traces"]
    assert (listed["inputTokens"], listed["outputTokens"], listed["llmCalls"]) == (150, 25, 2)
    assert listed["costUsd"] == (await _json(client, f"traces/{TRACE}"))["totals"]["costUsd"]
    trace = await _json(client, f"traces/{TRACE}")
    assert (trace["totals"]["inputTokens"], trace["totals"]["llmCalls"]) == (150, 2)
    objects = {g["spanId"]: g for g in trace["genai"]}
    assert (objects[AGENT]["inputTokens"], objects[AGENT]["outputTokens"]) == (150, 25)
    assert objects[WRAPPER]["inputTokens"] == 100
    assert objects[WRAPPER]["sources"]["inputTokens"] == "spans below"
    assert objects[PROVIDER_CALL]["sources"]["inputTokens"] == "gen_ai.usage.input_tokens"
    [session] = (await _json(client, "sessions"))["sessions"]
    assert (session["inputTokens"], session["outputTokens"]) == (150, 25)
    agents = await _json(client, "agents")
    [agent] = agents["agents"]
    assert (agent["inputTokens"], agent["outputTokens"]) == (150, 25)
    assert agent["costUsd"] == listed["costUsd"]
    calls = {(e["to"], e["count"]) for e in agents["topology"]["edges"]}
    nodes = {n["id"]: n["name"] for n in agents["topology"]["nodes"]}
    assert sorted((nodes[to], count) for to, count in calls) == [
        ("gpt-4o", 1),
        ("gpt-4o-2024-08-06", 1),
    ]


async def test_the_trace_page_counts_a_wrappers_usage_once_and_says_why(site: Site) -> None:
    """The agent's row adds 175 tokens below it, not 295; the wrapper's pane says the
    call below it is the one counted; the provider call's pane says nothing of it."""
    store(site.db, site.demo, _run())
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    async def page(span_id: str) -> str:
        path = f"/projects/demo/traces/{TRACE}?span={span_id}"
        return (await (await client.get(path)).get_data()).decode()

    wrapper = await page(WRAPPER)
    assert "3 below" in wrapper and "175 tok" in wrapper and "295 tok" not in wrapper
    assert "usage is reported below: the trace's totals count the calls below" in wrapper
    assert "This call wraps" not in await page(PROVIDER_CALL)


async def test_a_wrapper_over_a_call_that_reports_no_usage_is_one_call_of_its_usage(
    site: Site,
) -> None:
    """A stream whose provider call reports no usage, below a framework's span that does:
    the trace has one call, of the wrapper's tokens, and its pane says why."""
    silent = _run()[:3]
    for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        del silent[2]["attributes"][key]
    store(site.db, site.demo, silent)
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    [listed] = (await _json(client, "traces"))["traces"]
    assert (listed["inputTokens"], listed["outputTokens"], listed["llmCalls"]) == (100, 20, 1)
    objects = {g["spanId"]: g for g in (await _json(client, f"traces/{TRACE}"))["genai"]}
    assert objects[PROVIDER_CALL]["inputTokens"] is None
    assert objects[WRAPPER]["sources"]["inputTokens"] == "llm.token_count.prompt"
    agents = await _json(client, "agents")
    assert (agents["agents"][0]["inputTokens"], len(agents["topology"]["edges"])) == (100, 1)
    path = f"/projects/demo/traces/{TRACE}?span={WRAPPER}"
    page = (await (await client.get(path)).get_data()).decode()
    assert "which report no usage" in page


async def test_a_wrapper_stored_on_two_days_shows_the_sums_below_it_on_both(
    site: Site,
) -> None:
    """A wrapper sent again with a start a day earlier (two stored rows of one span):
    both of its objects show the sums below it, neither its own usage."""
    store(site.db, site.demo, _run())
    again = _run()[1]
    again.update(startTime="2026-11-21T10:00:00Z", endTime="2026-11-21T10:00:09Z")
    again["attributes"]["llm.token_count.prompt"] = 300
    store(site.db, site.demo, [again], received_ms=10**10)  # after the window: kept
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    trace = await _json(client, f"traces/{TRACE}")
    wrapper = [g for g in trace["genai"] if g["spanId"] == WRAPPER]
    assert [(g["inputTokens"], g["sources"]["inputTokens"]) for g in wrapper] == [
        (100, "spans below"),
        (100, "spans below"),
    ]
    assert trace["totals"]["inputTokens"] == 150
