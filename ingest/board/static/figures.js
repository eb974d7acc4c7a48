// The "Figures" section: the papers' figures for the selected experiment and studies, as
// `auditstream figures` draws them (GET /v1/board/figures/{paper}/{figure}, ingest/board/figures.py).
// Pure: which figures a selection shows, their paths, and the panel of drawn SVGs. The SVG
// is fetched with the key (an <img src> could not send it) and shown as a data: URL, which
// the page's img-src allows; an <img> never runs what an SVG holds.

import { h, panel } from "./view.js";

const q = encodeURIComponent;

// Each paper's figures (file names, as `auditstream figures` writes them) and their titles.
export const FIGURES = {
  powermeter: [
    ["figure4", "Figure 4: share of clicks by element type"],
    ["figure5", "Figure 5: pages with a box"],
    ["figure6", "Figure 6: δ1 and β1 of swap 1-2 across subsets"],
    ["figure8", "Figure 8: composition of result pages"],
    ["figure9", "Figure 9: the panel's age and languages"],
  ],
  personalization: [
    ["figure5_by_rank", "Hannak Figure 5: results changed per rank, per treatment"],
    ["figures6_11_by_treatment", "Hannak Figures 6-11: Jaccard and edit distance per treatment"],
    ["figure12_consistency_days", "Hannak Figure 12: day-to-day consistency per account"],
    ["figure13_consistency_categories", "Hannak Figure 13: day-to-day consistency per query category"],
    ["figure14_category_cdf", "Hannak Figure 14: CDFs per query category, one day"],
    ["figure15_grouped", "Hannak Figure 15: results changed per rank, personalized vs not"],
    ["figure16_rank1", "Hannak Figure 16: movement of the rank-1 result"],
  ],
  autocomplete: [
    ["figure2_depth", "RAI Figure 2: nodes per depth"],
    ["figure3_degrees", "RAI Figure 3: degree distributions"],
    ["figure4_lengths", "RAI Figure 4: query length"],
    ["figure5_churn", "RAI Figure 5: churn by rank and depth"],
    ["figure6_survival", "RAI Figure 6: survival of suggestions"],
    ["figure7_nmi", "RAI Figure 7: nmi over time"],
    ["figure9_associations", "RAI Figure 9: association network degrees"],
  ],
};

export const figurePath = (paper, name, param, value) => `/v1/board/figures/${q(paper)}/${q(name)}?${param}=${q(value)}`;

// The figures of a selection {experiment, engine, ac, ps}: Figure 3 of the selected engine
// and the experiment's others; the personalization study's; the autocomplete prefix's.
export function figureList({ experiment, engine, ac, ps }) {
  const out = [];
  if (experiment) {
    const mine = [[`figure3_${engine || "google"}`, `Figure 3 (${engine || "google"}): CTR and performativity gap`], ...FIGURES.powermeter];
    for (const [name, title] of mine) out.push({ paper: "powermeter", name, title, path: figurePath("powermeter", name, "experiment", experiment) });
  }
  if (ps) for (const [name, title] of FIGURES.personalization) out.push({ paper: "personalization", name, title, path: figurePath("personalization", name, "study", ps) });
  if (ac) for (const [name, title] of FIGURES.autocomplete) out.push({ paper: "autocomplete", name, title, path: figurePath("autocomplete", name, "study", ac) });
  return out;
}

// What the figures were drawn for: they are drawn again only when it changes.
export const selectionKey = ({ experiment, engine, ac, ps }) => JSON.stringify([experiment || "", engine || "", ac || "", ps || ""]);

export const svgDataUrl = (text) => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(text)}`;

// The panel of drawn figures: each [item, {svg} | {error}] an <img> with its title, or the error.
export function figuresPanel(drawn) {
  const nodes = drawn.map(([item, got]) =>
    h(
      "figure",
      { class: "paper-figure", "data-paper": item.paper, "data-figure": item.name, "data-state": got.error ? "error" : "ready" },
      got.error ? h("p", { class: "note error", text: `${item.title}: ${got.error}` }) : h("img", { src: svgDataUrl(got.svg), alt: item.title }),
      h("figcaption", { text: item.title }),
    ),
  );
  return panel(nodes.length, nodes, "Choose an experiment or a study to draw its figures.", { figures: nodes.length });
}
