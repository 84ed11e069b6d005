// The waterfall's two conveniences; every page also works without this script.
// Collapse: a row's descendants are the rows after it with a greater depth.
// Select: a span's details are fetched and shown beside the waterfall, without a reload.
"use strict";

// The controls that need a script are shown only where one runs (dashboard.css).
document.documentElement.classList.remove("no-js");

function rowsUnder(row) {
  const depth = Number(row.dataset.depth);
  const under = [];
  for (let next = row.nextElementSibling; next; next = next.nextElementSibling) {
    if (Number(next.dataset.depth) <= depth) break;
    under.push(next);
  }
  return under;
}

function setCollapsed(row, collapsed) {
  const button = row.querySelector("button.toggle");
  button.setAttribute("aria-expanded", String(!collapsed));
  button.textContent = collapsed ? "▸" : "▾";
  const name = button.getAttribute("aria-label").replace(/^(Collapse|Expand) /, "");
  button.setAttribute("aria-label", (collapsed ? "Expand " : "Collapse ") + name);
  let hiddenBelow = -1;  // depth of a still-collapsed row whose rows stay hidden
  for (const child of rowsUnder(row)) {
    const depth = Number(child.dataset.depth);
    if (hiddenBelow >= 0 && depth <= hiddenBelow) hiddenBelow = -1;
    child.hidden = collapsed || hiddenBelow >= 0;
    const toggle = child.querySelector("button.toggle");
    if (!collapsed && hiddenBelow < 0 && toggle && toggle.getAttribute("aria-expanded") === "false") {
      hiddenBelow = depth;
    }
  }
}

async function showSpan(list, row) {
  const detail = document.getElementById("detail");
  const response = await fetch(list.dataset.detailBase + encodeURIComponent(row.dataset.spanId),
                               {credentials: "same-origin"});
  if (!response.ok) return false;
  detail.innerHTML = await response.text();
  detail.scrollTop = 0;
  for (const other of list.querySelectorAll(".span-row.selected")) other.classList.remove("selected");
  row.classList.add("selected");
  const scored = document.getElementById("score-span");  // a score given now is this span's
  if (scored) scored.value = row.dataset.spanId;
  return true;
}

document.addEventListener("click", async (event) => {
  const row = event.target.closest(".span-row");
  const list = event.target.closest("ol.spans");
  if (!row || !list) return;
  if (event.target.closest("button.toggle")) {
    const expanded = row.querySelector("button.toggle").getAttribute("aria-expanded") === "true";
    setCollapsed(row, expanded);
    return;
  }
  const link = event.target.closest(".label a");
  if (link && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
    event.preventDefault();
    if (await showSpan(list, row)) {
      const url = new URL(link.href);
      const zoom = new URL(location.href).searchParams.get("zoom");  // the zoom stays
      if (zoom) url.searchParams.set("zoom", zoom);
      history.replaceState(null, "", url);
    }
  }
});

// Copy buttons: the text of the element their data-copy names.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const text = document.getElementById(button.dataset.copy).textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    window.getSelection().selectAllChildren(document.getElementById(button.dataset.copy));
    button.textContent = "Selected: press Ctrl+C";
  }
});

// Long values: "Show all" unfolds (and folds again); "Raw" shows messages as sent.
document.addEventListener("click", (event) => {
  const more = event.target.closest("button.show-all");
  if (more) {
    if (!more.dataset.label) more.dataset.label = more.textContent;
    const open = !more.previousElementSibling.classList.toggle("folded");
    more.setAttribute("aria-expanded", String(open));
    more.textContent = open ? "Show less" : more.dataset.label;
    return;
  }
  const raw = event.target.closest("button.raw-toggle");
  if (raw) {
    const section = raw.closest("section.llm");
    const on = section.classList.toggle("show-raw");
    raw.setAttribute("aria-pressed", String(on));
  }
});

// Times: each <time data-ms> reads in local time with how long ago; its title keeps UTC.
function ago(ms) {
  const seconds = Math.round((Date.now() - ms) / 1000);
  if (seconds < 0) return "in the future";
  const steps = [[60, "s", 1], [3600, "min", 60], [86400, "h", 3600], [2592000, "d", 86400]];
  for (const [below, unit, size] of steps) {
    if (seconds < below) return `${Math.floor(seconds / size)} ${unit} ago`;
  }
  return null;  // over 30 days: the date says enough
}

