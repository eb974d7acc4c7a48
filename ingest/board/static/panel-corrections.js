// Issue 38: the family's tests corrected for their number, beside Figure 3's unadjusted
// intervals (each test: estimate, unadjusted CI, p, adjusted p, the family's CI, rejected),
// and, when asked for, the variance-reduced estimates beside the plain ones with their
// width ratio. Reads the experiment answer (openapi_models.BoardExperimentPanel; its
// `corrections` and `variance_reduction` are studies/arrangement/answers.py's Corrections
// and VarianceReduction) only through the field lists below (see fields.js).

import { pick, pickEach } from "./fields.js";
import { fmt } from "./format.js";
import { cell, dataTable, h, note, panel } from "./view.js";

/** The fields of the experiment answer (BoardExperimentPanel) the panel reads: `correction`
 * is the method asked for, `corrections` null for "none" (or without a control arm),
 * `variance_reduction` null unless asked for (or the arms' registered weights are unknown). */
export const CORRECTIONS_ANSWER_FIELDS = ["correction", "corrections", "variance_reduction"];

/** The fields of `corrections` (Corrections) the panel reads. */
export const CORRECTIONS_FIELDS = ["method", "family", "description", "level", "tests", "untested"];

/** The fields of a test of `corrections.tests` (FamilyTestAnswer) the panel reads. */
export const FAMILY_TEST_FIELDS = [
  "quantity",
  "arm",
  "rank",
  "estimate",
  "p_value",
  "adjusted_p_value",
  "rejected",
  "ci_low",
  "ci_high",
  "family_ci_low",
  "family_ci_high",
  "family_level",
];

/** The fields of `variance_reduction` (VarianceReduction) the panel reads. */
export const REDUCTION_FIELDS = ["method", "level", "estimates"];

/** The fields of an estimate of `variance_reduction.estimates` (ReducedEstimate) the panel reads. */
export const REDUCED_FIELDS = [
  "quantity",
  "arm",
  "rank",
  "estimate",
  "ci_low",
  "ci_high",
  "plain_estimate",
  "plain_ci_low",
  "plain_ci_high",
  "width_ratio",
];

/** The corrections the board offers, as the `correction` parameter names them, in words. */
export const CORRECTION_NAMES = {
  holm: "Holm",
  bh: "Benjamini-Hochberg",
  bonferroni: "Bonferroni",
  none: "no correction",
};

const QUANTITY = { delta: "δ", beta: "β" };
const level = (l) => (l === null || l === undefined ? "–" : `${+(100 * l).toFixed(2)}%`);
const interval = (low, high) => (low === null || high === null ? "–" : `[${fmt(low)}, ${fmt(high)}]`);
const pText = (p) => (p === null || p === undefined ? "–" : p < 0.0001 ? p.toExponential(1) : p.toFixed(4));
// "δ swap_1_2 c1": one member of the family
const testName = (t) => `${QUANTITY[t.quantity] || t.quantity} ${t.arm} c${t.rank}`;

// The panel's title: the method and the family it corrects.
export function correctionsTitle(correction, corrections) {
  if (!corrections) return `Family of tests: ${CORRECTION_NAMES[correction] || correction}`;
  const n = corrections.tests.length;
  return `${CORRECTION_NAMES[corrections.method] || corrections.method} over ${n} test${n === 1 ? "" : "s"}: ${corrections.family}`;
}

function testRows(c) {
  const tests = pickEach(c.tests, FAMILY_TEST_FIELDS, "corrections.tests");
  const rows = tests.map((t) => {
    const key = `${t.quantity}_c${t.rank}`;
    return h(
      "tr",
      { "data-arm": t.arm, "data-test": `${t.quantity}/${t.arm}/${t.rank}`, "data-rejected": t.rejected ? "1" : "0" },
      cell(testName(t)),
      cell(fmt(t.estimate), { field: key, arm: t.arm, value: t.estimate }),
      cell(interval(t.ci_low, t.ci_high)),
      cell(pText(t.p_value), { field: `p_${key}`, arm: t.arm, value: t.p_value }),
      cell(pText(t.adjusted_p_value), { field: `adjusted_p_${key}`, arm: t.arm, value: t.adjusted_p_value }),
      cell(`${interval(t.family_ci_low, t.family_ci_high)} at ${level(t.family_level)}`),
      cell(t.rejected ? "yes" : "no", { field: `rejected_${key}`, arm: t.arm, value: t.rejected }),
    );
  });
  const table = dataTable(["test", "estimate", `${level(c.level)} CI, unadjusted`, "p", "adjusted p", "family CI", "rejected"], rows);
  const untested = c.untested.length ? note(`Not testable in this selection: ${c.untested.map((m) => m.join(" ")).join(", ")}.`, { "data-untested": String(c.untested.length) }) : null;
  return { count: tests.length, nodes: [table, note(`${c.description}.`), untested] };
}

function reducedRows(vr) {
  const estimates = pickEach(vr.estimates, REDUCED_FIELDS, "variance_reduction.estimates");
  const rows = estimates.map((e) => {
    const key = `${e.quantity}_c${e.rank}`;
    return h(
      "tr",
      { "data-arm": e.arm, "data-reduced": `${e.quantity}/${e.arm}/${e.rank}` },
      cell(testName(e)),
      cell(fmt(e.estimate), { field: `reduced_${key}`, arm: e.arm, value: e.estimate, ci: interval(e.ci_low, e.ci_high) }),
      cell(fmt(e.plain_estimate), { field: `plain_${key}`, arm: e.arm, value: e.plain_estimate, ci: interval(e.plain_ci_low, e.plain_ci_high) }),
      cell(fmt(e.width_ratio, 2), { field: `width_ratio_${key}`, arm: e.arm, value: e.width_ratio }),
    );
  });
  const table = dataTable(["estimate", `reduced [${level(vr.level)} CI]`, `plain [${level(vr.level)} CI]`, "width ratio"], rows);
  return { count: estimates.length, nodes: [h("h4", { text: "Variance reduction" }), table, note(`Variance reduction: ${vr.method}.`)] };
}

// The family's tests and (asked for) the variance-reduced estimates; the title names the
// method and the family. data-correction says which correction was asked for.
export function correctionsPanel(answer) {
  const d = pick(answer, CORRECTIONS_ANSWER_FIELDS, "");
  const c = d.corrections === null ? null : pick(d.corrections, CORRECTIONS_FIELDS, "corrections");
  const tests = c ? testRows(c) : { count: 0, nodes: [] };
  const vr = d.variance_reduction === null ? null : pick(d.variance_reduction, REDUCTION_FIELDS, "variance_reduction");
  const reduced = vr ? reducedRows(vr) : { count: 0, nodes: [] };
  const nodes = [...tests.nodes];
  if (!c) nodes.push(note(d.correction === "none" ? "No correction asked for (correction: none): Figure 3's intervals are unadjusted." : "No family to test yet: it needs a control arm."));
  nodes.push(...reduced.nodes);
  const empty = d.correction === "none" ? "No correction asked for (correction: none)." : "No family to test yet: it needs a control arm and units.";
  const drawn = panel(tests.count + reduced.count, nodes, empty, { correction: d.correction, reduced: vr ? reduced.count : 0 });
  return { ...drawn, title: correctionsTitle(d.correction, c) };
}
