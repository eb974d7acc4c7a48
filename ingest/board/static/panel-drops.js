// Preprocessing: units per arm before it, dropped by each rule, kept, and their totals.
// Reads the experiment answer only through the field lists below (see fields.js).

import { pick, pickEach } from "./fields.js";
import { cell, dataTable, h, panel } from "./view.js";

/** The fields of the experiment answer (BoardExperimentPanel) the drops panel reads. */
export const DROPS_ANSWER_FIELDS = ["drops", "burn_in_days"];

/** The fields of a row of `drops` (BoardDrops) the drops panel reads, in its columns' order. */
export const DROP_FIELDS = ["arm", "all_units", "burn_in_dropped", "unidentified_dropped", "kept"];

const COUNTS = DROP_FIELDS.slice(1);

// {column: sum over arms} of the counted columns.
export function dropTotals(drops) {
  return Object.fromEntries(COUNTS.map((k) => [k, drops.reduce((acc, r) => acc + r[k], 0)]));
}

export function dropsPanel(answer) {
  const d = pick(answer, DROPS_ANSWER_FIELDS, "");
  const drops = pickEach(d.drops, DROP_FIELDS, "drops");
  const total = dropTotals(drops);
  return panel(
    drops.length,
    [
      dataTable(
        ["arm", "all units", `burn-in (< ${d.burn_in_days} d)`, "unidentified", "kept"],
        [
          ...drops.map((r) => h("tr", { "data-arm": r.arm }, cell(r.arm), COUNTS.map((k) => cell(String(r[k]), { field: k, arm: r.arm, value: r[k] })))),
          h("tr", { class: "total" }, cell("total"), COUNTS.map((k) => cell(String(total[k]), { field: k, arm: "*", value: total[k] }))),
        ],
      ),
    ],
    "No units yet.",
  );
}
