// The only module that touches the page: views (view.js) become nodes, panels and
// selectors are filled, the status line is set. Kept thin; what to draw is decided elsewhere.

import { h } from "./view.js";

const SVG_NS = "http://www.w3.org/2000/svg";

// A view (or a string) as a DOM node of `doc`.
export function build(doc, v) {
  if (typeof v === "string") return doc.createTextNode(v);
  const node = v.svg ? doc.createElementNS(SVG_NS, v.tag) : doc.createElement(v.tag);
  for (const [k, value] of Object.entries(v.attrs)) {
    if (k === "text") node.textContent = String(value);
    else node.setAttribute(k, String(value));
  }
  for (const child of v.children) node.appendChild(build(doc, child));
  return node;
}

// Draw a panel (view.panel) into the section `id`: its nodes, or its empty note when it
// has no rows; data-rows, data-state (ready or empty) and its data-* attributes; and its
// `title`, when it has one, into the heading's .title (what the panel shows depends on the answer).
export function setPanel(doc, id, p) {
  const section = doc.getElementById(id);
  const title = p.title ? section.querySelector(".title") : null;
  if (title) title.textContent = p.title;
  const body = section.querySelector(".body");
  body.replaceChildren();
  section.dataset.rows = String(p.rows);
  section.dataset.state = p.rows > 0 ? "ready" : "empty";
  for (const [k, v] of Object.entries(p.data || {})) section.dataset[k] = String(v);
  if (p.rows > 0) for (const v of p.nodes) body.appendChild(build(doc, v));
  else body.appendChild(build(doc, h("p", { class: "note", text: p.empty })));
}

// Mark panels as not current: what was drawn stays, with a note saying why.
export function panelError(doc, ids, message) {
  for (const id of ids) {
    const section = doc.getElementById(id);
    section.dataset.state = "error";
    const body = section.querySelector(".body");
    let line = body.querySelector(".note.error");
    if (!line) {
      line = doc.createElement("p");
      line.setAttribute("class", "note error");
      body.prepend(line);
    }
    line.textContent = `could not refresh: ${message}`;
  }
}

// Options [[value, label], ...] of a <select>, rebuilt only when they changed.
export function fillSelect(doc, select, options, value) {
  const signature = JSON.stringify(options);
  if (select.dataset.signature !== signature) {
    select.replaceChildren(...options.map(([v, label]) => build(doc, h("option", { value: v, text: label }))));
    select.dataset.signature = signature;
  }
  select.value = value;
}

export function setStatus(doc, kind, text) {
  const el = doc.getElementById("status");
  el.dataset.state = kind;
  el.textContent = text;
}
