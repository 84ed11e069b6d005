"""The ingestion page's chart, drawn as SVG on the server: spans per minute, stacked
accepted (by the collector), rejected (by the collector) and refused (by the worker
after the 200), over the last hour or day. No script, no CDN: it is in the page."""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup

from spanqueue.ingestion_read import MinuteCounts

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 200, 48, 24, 8
#: Each series: its name, its CSS class and how a minute's count of it is read.
SERIES = (("accepted", "accepted"), ("rejected", "rejected"), ("refused", "refused"))


def _time(minute_ms: int) -> str:
    return f"{datetime.fromtimestamp(minute_ms / 1000, UTC):%H:%M}"


def _counts(minute: MinuteCounts) -> tuple[int, int, int]:
    return minute.accepted, minute.rejected, minute.refused


def _bars(minutes: tuple[MinuteCounts, ...], top: int) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    step = plot_w / len(minutes)
    parts = []
    for at, minute in enumerate(minutes):
        counts = _counts(minute)
        if not any(counts):
            continue
        x, base = LEFT + at * step, float(HEIGHT - BOTTOM)
        title = (
            f"{_time(minute.minute_ms)} UTC: {counts[0]} accepted, {counts[1]} rejected, "
            f"{counts[2]} refused"
        )
        parts.append(f"<g><title>{title}</title>")
        for (_, css), count in zip(SERIES, counts, strict=True):
            if count:
                height = max(1.0, count / top * plot_h)
                base -= height
                parts.append(
                    f'<rect class="{css}" x="{x:.1f}" y="{base:.1f}" '
                    f'width="{max(1.0, step - 1):.1f}" height="{height:.1f}"/>'
                )
        parts.append("</g>")
    return parts


def render(minutes: tuple[MinuteCounts, ...]) -> Markup:
    """The chart of `minutes` (oldest first), with its totals in its description."""
    totals = [sum(_counts(m)[i] for m in minutes) for i in range(len(SERIES))]
    top = max((sum(_counts(m)) for m in minutes), default=0) or 1
    summary = ", ".join(f"{total} {name}" for (name, _), total in zip(SERIES, totals, strict=True))
    first, last = minutes[0].minute_ms, minutes[-1].minute_ms
    middle = minutes[len(minutes) // 2].minute_ms
    axis_y = HEIGHT - BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ingestion-chart" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        'aria-labelledby="chart-title chart-desc">'
        '<title id="chart-title">Spans per minute</title>'
        f'<desc id="chart-desc">From {_time(first)} to {_time(last)} UTC: {summary}.</desc>'
        f'<line class="axis" x1="{LEFT}" y1="{axis_y}" x2="{WIDTH}" y2="{axis_y}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{axis_y}"/>'
        f'<text class="label" x="{LEFT - 4}" y="{TOP + 10}" text-anchor="end">{top}</text>'
        f'<text class="label" x="{LEFT - 4}" y="{axis_y}" text-anchor="end">0</text>',
        *_bars(minutes, top),
        f'<text class="label" x="{LEFT}" y="{HEIGHT - 6}">{_time(first)}</text>',
        f'<text class="label" x="{LEFT + (WIDTH - LEFT) / 2:.0f}" y="{HEIGHT - 6}" '
        f'text-anchor="middle">{_time(middle)}</text>',
        f'<text class="label" x="{WIDTH}" y="{HEIGHT - 6}" text-anchor="end">'
        f"{_time(last)} UTC</text>",
        "</svg>",
    ]
    return Markup("".join(parts))
