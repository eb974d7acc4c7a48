// The autocomplete study (GET /v1/board/autocomplete): churn by rank × depth per engine,
// and nmi per crawl round with its shocks marked.

import { heatmap, nmiChart, shockCounts } from "./charts.js";
import { h, legend, note, panel } from "./view.js";

export const studyTitle = (answer) => (answer.study ? `crawls ${answer.study}*` : "every crawl");

// Cells of the churn grids that have a value (the churn panel's rows).
export const churnCells = (churn) => churn.reduce((acc, g) => acc + g.churn.flat().filter((v) => v !== null).length, 0);

// Every shocked round of every engine, with its engine.
export const shocksOf = (nmi) => nmi.flatMap((sr) => sr.rounds.filter((p) => p.shock).map((p) => ({ ...p, engine: sr.engine })));

export function churnPanel(answer) {
  const explain = "1 − Jaccard of the suggestion sets at each rank and depth between a root's consecutive completed crawls, averaged over roots and crawl pairs.";
  return panel(churnCells(answer.churn), [h("div", { class: "charts" }, answer.churn.map(heatmap)), note(explain)], "No pair of completed crawls yet.");
}

export function nmiPanel(answer) {
  const rounds = answer.nmi.reduce((acc, sr) => acc + sr.rounds.length, 0);
  const shocks = shocksOf(answer.nmi);
  return panel(
    rounds,
    [
      h("div", { class: "charts" }, answer.nmi.map(nmiChart)),
      legend([["mean nmi over roots", "#1f4e79"], ["lowest root", "#9aa3ad"], ["shock (alert raised)", "#b3261e"]]),
      shocks.map((p) => {
        const [dropped, evaluated] = shockCounts(p);
        return h("p", { class: "note error", "data-shock": p.crawl_id, text: `shock · ${p.engine} · ${p.crawl_id}: ${dropped} of ${evaluated} roots dropped below their baseline` });
      }),
    ],
    "nmi needs two completed crawls of a root.",
    { shocks: shocks.length },
  );
}

// {title, panels: {section id: panel}} of an answer.
export function autocompleteViews(answer) {
  return { title: studyTitle(answer), panels: { "panel-churn": churnPanel(answer), "panel-nmi": nmiPanel(answer) } };
}
