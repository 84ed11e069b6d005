"""The LLM view on the dashboard: list, trace and agents JSON and pages."""

from __future__ import annotations

import re
from html import escape as html_escape
from pathlib import Path
from typing import Any

import orjson

import proto_json
from dashboard.formats import NO_COST, NO_TOKENS
from genai.messages import MAX_CONTENT
from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

TRACE = "5b8efff798038103d269b633813fc60c"
QUESTION = '[{"role":"user","parts":[{"type":"text","content":"Where is my order?"}]}]'
ANSWER = '[{"role":"assistant","parts":[{"type":"text","content":"It **ships** today."}]}]'
#: What the dash of a cost says when the call's model has no price (its end, unescaped).
UNPRICED = NO_COST.rsplit(" nor ", 1)[1]


def _run() -> list[dict[str, Any]]:
    """An OTel agent (reporting usage of its own) calling a tool and two LLM calls."""
    base = {"traceId": TRACE, "endTime": "2026-11-22T10:00:09Z"}
    return [
        span(**base, spanId="a" * 16, name="invoke_agent support", startTime="2026-11-22T10:00:00Z",
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                         "gen_ai.usage.input_tokens": 1000, "user.id": "cust-42",
                         "gen_ai.conversation.id": "conv-1"}),
        span(**base, spanId="1" * 16, parentSpanId="a" * 16, name="chat gpt-4o",
             startTime="2026-11-22T10:00:01Z",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                         "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 100,
                         "gen_ai.usage.output_tokens": 20, "gen_ai.input.messages": QUESTION}),
        span(**base, spanId="2" * 16, parentSpanId="a" * 16, name="execute_tool lookup",
             startTime="2026-11-22T10:00:02Z", status="error",
             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                         "gen_ai.tool.call.arguments": '{"order": 7}'}),
        span(**base, spanId="3" * 16, parentSpanId="a" * 16, name="chat my-model",
             startTime="2026-11-22T10:00:03Z",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "my-model",
                         "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 5,
                         "gen_ai.usage.cost": 0.5, "gen_ai.output.messages": ANSWER}),
    ]  # fmt: skip


async def test_the_trace_list_json_has_the_llm_fields(site: Site) -> None:
    """A listed trace has its tokens (model calls only), cost, models, calls, user,
    and its first question and last answer."""
    store(site.db, site.demo, _run())
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listed = orjson.loads(await (await client.get("/api/v1/projects/demo/traces")).get_data())
    item = listed["traces"][0]
    assert item["traceId"] == TRACE
    assert (item["inputTokens"], item["outputTokens"], item["totalTokens"]) == (150, 25, 175)
    assert item["costUsd"] > 0.5  # the client's 0.5 and gpt-4o's price from the table
    assert (item["models"], item["llmCalls"], item["userId"]) == (["gpt-4o", "my-model"], 2,
                                                                  "cust-42")  # fmt: skip
    assert (item["input"], item["output"]) == ("Where is my order?", "It **ships** today.")
    assert item["sessionId"] == "conv-1"


async def test_a_trace_whose_model_calls_record_no_messages_lists_its_roots(
    site: Site,
) -> None:
    """Model calls of an instrumentation that records no message content (the OTel
    GenAI one with capture off) under an agent span that records its input and output:
    the list shows the agent's; the call's pane says how to turn the capture on."""
    root = span(
        traceId="d" * 32,
        spanId="1" * 16,
        name="agent",
        kind="agent",
        startTime="2026-11-22T10:00:00Z",
        endTime="2026-11-22T10:00:05Z",
        attributes={
            "openinference.span.kind": "AGENT",
            "input.value": "Plan a trip",
            "output.value": "Go to Oslo",
        },
    )
    call = span(traceId="d" * 32, spanId="2" * 16, parentSpanId="1" * 16, name="chat",
                startTime="2026-11-22T10:00:01Z", endTime="2026-11-22T10:00:02Z",
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                            "gen_ai.usage.input_tokens": 10})  # fmt: skip
    store(site.db, site.demo, [root, call])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listed = orjson.loads(await (await client.get("/api/v1/projects/demo/traces")).get_data())
    (item,) = listed["traces"]
    assert item["llmCalls"] == 1
    assert (item["input"], item["output"]) == ("Plan a trip", "Go to Oslo")
    page = await client.get(f"/projects/demo/traces/{'d' * 32}?span={'2' * 16}")
    hint = (await page.get_data()).decode().split('class="hint no-messages">', 1)[1]
    assert hint.startswith("No messages were recorded for this call")  # and how to
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in hint.split("</p>")[0]


