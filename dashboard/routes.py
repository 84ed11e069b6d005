"""Every URL of the dashboard, in one table: rule, methods, view, endpoint (the name
templates give `url_for`). A feature with a page and a JSON form has one view object
whose `html` and `json` are its two routes (dashboard/views.py).

Not listed here: `/static/...` (Quart's) and `/health`, `/health/live`, `/health/ready`
(service.web.install_health, shared by every app).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from quart import Quart

from dashboard.agents import Agents
from dashboard.datasets import DatasetPages
from dashboard.explorer import Explorer
from dashboard.ingestion import Ingestion
from dashboard.notifications import RULE_ACTIONS, Notifications
from dashboard.pages import Pages, Projects
from dashboard.project_settings import Settings, SettingsRoutes
from dashboard.sessions import Session, SessionList
from dashboard.signin import SignIn
from dashboard.trace_find import TraceFind
from dashboard.trace_list import TraceList
from dashboard.trace_page import Trace
from dashboard.trace_scores import TraceScores

GET, POST, PATCH = ("GET",), ("POST",), ("PATCH",)
PROJECT = "/projects/<project>"
API = "/api/v1/projects/<project>"


@dataclass(frozen=True, slots=True)
class Route:
    """One URL rule and the view that answers it."""

    rule: str
    methods: tuple[str, ...]
    view: Callable[..., Any]
    endpoint: str


@dataclass(frozen=True, slots=True)
class Views:
    """The objects whose methods answer the routes, one per feature."""

    signin: SignIn
    pages: Pages
    projects: Projects
    traces: TraceList
    trace: Trace
    sessions: SessionList
    session: Session
    agents: Agents
    ingestion: Ingestion
    settings: SettingsRoutes
    notifications: Notifications
    datasets: DatasetPages
    scores: TraceScores
    find: TraceFind

    @classmethod
    def of(
        cls, explorer: Explorer, signin: SignIn, ingest_url: str, redis_url: str | None
    ) -> Views:
        """Every view, on the stores `explorer` reads."""
        return cls(
            signin=signin,
            pages=Pages(explorer),
            projects=Projects(explorer),
            traces=TraceList(explorer, ingest_url),
            trace=Trace(explorer),
            sessions=SessionList(explorer, ingest_url),
            session=Session(explorer),
            agents=Agents(explorer),
            ingestion=Ingestion(explorer, redis_url),
            settings=SettingsRoutes(Settings(explorer)),
            notifications=Notifications(explorer),
            datasets=DatasetPages(explorer),
            scores=TraceScores(explorer),
            find=TraceFind(explorer),
        )


def _sign_in(v: Views) -> list[Route]:
    return [
        Route("/login", GET, v.signin.login_page, "login_page"),
        Route("/login", POST, v.signin.login, "login_post"),
        Route("/logout", POST, v.signin.logout, "logout"),
    ]


def _traces(v: Views) -> list[Route]:
    trace = f"{PROJECT}/traces/<trace_id>"
    api_trace = f"{API}/traces/<trace_id>"
    return [
        Route(f"{PROJECT}/traces", GET, v.traces.html, "traces"),
        Route(f"{API}/traces", GET, v.traces.json, "api_traces"),
        Route(f"{API}/traces/export", GET, v.traces.export, "api_export"),
        Route(trace, GET, v.trace.html, "trace"),
        Route(api_trace, GET, v.trace.json, "api_trace"),
        Route(f"{trace}/spans/<span_id>", GET, v.trace.span, "span"),
        Route(f"{trace}/find", GET, v.find.find, "find_in_trace"),
        Route(f"{trace}/scores", POST, v.scores.from_page, "give_score"),
        Route(f"{api_trace}/scores", POST, v.scores.from_api, "api_give_score"),
        Route(f"{trace}/spans/<span_id>/dataset", POST, v.datasets.add_span, "add_span_to_dataset"),
    ]


def _sessions_and_agents(v: Views) -> list[Route]:
    session = "sessions/<segment:session_id>"
    return [
        Route(f"{PROJECT}/sessions", GET, v.sessions.html, "sessions"),
        Route(f"{API}/sessions", GET, v.sessions.json, "api_sessions"),
        Route(f"{PROJECT}/{session}", GET, v.session.html, "session"),
        Route(f"{API}/{session}", GET, v.session.json, "api_session"),
        Route(f"{PROJECT}/agents", GET, v.agents.html, "agents"),
        Route(f"{API}/agents", GET, v.agents.json, "api_agents"),
        Route(f"{PROJECT}/agents/traces", GET, v.agents.traces, "agent_traces"),
        Route(f"{PROJECT}/ingestion", GET, v.ingestion.page, "ingestion"),
        Route(f"{API}/ingestion", GET, v.ingestion.api, "api_ingestion"),
    ]


def _settings(v: Views) -> list[Route]:
    page, keys = f"{PROJECT}/settings", f"{PROJECT}/settings/api-keys"
    s = v.settings
    return [
        Route(page, GET, s.page, "settings_page"),
        Route(page, POST, s.rename_page, "rename_page"),
        Route(keys, GET, s.keys_page, "keys_page"),
        Route(keys, POST, s.create_key_page, "create_key_page"),
        Route(f"{keys}/<key_id>/revoke", POST, s.revoke_page, "revoke_page"),
        Route(API, PATCH, s.rename, "api_rename"),
        Route(f"{API}/api-keys", GET, s.keys, "api_keys"),
        Route(f"{API}/api-keys", POST, s.create_key, "api_create_key"),
        Route("/api/v1/api-keys/<key_id>/revoke", POST, s.revoke, "api_revoke"),
    ]


def _project_pages(v: Views) -> list[Route]:
    datasets, dataset = f"{PROJECT}/datasets", f"{PROJECT}/datasets/<dataset_id>"
    actions = f"<any({', '.join(RULE_ACTIONS)}):action>"
    n, d = v.notifications, v.datasets
    return [
        Route(f"{PROJECT}/evaluations", GET, v.pages.evaluations, "evaluations"),
        Route(f"{PROJECT}/alerts", GET, n.alerts_page, "alerts_page"),
        Route(f"{PROJECT}/alerts/<rule_id>/{actions}", POST, n.rule_action, "rule_action"),
        Route(f"{PROJECT}/webhooks", GET, n.webhooks_page, "webhooks_page"),
        Route(datasets, GET, d.listing, "datasets"),
        Route(datasets, POST, d.create, "create_dataset"),
        Route(f"{datasets}/new", GET, d.new, "new_dataset"),
        Route(dataset, GET, d.show, "dataset"),
        Route(dataset, POST, d.update, "update_dataset"),
        Route(f"{dataset}/delete", POST, d.delete, "delete_dataset"),
    ]


def route_table(v: Views) -> list[Route]:
    """Every route of the dashboard."""
    return [
        *_sign_in(v),
        Route("/", GET, v.pages.home, "home"),
        Route("/projects", GET, v.projects.html, "projects"),
        Route("/api/v1/projects", GET, v.projects.json, "api_projects"),
        Route(PROJECT, GET, v.pages.project, "project"),
        *_traces(v),
        *_sessions_and_agents(v),
        *_settings(v),
        *_project_pages(v),
    ]


def install_routes(app: Quart, routes: Iterable[Route]) -> None:
    """Add each route of the table to the app."""
    for route in routes:
        app.add_url_rule(
            route.rule, endpoint=route.endpoint, view_func=route.view, methods=list(route.methods)
        )
