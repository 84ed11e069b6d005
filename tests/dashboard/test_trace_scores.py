"""Scores given on the trace page (source `ui`): members and above; viewers cannot."""

from __future__ import annotations

import orjson

from storage.scores import ScoreStore
from tests.dashboard.conftest import Site, agent_run, sign_in, store

TRACE = "ab" * 16


async def test_member_scores_a_trace_on_its_page(site: Site) -> None:
    """The form adds a `ui` score shown on the page; the JSON route answers 201 with it."""
    store(site.db, site.demo, agent_run(TRACE))
    client = site.client()
    csrf = await sign_in(client, "member@acme.test")
    page = (await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
    assert '<label for="score-value">Score</label>' in page
    form = {"name": "helpful", "score": "0.8", "comment": "good", "csrf_token": csrf}
    response = await client.post(f"/projects/demo/traces/{TRACE}/scores", form=form)
    assert response.status_code == 303
    page = (await (await client.get(response.headers["Location"])).get_data()).decode()
    assert "helpful" in page and "0.800" in page
    assert '<td class="comment"><div class="text">good</div></td>' in page
    long = {"name": "long", "score": "0.5", "comment": "word " * 2000, "csrf_token": csrf}
    await client.post(f"/projects/demo/traces/{TRACE}/scores", form=long)
    page = (await (await client.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
    assert "Show all (10,000 characters)" in page  # a long comment is folded, and wraps
    response = await client.post(
        f"/api/v1/projects/demo/traces/{TRACE}/scores",
        json={"name": "span ok", "score": 1, "spanId": "2" * 16},
        headers={"X-CSRF-Token": csrf},
    )
    assert response.status_code == 201
    given = orjson.loads(await response.get_data())
    assert (given["source"], given["spanId"], given["score"]) == ("ui", "2" * 16, 1.0)
    scores = ScoreStore(site.db).for_trace(site.demo.id, TRACE)
    assert [(s.name, s.source) for s in scores] == [
        ("helpful", "ui"), ("long", "ui"), ("span ok", "ui")
    ]  # fmt: skip


async def test_bad_scores_and_viewers_are_refused(site: Site) -> None:
    """Out of range or not a number: 400 VALIDATION_ERROR; a viewer: no form and 403; a
    trace not stored: 404. Nothing is stored."""
    store(site.db, site.demo, agent_run(TRACE))
    client = site.client()
    csrf = await sign_in(client, "member@acme.test")
    for value in ("1.5", "-0.1", "lots", "nan"):
        form = {"score": value, "csrf_token": csrf}
        response = await client.post(f"/projects/demo/traces/{TRACE}/scores", form=form)
        assert response.status_code == 400, value
    response = await client.post(
        f"/projects/demo/traces/{'c' * 32}/scores", form={"score": "0.5", "csrf_token": csrf}
    )
    assert response.status_code == 404
    viewer = site.client()
    viewer_csrf = await sign_in(viewer, "viewer@acme.test")
    page = (await (await viewer.get(f"/projects/demo/traces/{TRACE}")).get_data()).decode()
    assert "Add score" not in page
    response = await viewer.post(
        f"/api/v1/projects/demo/traces/{TRACE}/scores",
        json={"score": 0.5},
        headers={"X-CSRF-Token": viewer_csrf},
    )
    assert response.status_code == 403
    assert orjson.loads(await response.get_data())["error"]["code"] == "AUTHORIZATION_FAILED"
    assert ScoreStore(site.db).for_trace(site.demo.id, TRACE) == []