async def test_the_trace_json_has_totals_and_a_genai_object_per_described_span(
    site: Site,
) -> None:
    """`totals` as the list's; `genai` for each span a convention describes, the agent
    showing the sums of the calls below it instead of its own usage."""
    store(site.db, site.demo, _run())
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    trace = orjson.loads(
        await (await client.get(f"/api/v1/projects/demo/traces/{TRACE}")).get_data()
    )
    assert trace["totals"]["totalTokens"] == 175 and trace["totals"]["llmCalls"] == 2
    by_span = {item["spanId"]: item for item in trace["genai"]}
    assert set(by_span) == {"a" * 16, "1" * 16, "2" * 16, "3" * 16}
    agent, first, tool, second = (by_span[k * 16] for k in "a123")
    assert (agent["type"], agent["name"], agent["inputTokens"]) == ("agent", "support", 150)
    assert agent["sources"]["inputTokens"] == "spans below"
    assert agent["costUsd"] == trace["totals"]["costUsd"] and agent["costSource"] is None
    assert (first["model"], first["costSource"], first["sources"]["model"]) == (
        "gpt-4o", "price-table", "gen_ai.request.model")  # fmt: skip
    assert first["inputMessages"] == [{"role": "user", "content": "Where is my order?"}]
    assert (tool["type"], tool["name"]) == ("tool", "lookup")
    assert tool["inputMessages"] == [{"role": "assistant", "content": '{"order": 7}'}]
    assert (second["costUsd"], second["costSource"]) == (0.5, "client")
    expected = {"spanId", "type", "name", "model", "provider", "inputTokens", "outputTokens",
                "cacheReadTokens", "cacheWriteTokens", "reasoningTokens", "costUsd",
                "costSource", "inputMessages", "outputMessages", "sources"}  # fmt: skip
    assert all(set(item) == expected for item in trace["genai"])
    # `sources` names fields of the object only (the view also reads user and session)
    assert all(set(item["sources"]) <= expected for item in trace["genai"])
    assert "totalTokens" not in first["sources"] and first["sources"]["inputTokens"]


