// Figure 4: the share of each arm's clicks by element type, as stacked bars and a table.
// Reads the experiment answer only through the field lists below (see fields.js).

import { stackedBars } from "./charts.js";
import { pick, pickEach } from "./fields.js";
import { pct } from "./format.js";
import { cell, dataTable, h, legend, panel } from "./view.js";

export const ELEMENTS = [
  ["organic", "#4a7fb5"],
  ["ad", "#e07b39"],
  ["shopping_box", "#2e8b57"],
  ["ssr", "#d4a017"],
  ["other", "#9aa3ad"],
];

/** The fields of the experiment answer (BoardExperimentPanel) the shares panel reads. */
export const SHARES_ANSWER_FIELDS = ["element_shares"];

/** The fields of a row of `element_shares` (ElementShare) the shares panel reads. */
export const SHARE_FIELDS = ["arm", "clicks", ...ELEMENTS.map(([name]) => name)];

export function sharesPanel(answer) {
  const shares = pickEach(pick(answer, SHARES_ANSWER_FIELDS, "").element_shares, SHARE_FIELDS, "element_shares");
  const bars = shares.map((r) => ({ label: r.arm, shares: r }));
  return panel(
    shares.length,
    [
      legend(ELEMENTS),
      stackedBars(bars, ELEMENTS),
      dataTable(
        ["arm", "clicks", ...ELEMENTS.map(([n]) => n)],
        shares.map((r) =>
          h(
            "tr",
            { "data-arm": r.arm },
            cell(r.arm),
            cell(String(r.clicks), { field: "clicks", arm: r.arm, value: r.clicks }),
            ELEMENTS.map(([n]) => cell(pct(r[n]), { field: n, arm: r.arm, value: r[n] })),
          ),
        ),
      ),
    ],
    "No clicks after preprocessing yet.",
  );
}
