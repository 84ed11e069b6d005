"""Datasets: made, edited and deleted in the dashboard by members and above, with each
problem shown beside its field; viewers only read."""

from __future__ import annotations

from storage.datasets import DatasetStore
from tests.dashboard.conftest import Site, sign_in, store
from tests.proto_json.spans import span

ITEMS = '[{"input": {"q": "capital of France?"}, "expected": "Paris"}, {"input": "hi"}]'


async def test_create_edit_delete(site: Site) -> None:
    """A member creates a dataset, sees its items, edits them and deletes it."""
    client = site.client()
    csrf = await sign_in(client, "member@acme.test")
    form = {"name": "geo", "description": "capitals", "items": ITEMS, "csrf_token": csrf}
    response = await client.post("/projects/demo/datasets", form=form)
    assert response.status_code == 303
    (made,) = DatasetStore(site.db).list(site.demo.id)
    assert (made.name, made.item_count) == ("geo", 2)
    page = (await (await client.get(response.headers["Location"])).get_data()).decode()
    assert "capital of France?" in page and "Paris" in page
    form = {**form, "items": '[{"input": 1, "expected": 2}]', "name": "numbers"}
    response = await client.post(f"/projects/demo/datasets/{made.id}", form=form)
    assert response.status_code == 303
    edited = DatasetStore(site.db).get(site.demo.id, made.id)
    assert edited.name == "numbers" and [(i.input, i.expected) for i in edited.items] == [
        ("1", "2")
    ]
    response = await client.post(
        f"/projects/demo/datasets/{made.id}/delete", form={"csrf_token": csrf}
    )
    assert response.status_code == 303 and DatasetStore(site.db).list(site.demo.id) == []


async def test_problems_are_shown_beside_their_fields(site: Site) -> None:
    """Bad JSON, a bad item and an empty name are 400 with each message beside its field
    and the text as sent; a taken name is 409."""
    client = site.client()
    csrf = await sign_in(client, "member@acme.test")
    deep = '[{"input": ' + "[" * 253 + "]" * 253 + "}]"  # 255 levels; orjson writes 254
    for items, expected in (("[1,", "not JSON"), ('[{"output": 1}]', "item 1 must be"),
                            (deep, "item 1 is nested too deep")):  # fmt: skip
        form = {"name": "", "description": "", "items": items, "csrf_token": csrf}
        response = await client.post("/projects/demo/datasets", form=form)
        page = (await response.get_data()).decode()
        assert response.status_code == 400
        assert 'id="items-error"' in page and expected in page and 'id="name-error"' in page
        assert 'aria-describedby="items-error"' in page
    form = {"name": "", "description": "", "items": "[]", "csrf_token": csrf}
    page = (await (await client.post("/projects/demo/datasets", form=form)).get_data()).decode()
    assert 'id="name-error"' in page
    assert 'id="items-error"' not in page and "built-in method" not in page  # items are fine
    nul = {"name": "a\x00b", "description": "", "items": "[]", "csrf_token": csrf}
    response = await client.post("/projects/demo/datasets", form=nul)  # on either store
    assert response.status_code == 400
    assert "NUL character" in (await response.get_data()).decode()
    DatasetStore(site.db).create(site.demo.id, "taken", "", "")
    form = {"name": "taken", "description": "", "items": "", "csrf_token": csrf}
    response = await client.post("/projects/demo/datasets", form=form)
    assert response.status_code == 409
    page = (await response.get_data()).decode()
    assert "exists" in page and "built-in method" not in page


async def test_viewers_read_only(site: Site) -> None:
    """A viewer sees datasets without controls; every change is 403; another
    organisation's dataset is 404."""
    mine = DatasetStore(site.db).create(site.demo.id, "geo", "", ITEMS)
    theirs = DatasetStore(site.db).create(site.secret.id, "x", "", "")
    client = site.client()
    csrf = await sign_in(client, "viewer@acme.test")
    page = (await (await client.get(f"/projects/demo/datasets/{mine}")).get_data()).decode()
    assert "Paris" in page and "<button" not in page.split("<main>")[1]
    form = {"name": "n", "description": "", "items": "", "csrf_token": csrf}
    for path in (
        "/projects/demo/datasets",
        f"/projects/demo/datasets/{mine}",
        f"/projects/demo/datasets/{mine}/delete",
    ):
        assert (await client.post(path, form=form)).status_code == 403
    assert (await client.get("/projects/demo/datasets/new")).status_code == 403
    owner = site.client()
    await sign_in(owner, "owner@acme.test")
    assert (await owner.get(f"/projects/demo/datasets/{theirs}")).status_code == 404


async def test_items_as_deep_as_the_page_writes_back(site: Site) -> None:
    """An item nested 252 levels (254 in the array of items the page writes back) is
    kept and shown; a span's JSON input too deep for that is added as its text."""
    client = site.client()
    csrf = await sign_in(client, "member@acme.test")
    items = '[{"input": ' + "[" * 252 + "]" * 252 + "}]"
    form = {"name": "deep", "description": "", "items": items, "csrf_token": csrf}
    response = await client.post("/projects/demo/datasets", form=form)
    assert response.status_code == 303
    assert (await client.get(response.headers["Location"])).status_code == 200
    deep = "[" * 253 + "]" * 253
    said = f'[{{"role": "user", "parts": [{{"type": "text", "content": "{deep}"}}]}}]'
    call = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": said}
    store(site.db, site.demo, [span(traceId="d" * 32, spanId="d" * 16, attributes=call)])
    added = await client.post(f"/projects/demo/traces/{'d' * 32}/spans/{'d' * 16}/dataset",
                              form={"dataset": "from-span", "csrf_token": csrf})  # fmt: skip
    assert added.status_code == 303
    assert (await client.get(added.headers["Location"])).status_code == 200
    [made] = [d for d in DatasetStore(site.db).list(site.demo.id) if d.name == "from-span"]
    [item] = DatasetStore(site.db).get(site.demo.id, made.id).items
    assert item.input == f'"{deep}"'  # its text