async def test_the_native_example_of_the_api_docs_reads_as_they_say(site: Site) -> None:
    """docs/api.md's native agent run: no field ignored; the model call's model, tokens,
    price and messages, the tool's name and input, the agent's name, the user and
    session; and the trace page names the failing span's exception as its first error."""
    docs = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    example = docs.split("## Native spans", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    body = orjson.loads(example)
    assert proto_json.convert_spans(orjson.dumps(body)).ignored == ()
    store(site.db, site.demo, body["spans"])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    trace_id = body["spans"][0]["traceId"]
    trace = await _api(client, f"traces/{trace_id}")
    by_type = {item["type"]: item for item in trace["genai"]}
    call, tool, agent = by_type["llm"], by_type["tool"], by_type["agent"]
    assert (call["model"], call["provider"], call["inputTokens"], call["outputTokens"]) == (
        "gpt-4o-mini", "openai", 120, 18)  # fmt: skip
    assert call["costSource"] == "price-table" and call["costUsd"] > 0
    assert call["inputMessages"] == [{"role": "user", "content": "Where is order 7?"}]
    assert call["outputMessages"] == [{"role": "assistant", "content": "Let me look it up."}]
    assert (tool["name"], tool["inputMessages"][0]["content"]) == ("lookup_order", '{"order": 7}')
    assert agent["name"] == "support"
    (listed,) = (await _api(client, "traces"))["traces"]
    assert (listed["userId"], listed["sessionId"]) == ("cust-42", "chat-7")
    page = (await (await client.get(f"/projects/demo/traces/{trace_id}")).get_data()).decode()
    assert "TimeoutError: orders DB timed out" in page


async def test_the_agents_json_comes_from_every_convention(site: Site) -> None:
    """An OTel agent is an agent: its runs and its calls' tokens; LLM nodes named by
    model, tool nodes by tool name, edges with their counts and errors."""
    store(site.db, site.demo, _run())
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    found = orjson.loads(await (await client.get("/api/v1/projects/demo/agents")).get_data())
    assert found["agents"] == [
        {"name": "support", "runs": 1, "errors": 0, "p50Ms": 9000.0, "p95Ms": 9000.0,
         "inputTokens": 150, "outputTokens": 25, "costUsd": found["agents"][0]["costUsd"]}
    ]  # fmt: skip
    assert found["agents"][0]["costUsd"] > 0.5
    nodes = {(n["id"], n["type"], n["name"]) for n in found["topology"]["nodes"]}
    assert nodes == {
        ("agent:support", "agent", "support"), ("llm:gpt-4o", "llm", "gpt-4o"),
        ("llm:my-model", "llm", "my-model"), ("tool:lookup", "tool", "lookup"),
    }  # fmt: skip
    edges = {(e["from"], e["to"], e["count"], e["errors"]) for e in found["topology"]["edges"]}
    assert edges == {
        ("agent:support", "llm:gpt-4o", 1, 0), ("agent:support", "llm:my-model", 1, 0),
        ("agent:support", "tool:lookup", 1, 1),
    }  # fmt: skip


async def test_the_pages_show_models_tokens_and_cost(site: Site) -> None:
    """The trace list has model, tokens, cost and user columns and each trace's input
    and output; the trace page its totals; an LLM row of the waterfall its type, model
    and tokens (the type the view gives, not the OTel SDK kind); a call with no known
    price shows a dash that says why."""
    store(site.db, site.demo, _run())
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listing = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    for header in ("Model", "Tokens", "Cost", "User"):
        # the sortable columns' headers are links
        assert re.search(f'<th scope="col">(<a [^>]*>)?{header}( [▲▼])?(</a>)?</th>', listing)
    models = (
        '<span class="model" title="gpt-4o"><span class="part">gpt-4o,</span></span> '
        '<span class="model" title="my-model"><span class="part">my-model</span></span>'
    )
    assert models in listing and ">175<" in listing and "cust-42" in listing
    # the conversation's ends under the root span's name, as Langfuse and Phoenix list them
    ends = r'<span class="muted">in</span> Where is my order\?</div>\s*<div class="said">'
    ends += r'<span class="muted">out</span> '
    assert re.search(ends + r"It \*\*ships\*\* today\.", listing)
    page = (await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
    assert "<dt>LLM calls</dt><dd>2</dd>" in page
    assert "175 (150 in, 25 out)" in page
    assert '<span class="llm-facts" title="gpt-4o 100→20 tok">gpt-4o 100→20 tok</span>' in page
    assert re.search('<span class="kind kind-llm" title="SDK kind: [a-z]+">llm</span> '
                     '<span class="llm-facts" title="gpt-4o', page)  # fmt: skip
    assert '<span class="kind kind-tool" title="SDK kind: ' in page
    store(site.db, site.demo, [span(traceId="c" * 32, spanId="c" * 16, name="chat",
                                    attributes={"gen_ai.operation.name": "chat",
                                                "gen_ai.request.model": "nobody-prices-me",
                                                "gen_ai.usage.input_tokens": 3})])  # fmt: skip
    listing = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    assert 'title="No cost known' in listing and UNPRICED in listing


async def test_the_trace_page_shows_the_traces_input_and_output(site: Site) -> None:
    """Above the waterfall, the trace's input and output as the list gives them
    (Markdown rendered); a trace with neither has no such section."""
    store(site.db, site.demo, _run())
    page, _ = await _pane(site, "1" * 16)
    ends = page.split('<section class="trace-ends"', 1)[1].split("</section>", 1)[0]
    assert '<span class="role">input</span>' in ends and "Where is my order?" in ends
    assert "It <strong>ships</strong> today." in ends
    plain = [span(traceId="0" * 31 + "1", spanId="9" * 16, name="plain")]
    store(site.db, site.demo, plain)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    other = (await (await client.get(f"/projects/demo/traces/{'0' * 31}1")).get_data()).decode()
    assert "Input and output" not in other


async def test_a_selected_model_call_shows_its_llm_view_escaped(site: Site) -> None:
    """Selecting an LLM span shows its model, tokens, cost and messages (newlines kept by
    the stylesheet, markup escaped) and where each field was read from."""
    run = _run()
    run[1]["attributes"]["gen_ai.input.messages"] = (
        '[{"role":"user","parts":[{"type":"text","content":"<script>alert(1)</script>\\nok"}]}]'
    )
    store(site.db, site.demo, run)
    page, section = await _pane(site, "1" * 16)
    assert '<h3 id="llm-heading">LLM call</h3>' in section
    assert "No messages were recorded" not in section
    assert "<dt>Model</dt><dd>gpt-4o (openai)</dd>" in section
    assert "100 in, 20 out" in section
    assert '<li class="message role-user"><span class="role">user</span>' in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\nok" in section
    assert "<script>alert" not in page
    assert "model ← <code>gen_ai.request.model</code>" in section


async def test_a_message_cut_at_its_bound_says_so_and_its_attribute_is_open(
    site: Site,
) -> None:
    """A message longer than the view keeps is cut, and says so where it ends; the
    attribute it came from, which holds the whole text, is shown open, not folded
    away as shown above."""
    run = _run()
    long = " ".join(f"paragraph{n}" for n in range(6000))  # 65 KB
    run[1]["attributes"]["gen_ai.input.messages"] = orjson.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": long}]}]
    ).decode()
    store(site.db, site.demo, run)
    page, section = await _pane(site, "1" * 16)
    assert f"Cut here, at {MAX_CONTENT:,} characters" in section
    assert "Shown as messages above" not in page
    assert "The whole text of the messages above" in page
    assert '<details class="shown-above" open>' in page

    page, section = await _pane(site, "3" * 16)  # whole messages: no word of it
    assert "<h4>Output</h4>" in section
    assert "Cut here" not in section and "The whole text" not in page


async def test_a_model_calls_parameters_and_tools_offered_are_shown(site: Site) -> None:
    """The pane's LLM facts name the call's request parameters and the tools it offered
    (escaped); a call with neither has no such rows."""
    run = _run()
    run[1]["attributes"] |= {
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.tool.definitions": '[{"type": "function", "name": "<b>lookup</b>"}]',
    }
    store(site.db, site.demo, run)
    _, section = await _pane(site, "1" * 16)
    assert (
        '<dt>Parameters</dt><dd class="parameters">temperature <span class="mono">0.2</span>, '
        'max tokens <span class="mono">64</span></dd>'
    ) in section
    assert "<dt>Tools offered</dt><dd>&lt;b&gt;lookup&lt;/b&gt;</dd>" in section
    _, other = await _pane(site, "3" * 16)
    assert "<dt>Parameters</dt>" not in other and "Tools offered" not in other


async def _api(client: Any, path: str) -> Any:
    """The JSON of `GET /api/v1/projects/demo/{path}`."""
    return orjson.loads(await (await client.get(f"/api/v1/projects/demo/{path}")).get_data())


async def _pane(site: Site, span_id: str) -> tuple[str, str]:
    """TRACE's page with a span selected, as a viewer reads it, and its pane's section
    of the span's type."""
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = (
        await (await client.get(f"/projects/demo/traces/{TRACE}?span={span_id}")).get_data()
    ).decode()
    return page, page.split('<section class="llm"', 1)[1].split("</section>", 1)[0]


async def test_a_tools_arguments_are_shown_as_its_input_without_a_role(site: Site) -> None:
    """A tool's arguments and result are values: the pane shows them under Input and
    Output, with no chat role (the view gives them `assistant` and `tool`)."""
    store(site.db, site.demo, _run())
    _, section = await _pane(site, "2" * 16)
    assert '<h3 id="llm-heading">Tool</h3>' in section
    assert "<h4>Input</h4>" in section and "&#34;order&#34;" in section
    assert 'class="role"' not in section


async def test_an_embeddings_row_shows_its_input_tokens_alone(site: Site) -> None:
    """An embedding reports input tokens only: its waterfall row says so, with no
    arrow to an unknown output."""
    embed = span(traceId="e" * 32, spanId="1" * 16, name="embeddings",
                 startTime="2026-11-22T10:00:00Z", endTime="2026-11-22T10:00:01Z",
                 attributes={"gen_ai.operation.name": "embeddings",
                             "gen_ai.request.model": "text-embedding-3-small",
                             "gen_ai.usage.input_tokens": 7})  # fmt: skip
    store(site.db, site.demo, [embed])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = (await (await client.get(f"/projects/demo/traces/{'e' * 32}")).get_data()).decode()
    facts = "text-embedding-3-small 7 tok in"
    assert f'<span class="llm-facts" title="{facts}">{facts}</span>' in page


async def test_costs_read_alike_whatever_order_their_sum_was_added_in(site: Site) -> None:
    """0.1 + 0.2 is 0.30000000000000004 in floats: the list, the trace's totals and its
    agent's sum, the session and the agents JSON say 0.3."""
    base = {
        "traceId": "c" * 32,
        "startTime": "2026-11-22T10:00:00Z",
        "endTime": "2026-11-22T10:00:01Z",
    }
    agent = span(
        **base, spanId="a" * 16, name="agent", kind="agent", attributes={"session.id": "s-1"}
    )
    calls = [span(**base, spanId=str(n) * 16, parentSpanId="a" * 16, name="chat",
                  attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                              "gen_ai.usage.cost": cost})
             for n, cost in ((1, 0.1), (2, 0.2))]  # fmt: skip
    store(site.db, site.demo, [agent, *calls])
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    assert (await _api(client, "traces"))["traces"][0]["costUsd"] == 0.3
    trace = await _api(client, f"traces/{'c' * 32}")
    assert trace["totals"]["costUsd"] == 0.3
    assert {g["spanId"]: g["costUsd"] for g in trace["genai"]}["a" * 16] == 0.3
    assert (await _api(client, "sessions"))["sessions"][0]["costUsd"] == 0.3
    assert (await _api(client, "agents"))["agents"][0]["costUsd"] == 0.3