function localTimes(root) {
  const two = (n) => String(n).padStart(2, "0");
  for (const time of root.querySelectorAll("time[data-ms]:not([datetime])")) {
    const ms = Number(time.dataset.ms);
    const at = new Date(ms);
    time.setAttribute("datetime", at.toISOString());
    const local = `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ` +
      `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
    const since = ago(ms);
    time.textContent = local;
    if (since) {
      const after = document.createElement("span");
      after.className = "ago";
      after.textContent = ` (${since})`;
      time.append(after);
    }
  }
}

document.addEventListener("DOMContentLoaded", () => localTimes(document));
new MutationObserver(() => localTimes(document)).observe(document.documentElement,
                                                        {childList: true, subtree: true});

// Time fields (`from`, `to`): a date and time typed without an offset is the browser's
// local time, as every time on the page reads; it is sent with that offset. (Without
// JavaScript the server reads it as UTC, which the field's hint then says.) ISO 8601's
// extended and basic forms, to the day, hour, minute or second; a time that a clock
// change skips is read as the browser reads it (moved on by the change).
const NO_OFFSET = /^(\d{4})-?(\d\d)-?(\d\d)(?:[Tt ](\d\d)(?::?(\d\d)(?::?(\d\d)([.,]\d+)?)?)?)?$/;

function withLocalOffset(text) {
  const found = NO_OFFSET.exec(text.trim());
  if (!found) return text;
  const [, year, month, day, hour = "0", minute = "0", second = "0", fraction = ""] = found;
  const at = new Date(+year, +month - 1, +day, +hour, +minute, +second);
  const east = -at.getTimezoneOffset();
  const two = (n) => String(n).padStart(2, "0");
  const offset = `${east < 0 ? "-" : "+"}${two(Math.floor(Math.abs(east) / 60))}:${two(Math.abs(east) % 60)}`;
  const date = `${String(at.getFullYear()).padStart(4, "0")}-${two(at.getMonth() + 1)}-${two(at.getDate())}`;
  const time = `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
  return `${date}T${time}${fraction.replace(",", ".")}${offset}`;
}

document.addEventListener("submit", (event) => {
  for (const field of event.target.querySelectorAll('input[name="from"], input[name="to"]')) {
    field.value = withLocalOffset(field.value);
  }
});

document.addEventListener("DOMContentLoaded", () => {
  for (const hint of document.querySelectorAll("[data-zone]")) hint.textContent = "local time";
});

// A form that asks for a page (GET: the filters) sends the fields given, not each empty
// one, so that the page's link, which people share, holds what was asked alone. The
// fields left out come back as the page is shown again (the browser's back button).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.method !== "get") return;
  for (const field of form.elements) {
    if (field.name && field.value === "" && !field.disabled) {
      field.disabled = true;
      field.dataset.leftOut = "";
    }
  }
});
window.addEventListener("pageshow", () => {
  for (const field of document.querySelectorAll("[data-left-out]")) {
    field.disabled = false;
    delete field.dataset.leftOut;
  }
});

// The live view (the newest page of the trace list, every 5 s): the list alone is
// fetched again and put in place, so that a filter being typed stays as it is; an
// answer that is no list (the sign-in page, once signed out) is loaded as the page.
// A server error is tried again at the next turn. (Without JavaScript the page's own
// refresh loads it anew.)
document.addEventListener("DOMContentLoaded", () => {
  const live = document.getElementById("results");
  if (!live || !live.dataset.liveMs) return;
  let fetching = false;
  setInterval(async () => {
    if (fetching || document.hidden) return;
    fetching = true;
    try {
      const response = await fetch(location.href, {credentials: "same-origin"});
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("results");
      if (fresh) {
        document.getElementById("results").replaceWith(document.adoptNode(fresh));
      } else if (response.redirected || response.status < 500) {
        location.reload();  // signed out, say: the page itself says what to do
      }
    } catch {
      // offline a moment: the next turn tries again
    } finally {
      fetching = false;
    }
  }, Number(live.dataset.liveMs));
});
