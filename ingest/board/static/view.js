// What a panel draws, as plain data: a view is {tag, svg, attrs, children} (children are
// views or strings), built without a DOM so node tests can read it; dom.js turns a view
// into nodes. The attribute `text` is the node's text (textContent: data, never markup).

const absent = (v) => v === null || v === undefined || v === false;

function view(tag, svg, attrs, children) {
  const kept = {};
  for (const [k, v] of Object.entries(attrs || {})) if (!absent(v)) kept[k] = v;
  return { tag, svg, attrs: kept, children: children.flat(Infinity).filter((c) => !absent(c)) };
}

// An HTML element.
export const h = (tag, attrs, ...children) => view(tag, false, attrs, children);

// An SVG element.
export const s = (tag, attrs, ...children) => view(tag, true, attrs, children);

// A panel's content: `rows` (0 draws `empty` instead of `nodes`) and `data`, the extra
// data-* attributes of the panel (read by the integration test and by people).
export const panel = (rows, nodes, empty, data = {}) => ({ rows, nodes: nodes.flat(Infinity).filter((n) => !absent(n)), empty, data });

// A cell of a data table; `field` and `value` make the number readable from the DOM
// (data-field, data-arm, data-value), `ci` is its interval, after the text.
export function cell(text, opts = {}) {
  return h(
    "td",
    {
      "data-field": opts.field,
      "data-arm": opts.arm,
      "data-value": opts.value === undefined || opts.value === null ? null : String(opts.value),
      text,
    },
    opts.ci ? h("span", { class: "ci", text: opts.ci }) : null,
  );
}

export function dataTable(headers, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h("table", { class: "data" }, h("thead", {}, h("tr", {}, headers.map((t) => h("th", { text: t })))), h("tbody", {}, rows)),
  );
}

export function swatch(color) {
  return s("svg", { width: 12, height: 12, "aria-hidden": "true" }, s("rect", { width: 12, height: 12, rx: 2, fill: color }));
}

// [[label, colour], ...] as a row of swatches.
export function legend(items) {
  return h("div", { class: "legend" }, items.map(([label, color]) => h("span", {}, swatch(color), label)));
}

export const note = (text, attrs = {}) => h("p", { class: "note", ...attrs, text });