async def test_a_traces_cost_says_how_many_calls_it_leaves_out(site: Site) -> None:
    """A model call with tokens and no price known: the header's cost, the sum of the
    known ones, says one call is not priced; a call without tokens is not counted."""
    client = site.client()
    await sign_in(client, "viewer@acme.test")

    async def cost() -> str:
        page = (await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
        return page.split("<dt>Cost</dt>", 1)[1].split("</dd>", 1)[0]

    store(site.db, site.demo, _run())
    assert "not priced" not in await cost()
    base = {
        "traceId": TRACE,
        "parentSpanId": "a" * 16,
        "startTime": "2026-11-22T10:00:04Z",
        "endTime": "2026-11-22T10:00:05Z",
    }
    store(site.db, site.demo, [
        span(**base, spanId="4" * 16, name="chat private",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "no-such",
                         "gen_ai.usage.input_tokens": 9}),
        span(**base, spanId="5" * 16, name="chat refused",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "no-such"}),
    ])  # fmt: skip
    shown = await cost()
    assert re.search(r"\$0\.5\d*", shown) and "+ 1 call not priced" in shown


async def test_a_call_that_reported_no_tokens_says_so_where_its_cost_is_a_dash(
    site: Site,
) -> None:
    """A failed call (no tokens, a priced model): its dash says no tokens were reported,
    not that its model has no price, in the list, the trace's header and the call's
    pane; the header shows no token counts of none."""
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    store(site.db, site.demo, [span(traceId=TRACE, spanId="d" * 16, name="chat", status="error",
                                    attributes={"gen_ai.operation.name": "chat",
                                                "gen_ai.request.model": "gpt-4o"})])  # fmt: skip
    listing = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    assert NO_TOKENS in listing and UNPRICED not in listing
    page = (await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
    header = page.split("<dt>Tokens</dt>", 1)[1].split("</dl>", 1)[0]
    assert header.startswith("<dd>—</dd>") and f'title="{NO_TOKENS}"' in header
    _, pane = await _pane(site, "d" * 16)
    assert f'title="{NO_TOKENS}"' in pane and UNPRICED not in pane


def _said(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _turn(n: int, history: list[dict[str, Any]], question: str, answer: str) -> dict[str, Any]:
    """A chat's turn n: a trace of one model call whose input holds the conversation so
    far (as every instrumentation records a chat), in session `chat-1`."""
    return _call(n, [*history, _said("user", question)], answer)


def _call(n: int, asked: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    """Trace n: one model call of these input messages and answer, in session `chat-1`."""
    said = [_said("assistant", answer)]
    return span(traceId=f"{n:032x}", spanId=f"{n:016x}", name="chat",
                startTime=f"2026-11-22T10:0{n}:00Z", endTime=f"2026-11-22T10:0{n}:01Z",
                attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                            "session.id": "chat-1",
                            "gen_ai.input.messages": orjson.dumps(asked).decode(),
                            "gen_ai.output.messages": orjson.dumps(said).decode()})  # fmt: skip


async def test_a_chats_turns_show_the_question_each_asked(site: Site) -> None:
    """Each turn of a chat is a trace whose call holds the conversation so far: the
    list, the session's conversation and the trace's page show the question that turn
    asked (its call's last user message), not the chat's first; the JSON's `input` is
    the first user message of the first call, as the contract has it."""
    system = {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}
    turns = [("Where is my order 4711?", "It ships today."), ("Tell me a joke", "A pun."),
             ("I forgot my password", "Reset it here.")]  # fmt: skip
    history: list[dict[str, Any]] = [system]
    spans = []
    for n, (question, answer) in enumerate(turns, start=1):
        spans.append(_turn(n, history, question, answer))
        history += [
            {"role": "user", "parts": [{"type": "text", "content": question}]},
            {"role": "assistant", "parts": [{"type": "text", "content": answer}]},
        ]
    store(site.db, site.demo, spans)
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listing = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    shown = re.findall(r'<span class="muted">in</span> ([^<]*)</div>', listing)
    assert shown == [html_escape(q) for q, _ in reversed(turns)]
    page = (await (await client.get("/projects/demo/sessions/chat-1")).get_data()).decode()
    conversation = page.split('<ol class="conversation">', 1)[1].split("</ol>", 1)[0]
    # each turn its own question, once (as the answers, each shown rendered and raw)
    assert {conversation.count(said) for turn in turns for said in turn} == {2}
    trace = (await (await client.get(f"/projects/demo/traces/{3:032x}")).get_data()).decode()
    ends = trace.split('<section class="trace-ends"', 1)[1].split("</section>", 1)[0]
    assert "I forgot my password" in ends and turns[0][0] not in ends
    items = (await _api(client, "traces"))["traces"]
    assert [item["input"] for item in items] == [turns[0][0]] * 3
    assert [item["output"] for item in items] == [a for _, a in reversed(turns)]


async def test_a_calls_row_shows_its_model_without_its_date(site: Site) -> None:
    """A dated model's row in the waterfall: its name without the date, which the title
    gives whole (a row of 1,280 px cut `gpt-4o-mini-2024-07-18 74→20 tok`)."""
    call = span(traceId="f" * 32, spanId="1" * 16, name="ChatCompletion",
                startTime="2026-11-22T10:00:00Z", endTime="2026-11-22T10:00:01Z",
                attributes={"gen_ai.operation.name": "chat",
                            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                            "gen_ai.usage.input_tokens": 74,
                            "gen_ai.usage.output_tokens": 20})  # fmt: skip
    store(site.db, site.demo, [call])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = (await (await client.get(f"/projects/demo/traces/{'f' * 32}")).get_data()).decode()
    whole, shown = "gpt-4o-mini-2024-07-18 74→20 tok", "gpt-4o-mini 74→20 tok"
    assert f'<span class="llm-facts" title="{whole}">{shown}</span>' in page


async def test_a_turn_whose_question_has_no_text_shows_none(site: Site) -> None:
    """A chat whose first question is an image, its turn under an agent's root span:
    the turn shows the question it asked; a turn whose question is an image shows
    none, not the chat's first question."""
    image = {"role": "user", "parts": [
        {"type": "uri", "uri": "https://example.com/a.png", "modality": "image"}]}  # fmt: skip
    under_root = _call(1, [image, _said("assistant", "A cat."), _said("user", "Black?")], "Yes.")
    under_root["parentSpanId"] = "a" * 16
    root = span(traceId=f"{1:032x}", spanId="a" * 16, name="agent", kind="agent",
                startTime="2026-11-22T10:00:59Z", endTime="2026-11-22T10:01:02Z")  # fmt: skip
    hello = [_said("user", "Hello"), _said("assistant", "Hi."), image]
    store(site.db, site.demo, [root, under_root, _call(2, hello, "A dog.")])
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listing = (await (await client.get("/projects/demo/traces")).get_data()).decode()
    shown = re.findall(r'<span class="muted">in</span> ([^<]*)</div>', listing)
    assert shown == ["—", "Black?"]


async def test_a_user_and_session_named_on_a_span_no_convention_describes_are_the_traces(
    site: Site,
) -> None:
    """`enduser.id` on the root alone (an application's span, of no LLM convention) and
    a model call that names no user: the trace's user, its session's, and the `user`
    filter's. `gen_ai.conversation.id` on such a root with no `session.id` is its
    trace's session, as on a model call; a `session.id` beside it wins. (The C row
    builder's reading: tests/storage/test_rows_genai.py.)"""
    trace = "6" * 32
    base = {"startTime": "2026-11-22T11:00:00Z", "endTime": "2026-11-22T11:00:02Z"}
    store(site.db, site.demo, [
        span(**base, traceId=trace, spanId="a" * 16, name="handle request",
             attributes={"enduser.id": "u-plain", "session.id": "s-plain"}),
        span(**base, traceId=trace, spanId="b" * 16, parentSpanId="a" * 16, name="chat",
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}),
        span(**base, traceId="7" * 32, spanId="a" * 16, name="handle request",
             attributes={"gen_ai.conversation.id": "conv-plain", "user.id": "u-1"}),
        span(**base, traceId="8" * 32, spanId="a" * 16, name="handle request",
             attributes={"gen_ai.conversation.id": "conv-other", "session.id": "s-given"}),
    ])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listed = await _api(client, "traces?user=u-plain")
    assert [(t["traceId"], t["userId"]) for t in listed["traces"]] == [(trace, "u-plain")]
    sessions = await _api(client, "sessions?user=u-plain")
    assert [(s["sessionId"], s["userId"]) for s in sessions["sessions"]] == [("s-plain", "u-plain")]
    listed = await _api(client, "traces")
    assert {t["traceId"]: (t["sessionId"], t["userId"]) for t in listed["traces"]} == {
        trace: ("s-plain", "u-plain"),
        "7" * 32: ("conv-plain", "u-1"),
        "8" * 32: ("s-given", None),
    }
    assert [t["traceId"] for t in (await _api(client, "traces?session=conv-plain"))["traces"]] == [
        "7" * 32
    ]
    named = {s["sessionId"] for s in (await _api(client, "sessions"))["sessions"]}
    assert named == {"s-plain", "conv-plain", "s-given"}


async def test_a_root_of_no_kind_gives_its_openinference_input_and_output(site: Site) -> None:
    """A trace of one root carrying OpenInference's `input.value` and `output.value`
    without a span kind: a chain, whose input and output are the trace's, found by the
    words of either; another's generic `input` attribute makes no chain."""
    store(site.db, site.demo, [
        span(traceId="7" * 32, spanId="a" * 16, name="fallback",
             attributes={"input.value": "root input only", "output.value": "root answer"}),
        span(traceId="8" * 32, spanId="a" * 16, name="http", attributes={"input": "form"}),
    ])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    listed = orjson.loads(await (await client.get("/api/v1/projects/demo/traces")).get_data())
    shown = {t["traceId"]: (t["input"], t["output"]) for t in listed["traces"]}
    assert shown == {"7" * 32: ("root input only", "root answer"), "8" * 32: (None, None)}
    found = orjson.loads(
        await (await client.get("/api/v1/projects/demo/traces?text=answer")).get_data()
    )
    assert [t["traceId"] for t in found["traces"]] == ["7" * 32]
    detail = orjson.loads(
        await (await client.get(f"/api/v1/projects/demo/traces/{'7' * 32}")).get_data()
    )
    assert [(g["type"], g["inputMessages"]) for g in detail["genai"]] == [
        ("chain", [{"role": "user", "content": "root input only"}])
    ]


async def test_a_tools_arguments_sent_as_an_object_are_its_input(site: Site) -> None:
    """`tool.args` sent as an object (as the README's example sends it): the tool's
    input, as JSON text; an empty object is none."""
    store(site.db, site.demo, [
        span(traceId="4" * 32, spanId="a" * 16, name="search_orders", kind="tool_call",
             attributes={"tool.name": "search_orders", "tool.args": {"customer": "c-42"}}),
        span(traceId="4" * 32, spanId="b" * 16, name="noop", kind="tool_call",
             attributes={"tool.args": {}}),
    ])  # fmt: skip
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    detail = orjson.loads(
        await (await client.get(f"/api/v1/projects/demo/traces/{'4' * 32}")).get_data()
    )
    given = {
        g["spanId"]: (g["inputMessages"], g["sources"].get("inputMessages"))
        for g in detail["genai"]
    }
    assert given == {
        "a" * 16: ([{"role": "assistant", "content": '{"customer":"c-42"}'}], "tool.args"),
        "b" * 16: ([], None),
    }
    page = await client.get(f"/projects/demo/traces/{'4' * 32}?span={'a' * 16}")
    heading = (await page.get_data()).decode().split('id="llm-heading">', 1)[1]
    assert heading.startswith("Tool</h3>")  # the pane names its type, not "LLM"
