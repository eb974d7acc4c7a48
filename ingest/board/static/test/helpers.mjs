// Reading views (view.js) in tests, and the example answers in fixtures/ (written by hand in
// the shapes of ingest/openapi_models.py: BoardExperimentPanel, BoardAutocompletePanel,
// BoardPersonalizationPanel, BoardAlerts, BoardIndex; they validate against those models).

import { readFileSync } from "node:fs";

// An answer of fixtures/, a fresh copy each call.
export const fixture = (name) => JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), "utf8"));

// Every view below (and including) `v` that `pred` accepts.
export function findAll(v, pred) {
  if (typeof v === "string") return [];
  return [...(pred(v) ? [v] : []), ...v.children.flatMap((c) => findAll(c, pred))];
}

// The text a view shows (text attributes and text children, in order).
export function textOf(v) {
  if (typeof v === "string") return v;
  return (v.attrs.text === undefined ? "" : String(v.attrs.text)) + v.children.map(textOf).join("");
}

// The text of a panel (view.panel): its nodes, or its empty note.
export const panelText = (p) => (p.rows > 0 ? p.nodes.map(textOf).join("\n") : p.empty);

// The table cells of a panel that carry a number: {"arm/field": {text, value, ci}}.
export function cells(p) {
  const out = {};
  for (const td of p.nodes.flatMap((n) => findAll(n, (v) => v.tag === "td" && v.attrs["data-field"] !== undefined))) {
    const ci = td.children.find((c) => typeof c !== "string" && c.attrs.class === "ci");
    out[`${td.attrs["data-arm"]}/${td.attrs["data-field"]}`] = { text: td.attrs.text, value: td.attrs["data-value"], ci: ci ? ci.attrs.text : "" };
  }
  return out;
}

// The bars (rect with a title) of the charts of a panel: [title text].
export const barTitles = (p) => p.nodes.flatMap((n) => findAll(n, (v) => v.tag === "rect" && v.children.length)).map(textOf);
