// Figure 5: the box subset (pages with a shopping box), gaps against its baseline arm.
// Reads the experiment answer only through the field lists below (see fields.js).

import { estimates } from "./estimate.js";
import { pick, pickEach } from "./fields.js";
import { ciText, fmt, positions } from "./format.js";
import { cell, dataTable, h, note, panel } from "./view.js";

/** The fields of the experiment answer (BoardExperimentPanel) the box panel reads. */
export const BOX_ANSWER_FIELDS = ["box_subset"];

/** The fields of `box_subset` (Figure3) the box panel reads. */
export const BOX_FIELDS = ["baseline", "has_baseline", "ranks", "arms"];

/** The fields of an arm of `box_subset.arms` (Figure3Arm) the box panel reads; `ctr`,
 * `delta` and `beta` are lists of estimates (ESTIMATE_FIELDS). */
export const BOX_ROW_FIELDS = ["arm", "units", "ctr", "delta", "beta"];

export function boxPanel(answer) {
  const box = pick(pick(answer, BOX_ANSWER_FIELDS, "").box_subset, BOX_FIELDS, "box_subset");
  const arms = pickEach(box.arms, BOX_ROW_FIELDS, "box_subset.arms").map((a, i) => {
    const where = `box_subset.arms[${i}]`;
    const read = { ctr: estimates(a.ctr, `${where}.ctr`), delta: estimates(a.delta, `${where}.delta`), beta: estimates(a.beta, `${where}.beta`) };
    return pick({ ...a, ...read }, BOX_ROW_FIELDS, where);
  });
  const cols = positions(box.ranks);
  const rows = arms.map((a) =>
    h(
      "tr",
      { "data-arm": a.arm },
      cell(a.arm),
      cell(String(a.units), { field: "units", arm: a.arm, value: a.units }),
      a.ctr.map((e, i) => cell(fmt(e.value), { field: `ctr_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
      a.delta.length
        ? cell(fmt(a.delta[0].value), { field: "delta_c1", arm: a.arm, value: a.delta[0].value, ci: ciText(a.delta[0]) })
        : cell(a.arm === box.baseline ? "baseline" : "–"),
      a.beta.length ? cell(fmt(a.beta[0].value, 2), { field: "beta_c1", arm: a.arm, value: a.beta[0].value, ci: ciText(a.beta[0]) }) : cell(""),
    ),
  );
  const explain = box.has_baseline
    ? `Pages with a shopping box only; δ and β against ${box.baseline} (the paper's Figure 5), 95% CI.`
    : `No ${box.baseline} arm among pages with a box: no gaps.`;
  return panel(arms.length, [dataTable(["arm", "units", ...cols.map((p) => `CTR ${p}`), "δ c1", "β c1"], rows), note(explain)], "No units on pages with a shopping box yet.");
}
