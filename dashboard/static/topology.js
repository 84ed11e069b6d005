// The topology's zoom and pan: the SVG fits its frame (its viewBox shows the whole graph,
// scaled down to fit, never up);
// Zoom in/out scale the viewBox about its centre, dragging moves it, Fit shows it all.
// A drag that moves the graph does not follow the node link it started on.
"use strict";

function topologyBox(svg) {
  return svg.viewBox.baseVal;
}

function setBox(svg, x, y, width, height) {
  svg.setAttribute("viewBox", `${x.toFixed(1)} ${y.toFixed(1)} ${width.toFixed(1)} ${height.toFixed(1)}`);
}

function zoomTopology(svg, factor) {
  const box = topologyBox(svg);
  const width = box.width * factor;
  const height = box.height * factor;
  setBox(svg, box.x + (box.width - width) / 2, box.y + (box.height - height) / 2, width, height);
}

function fitTopology(svg) {  // all of it, centred, never drawn larger than its own size
  const width = Number(svg.dataset.width);
  const height = Number(svg.dataset.height);
  const frame = svg.getBoundingClientRect();
  const boxWidth = Math.max(width, frame.width);
  const boxHeight = Math.max(height, frame.height);
  setBox(svg, (width - boxWidth) / 2, (height - boxHeight) / 2, boxWidth, boxHeight);
}

function panTopology(svg) {
  let from = null;
  let moved = false;
  svg.addEventListener("pointerdown", (event) => {
    from = {x: event.clientX, y: event.clientY, box: topologyBox(svg)};
    from.box = {x: from.box.x, y: from.box.y, width: from.box.width, height: from.box.height};
    moved = false;
  });
  svg.addEventListener("pointermove", (event) => {
    if (!from) return;
    const dx = event.clientX - from.x;
    const dy = event.clientY - from.y;
    if (!moved && Math.hypot(dx, dy) < 4) return;
    if (!moved) svg.setPointerCapture(event.pointerId);
    moved = true;
    svg.classList.add("panning");
    const scale = from.box.width / svg.getBoundingClientRect().width;
    setBox(svg, from.box.x - dx * scale, from.box.y - dy * scale, from.box.width, from.box.height);
  });
  const end = () => {
    from = null;
    svg.classList.remove("panning");
  };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);
  svg.addEventListener("click", (event) => {
    if (moved) event.preventDefault();  // the drag moved the graph: no node is opened
    moved = false;
  }, true);
}

document.addEventListener("DOMContentLoaded", () => {
  const svg = document.querySelector("svg.topology");
  const tools = document.querySelector(".topology-tools");
  if (!svg || !tools) return;
  fitTopology(svg);
  panTopology(svg);
  tools.addEventListener("click", (event) => {
    const button = event.target.closest("[data-topology]");
    if (!button) return;
    const how = button.dataset.topology;
    if (how === "fit") fitTopology(svg);
    else zoomTopology(svg, how === "in" ? 0.7 : 1 / 0.7);
  });
});
