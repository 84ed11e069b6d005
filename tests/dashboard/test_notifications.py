"""Alerts and webhooks in the beta: listed; rules paused, resumed, deleted; nothing
created from the dashboard."""

from __future__ import annotations

from storage.alerts import AlertStore
from storage.webhooks import WebhookStore
from tests.dashboard.conftest import Site, sign_in


async def test_rules_are_listed_with_their_history(site: Site) -> None:
    """Every role sees the rules and their history; viewers get no controls."""
    AlertStore(site.db).add(site.demo.id, "errors up", "error_rate > 0.1", "operator (CLI)")
    client = site.client()
    await sign_in(client, "viewer@acme.test")
    page = (await (await client.get("/projects/demo/alerts")).get_data()).decode()
    assert "errors up" in page and "error_rate &gt; 0.1" in page
    assert "created" in page and "operator (CLI)" in page
    assert "evaluation is off" in page and "<button" not in page.split("<main>")[1]


async def test_members_pause_resume_and_delete(site: Site) -> None:
    """A member pauses and resumes a rule (each in its history), then deletes it; a
    viewer's attempt is 403 and changes nothing."""
    store = AlertStore(site.db)
    rule = store.add(site.demo.id, "slow", "p95 > 2s", "operator (CLI)")
    viewer = site.client()
    viewer_csrf = await sign_in(viewer, "viewer@acme.test")
    path = f"/projects/demo/alerts/{rule.id}"
    response = await viewer.post(f"{path}/pause", form={"csrf_token": viewer_csrf})
    assert response.status_code == 403 and store.rule(site.demo.id, rule.id).status == "active"
    member = site.client()
    csrf = await sign_in(member, "member@acme.test")
    assert (await member.post(f"{path}/pause", form={"csrf_token": csrf})).status_code == 303
    assert store.rule(site.demo.id, rule.id).status == "paused"
    assert (await member.post(f"{path}/resume", form={"csrf_token": csrf})).status_code == 303
    history = [e.event for e in store.rule(site.demo.id, rule.id).history]
    assert history == ["created", "paused", "resumed"]
    assert (await member.post(f"{path}/delete", form={"csrf_token": csrf})).status_code == 303
    assert store.rules(site.demo.id) == []
    assert (await member.post(f"{path}/pause", form={"csrf_token": csrf})).status_code == 404


async def test_no_route_creates_or_changes_what_operators_add(site: Site) -> None:
    """POSTing a rule or a webhook, or deleting one, has no route (405); another
    organisation's rule is 404."""
    theirs = AlertStore(site.db).add(site.secret.id, "x", "y", "operator (CLI)")
    client = site.client()
    csrf = await sign_in(client, "owner@acme.test")
    headers = {"X-CSRF-Token": csrf}
    for path in ("/projects/demo/alerts", "/projects/demo/webhooks"):
        assert (await client.post(path, form={"csrf_token": csrf})).status_code == 405
        assert (await client.delete(path, headers=headers)).status_code == 405
    response = await client.post(
        f"/projects/demo/alerts/{theirs.id}/delete", form={"csrf_token": csrf}
    )
    assert response.status_code == 404 and AlertStore(site.db).rules(site.secret.id)


async def test_webhooks_are_listed_without_secrets(site: Site) -> None:
    """The list shows a webhook's scheme and host with its path masked, never its path,
    query or credentials (services such as Slack put the secret in the path), and no
    controls."""
    hooks = WebhookStore(site.db)
    hooks.add(site.demo.id, "https://user:pw@hooks.example.com/in?token=s3cret")
    hooks.add(site.demo.id, "https://hooks.slack.com/services/T0AAA/B0BBB/xoxSecretPart")
    hooks.add(site.demo.id, "http://10.0.0.7:8080")
    client = site.client()
    await sign_in(client, "owner@acme.test")
    page = (await (await client.get("/projects/demo/webhooks")).get_data()).decode()
    assert "https://hooks.example.com/…" in page and "alert.triggered" in page
    assert "https://hooks.slack.com/…" in page and "http://10.0.0.7:8080/<" in page
    listed = page.split("<main>")[1]  # the navigation links /projects/demo/ingestion
    for secret in ("s3cret", "pw@", "/in", "services", "T0AAA", "xoxSecretPart"):
        assert secret not in listed
    assert "<form" not in page.split("<main>")[1] and "delivery is off" in page
