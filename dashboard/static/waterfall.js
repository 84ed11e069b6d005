// The waterfall's tools for big traces: zoom on the time axis (buttons, or drag a range
// on the axis; the URL keeps it as ?zoom=FROM-TO in fractions of the trace), collapse
// to a depth, previous/next error, and find in the trace (the server searches names,
// attributes and events; a match on another page of the waterfall is gone to).
// It uses showSpan and setCollapsed from dashboard.js.
"use strict";

const waterfall = {
  list: () => document.querySelector("ol.spans"),
  zoom: [0, 1],
  matches: [],
  match: -1,
};

const AXIS_UNITS = [["d", 86400, "h", 3600], ["h", 3600, "min", 60], ["min", 60, "s", 1]];

function tickText(ms, last) {  // as dashboard/formats.py's axis_tick
  const lastSeconds = Math.round(last / 1000);
  if (lastSeconds >= 60) {
    const s = Math.round(ms / 1000);
    for (const [unit, size, smaller, smallSize] of AXIS_UNITS) {
      if (lastSeconds >= size) {
        const whole = Math.floor(s / size);
        const part = `${Math.floor((s % size) / smallSize)} ${smaller}`;
        return whole ? `${whole} ${unit} ${part}` : part;
      }
    }
  }
  if (last >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  return last < 1 ? `${ms.toFixed(3)} ms` : `${ms.toFixed(1)} ms`;
}

function applyZoom() {
  const [from, to] = waterfall.zoom;
  const span = to - from;
  for (const bar of document.querySelectorAll("ol.spans .bar")) {
    if (bar.dataset.left === undefined) {
      bar.dataset.left = parseFloat(bar.style.left);
      bar.dataset.width = parseFloat(bar.style.width);
    }
    const left = (Number(bar.dataset.left) / 100 - from) / span * 100;
    bar.style.left = `${left.toFixed(4)}%`;
    bar.style.width = `${(Number(bar.dataset.width) / span).toFixed(4)}%`;
  }
  const axis = document.querySelector(".axis[data-duration-ms]");
  const total = Number(axis.dataset.durationMs);
  axis.querySelectorAll(".tick").forEach((tick, i) => {
    tick.textContent = tickText(total * (from + span * i / 4), total * to);
  });
  const url = new URL(location.href);
  if (from === 0 && to === 1) url.searchParams.delete("zoom");
  else url.searchParams.set("zoom", `${from.toFixed(4)}-${to.toFixed(4)}`);
  history.replaceState(null, "", url);
  for (const link of document.querySelectorAll("nav.pager a")) {  // other pages keep it
    const to = new URL(link.href);
    if (url.searchParams.has("zoom")) to.searchParams.set("zoom", url.searchParams.get("zoom"));
    else to.searchParams.delete("zoom");
    link.href = to;
  }
  const reset = document.querySelector('[data-zoom="reset"]');
  reset.disabled = from === 0 && to === 1;
}

function zoomTo(from, to) {
  const width = Math.max(to - from, 1e-6);
  from = Math.max(0, Math.min(from, 1 - width));
  waterfall.zoom = [from, Math.min(1, from + width)];
  applyZoom();
}

function zoomBy(factor) {
  const [from, to] = waterfall.zoom;
  const middle = (from + to) / 2;
  const half = Math.min((to - from) * factor / 2, 0.5);
  zoomTo(middle - half, middle + half);
}

function axisFraction(axis, clientX) {  // a point of the axis, as a fraction of the trace
  const box = axis.getBoundingClientRect();
  const at = Math.max(0, Math.min(1, (clientX - box.left) / box.width));
  const [from, to] = waterfall.zoom;
  return from + at * (to - from);
}

function dragToZoom(axis) {
  let start = null;
  const band = document.createElement("span");
  band.className = "zoom-band";
  band.hidden = true;
  axis.append(band);
  axis.addEventListener("mousedown", (event) => {
    start = event.clientX;
    event.preventDefault();
  });
  document.addEventListener("mousemove", (event) => {
    if (start === null) return;
    const box = axis.getBoundingClientRect();
    const left = Math.max(Math.min(start, event.clientX), box.left);
    const right = Math.min(Math.max(start, event.clientX), box.right);
    band.hidden = false;
    band.style.left = `${left - box.left}px`;
    band.style.width = `${right - left}px`;
  });
  document.addEventListener("mouseup", (event) => {
    if (start === null) return;
    const a = axisFraction(axis, start);
    const b = axisFraction(axis, event.clientX);
    start = null;
    band.hidden = true;
    if (Math.abs(b - a) > 1e-4) zoomTo(Math.min(a, b), Math.max(a, b));
  });
}

function collapseToDepth(limit) {
  for (const row of waterfall.list().querySelectorAll(".span-row")) {
    const depth = Number(row.dataset.depth);
    row.hidden = limit !== null && depth >= limit;
    const toggle = row.querySelector("button.toggle");
    if (!toggle) continue;
    const collapsed = limit !== null && depth === limit - 1;
    toggle.setAttribute("aria-expanded", String(!collapsed && !row.hidden));
    toggle.textContent = collapsed ? "▸" : "▾";
    const name = toggle.getAttribute("aria-label").replace(/^(Collapse|Expand) /, "");
    toggle.setAttribute("aria-label", (collapsed ? "Expand " : "Collapse ") + name);
  }
}

function reveal(row) {  // open the collapsed rows above it
  const depth = Number(row.dataset.depth);
  let above = depth;
  for (let prev = row.previousElementSibling; prev && above > 0; prev = prev.previousElementSibling) {
    const d = Number(prev.dataset.depth);
    if (d < above) {
      above = d;
      const toggle = prev.querySelector("button.toggle");
      if (toggle && toggle.getAttribute("aria-expanded") === "false") setCollapsed(prev, false);
    }
  }
  row.hidden = false;
}

async function goTo(position, spanId, page) {
  const list = waterfall.list();
  const row = list.querySelector(`.span-row[data-span-id="${CSS.escape(spanId)}"]`);
  if (Number(list.dataset.page) !== page || !row) {
    const url = new URL(location.href);
    url.searchParams.set("page", page);
    url.searchParams.set("span", spanId);
    if (waterfall.query) {  // the search goes on on the other page
      url.searchParams.set("find", waterfall.query);
      url.searchParams.set("match", waterfall.match);
    }
    url.hash = "detail";
    location.assign(url);
    return;
  }
  reveal(row);
  if (await showSpan(list, row)) {
    const url = new URL(location.href);
    url.searchParams.set("span", spanId);
    history.replaceState(null, "", url);
  }
  row.scrollIntoView({block: "center"});
}

function currentPosition() {
  const row = waterfall.list().querySelector(".span-row.selected");
  return row ? Number(row.dataset.position) : -1;
}

function stepError(forward) {
  const errors = JSON.parse(document.getElementById("trace-errors").textContent);
  if (!errors.length) return;
  const here = currentPosition();
  let next = forward ? errors.find(([at]) => at > here) : errors.findLast(([at]) => at < here);
  if (!next) next = forward ? errors[0] : errors[errors.length - 1];  // wrap around
  goTo(...next);
}

async function search(form, query) {
  const count = document.getElementById("find-count");
  const url = `${form.action}?q=${encodeURIComponent(query)}`;
  const response = await fetch(url, {credentials: "same-origin"});
  if (!response.ok) {  // the reason, when the server gave one (a query too long, say)
    const reason = await response.json().then((body) => body.error.message, () => null);
    count.textContent = reason ? `cannot search: ${reason}` : "cannot search";
    return false;
  }
  const found = await response.json();
  waterfall.query = query;
  waterfall.matches = found.matches;
  for (const row of waterfall.list().querySelectorAll(".span-row.match")) row.classList.remove("match");
  for (const m of found.matches) {
    const row = waterfall.list().querySelector(`.span-row[data-span-id="${CSS.escape(m.spanId)}"]`);
    if (row) row.classList.add("match");
  }
  count.textContent = found.total ? `${found.total} matches` : "no match";
  return found.total > 0;
}

async function find(form) {
  const query = form.elements.q.value.trim();
  if (!query) return;
  if (query !== waterfall.query) {
    if (!(await search(form, query))) return;
    const here = currentPosition();
    const after = waterfall.matches.findIndex((m) => m.position > here);
    waterfall.match = (after < 0 ? 0 : after) - 1;
  }
  const matches = waterfall.matches;
  waterfall.match = (waterfall.match + 1) % matches.length;
  const m = matches[waterfall.match];
  document.getElementById("find-count").textContent = `${waterfall.match + 1} of ${matches.length}`;
  goTo(m.position, m.spanId, m.page);
}

async function resumeSearch(form) {  // after going to a match on another page
  const params = new URL(location.href).searchParams;
  const query = params.get("find");
  if (!query) return;
  form.elements.q.value = query;
  if (!(await search(form, query))) return;
  waterfall.match = Math.min(Number(params.get("match")) || 0, waterfall.matches.length - 1);
  document.getElementById("find-count").textContent =
    `${waterfall.match + 1} of ${waterfall.matches.length}`;
}

document.addEventListener("DOMContentLoaded", () => {
  const tools = document.querySelector(".waterfall-tools");
  if (!tools || !waterfall.list()) return;
  const asked = (new URL(location.href).searchParams.get("zoom") || "").split("-").map(Number);
  if (asked.length === 2 && asked.every((n) => n >= 0 && n <= 1) && asked[0] < asked[1]) {
    waterfall.zoom = asked;
  }
  applyZoom();
  dragToZoom(document.querySelector(".axis[data-duration-ms]"));
  // gone to on another page (an error, a match): its row in view beside its details,
  // where the two stand side by side (stacked, the link's #detail shows the details)
  const selected = waterfall.list().querySelector(".span-row.selected");
  if (location.hash === "#detail" && selected && matchMedia("(min-width: 761px)").matches) {
    selected.scrollIntoView({block: "center"});
  }
  tools.addEventListener("click", (event) => {
    const zoom = event.target.closest("[data-zoom]");
    if (zoom) {
      const how = zoom.dataset.zoom;
      if (how === "reset") zoomTo(0, 1);
      else zoomBy(how === "in" ? 0.5 : 2);
    }
    if (event.target.closest("#next-error")) stepError(true);
    if (event.target.closest("#previous-error")) stepError(false);
  });
  document.getElementById("collapse-depth").addEventListener("change", (event) => {
    collapseToDepth(event.target.value ? Number(event.target.value) : null);
  });
  const form = tools.querySelector("form.trace-find");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    find(event.target);
  });
  resumeSearch(form);
});
