// Figure 3 of the arrangement experiment: the CTR panel (CTR per position by arm, with
// intervals) and the gap panel (δ against control and β per position, the reweighted
// Figure 3, the interval guarantee, the decision line and the performative-power bound).
// Both read the experiment answer (openapi_models.BoardExperimentPanel) only through the
// field lists below; a field a list names that the answer lacks raises MissingField
// (fields.js), and the board shows that on the panels instead of drawing.

import { WIDE, barChart } from "./charts.js";
import { estimates } from "./estimate.js";
import { pick, pickEach } from "./fields.js";
import { armColors, ciText, fmt, positions } from "./format.js";
import { cell, dataTable, h, legend, note, panel } from "./view.js";

/** The fields of the answer's `figure3` (Figure3) both panels read. */
export const FIGURE3_FIELDS = ["ranks", "arms", "performative_power_lower_bound"];

/** The fields of an arm of `figure3.arms` (Figure3Arm) the CTR panel reads; `ctr` is a
 * list of estimates, one per position (ESTIMATE_FIELDS). */
export const FIGURE3_ROW_FIELDS = ["arm", "units", "installs", "ctr"];

/** The fields of an arm of `figure3.arms` (Figure3Arm) the gap panel reads; `delta` and
 * `beta` are lists of estimates (ESTIMATE_FIELDS), empty for the control arm. */
export const GAP_ROW_FIELDS = ["arm", "delta", "beta"];

/** The fields of the answer the decision line and the interval note read:
 * `decisions` is null or {arm: the first day (ISO date) δ c1 excluded zero, or null}. */
export const DECISION_FIELDS = ["intervals", "interval_guarantee", "decisions"];

/** The fields of the answer's `weighted` (null without a targets file) the gap panel reads. */
export const WEIGHTED_FIELDS = ["installs_raked", "effective_sample_size", "figure3"];

/** The fields of `weighted.figure3` (Figure3) the gap panel reads. */
export const WEIGHTED_FIGURE3_FIELDS = ["arms"];

/** The fields of an arm of `weighted.figure3.arms` (Figure3Arm) the gap panel reads. */
export const WEIGHTED_ROW_FIELDS = ["arm", "ctr", "delta"];

/** The fields of the experiment answer (BoardExperimentPanel) the CTR panel reads:
 * `intervals` names the method in its title, `warnings` ({code, message}) are shown under it. */
export const CTR_ANSWER_FIELDS = ["figure3", "intervals", "warnings"];

/** What each kind of interval is called in titles and headers: [in words, short]. */
export const INTERVAL_NAMES = {
  bootstrap: ["95% clustered-bootstrap CI", "95% CI"],
  sequential: ["95% confidence sequence", "95% CS"],
};

const intervalName = (intervals, short) => (INTERVAL_NAMES[intervals] || ["95% interval", "95%"])[short ? 1 : 0];

// The CTR panel's title: the method of the intervals the answer carries (issue 37: it said
// "clustered-bootstrap CI" over confidence sequences).
export function ctrTitle(intervals) {
  return `CTR per position by arm, ${intervalName(intervals, false)}`;
}

// The report's warnings (SRM of the selection, reweighting that raked nobody, arms too thin
// for an interval), one note each.
export function warningNotes(warnings) {
  return (warnings || []).map((w) => note(`Warning: ${w.message}`, { class: "note warning", "data-warning": w.code }));
}

/** The fields of the experiment answer (BoardExperimentPanel) the gap panel reads. */
export const GAP_ANSWER_FIELDS = ["figure3", "weighted", ...DECISION_FIELDS];

function figure3(answer) {
  return pick(pick(answer, CTR_ANSWER_FIELDS, "").figure3, FIGURE3_FIELDS, "figure3");
}

// Figure 3, CTR: bars with whiskers per position and arm, and the table under them.
export function ctrPanel(answer) {
  const d = pick(answer, CTR_ANSWER_FIELDS, "");
  const f3 = figure3(answer);
  const arms = pickEach(f3.arms, FIGURE3_ROW_FIELDS, "figure3.arms").map((a, i) =>
    pick({ ...a, ctr: estimates(a.ctr, `figure3.arms[${i}].ctr`) }, FIGURE3_ROW_FIELDS, `figure3.arms[${i}]`),
  );
  const cols = positions(f3.ranks);
  const colors = armColors(arms.map((a) => a.arm));
  const series = arms.map((a) => ({ name: a.arm, color: colors[a.arm], values: a.ctr }));
  const drawn = panel(
    arms.length,
    [
      legend(arms.map((a) => [a.arm, colors[a.arm]])),
      barChart({ groups: cols, series, yLabel: "CTR", width: WIDE, floor: 0 }),
      dataTable(
        ["arm", "units", "installs", ...cols.map((p) => `CTR ${p} [${intervalName(d.intervals, true)}]`)],
        arms.map((a) =>
          h(
            "tr",
            { "data-arm": a.arm },
            cell(a.arm),
            cell(String(a.units), { field: "units", arm: a.arm, value: a.units }),
            cell(String(a.installs), { field: "installs", arm: a.arm, value: a.installs }),
            a.ctr.map((e, i) => cell(fmt(e.value), { field: `ctr_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
          ),
        ),
      ),
      warningNotes(d.warnings),
    ],
    "No units after preprocessing yet.",
  );
  return { ...drawn, title: ctrTitle(d.intervals) };
}

// The reweighted Figure 3 as one line per arm (CTR c1 and δ c1), after a summary line.
export function weightedNotes(weighted) {
  if (!weighted) return [];
  const w = pick(weighted, WEIGHTED_FIELDS, "weighted");
  const f3 = pick(w.figure3, WEIGHTED_FIGURE3_FIELDS, "weighted.figure3");
  const arms = pickEach(f3.arms, WEIGHTED_ROW_FIELDS, "weighted.figure3.arms");
  const lines = [note(`Reweighted to the target population (${w.installs_raked} installs raked, effective sample size ${w.effective_sample_size}):`, { "data-weighted": "1" })];
  arms.forEach((a, i) => {
    const ctr = estimates(a.ctr, `weighted.figure3.arms[${i}].ctr`);
    const delta = estimates(a.delta, `weighted.figure3.arms[${i}].delta`);
    const gap = delta.length ? `, δ c1 ${fmt(delta[0].value)} ${ciText(delta[0])}` : "";
    lines.push(note(`${a.arm}: CTR c1 ${fmt(ctr[0].value)} ${ciText(ctr[0])}${gap}`, { "data-weighted-arm": a.arm }));
  });
  return lines;
}

// The interval guarantee, then one line per arm saying when δ c1 first excluded zero.
export function decisionNotes(answer) {
  const d = pick(answer, DECISION_FIELDS, "");
  const lines = d.interval_guarantee ? [note(`Intervals: ${d.interval_guarantee}.`, { "data-intervals": d.intervals })] : [];
  for (const [arm, day] of Object.entries(d.decisions || {})) {
    lines.push(note(`Decision, ${arm}: δ c1 excluded zero ${day ? "first on " + day : "not yet"}.`, { "data-decision": arm }));
  }
  return lines;
}

// Figure 3, gaps: δ bars (symmetric around 0), δ and β of the first three positions.
export function gapPanel(answer) {
  const d = pick(answer, GAP_ANSWER_FIELDS, "");
  const f3 = figure3(answer);
  const all = pickEach(f3.arms, GAP_ROW_FIELDS, "figure3.arms");
  const colors = armColors(all.map((a) => a.arm));
  const arms = all
    .map((a, i) => {
      const where = `figure3.arms[${i}]`;
      return pick({ arm: a.arm, delta: estimates(a.delta, `${where}.delta`), beta: estimates(a.beta, `${where}.beta`) }, GAP_ROW_FIELDS, where);
    })
    .filter((a) => a.delta.length);
  const cols = positions(f3.ranks);
  const shown = Math.min(3, f3.ranks);
  const ci = intervalName(d.intervals, true);
  const series = arms.map((a) => ({ name: a.arm, color: colors[a.arm], values: a.delta }));
  const nodes = [
    legend(arms.map((a) => [a.arm, colors[a.arm]])),
    barChart({ groups: cols, series, symmetric: true, yLabel: "δ = CTR − CTR(control)", width: WIDE }),
    dataTable(
      ["arm", ...cols.slice(0, shown).map((p) => `δ ${p} [${ci}]`), ...cols.slice(0, shown).map((p) => `β ${p} [${ci}]`)],
      arms.map((a) =>
        h(
          "tr",
          { "data-arm": a.arm },
          cell(a.arm),
          a.delta.slice(0, shown).map((e, i) => cell(fmt(e.value), { field: `delta_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
          a.beta.slice(0, shown).map((e, i) => cell(fmt(e.value, 2), { field: `beta_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
        ),
      ),
    ),
    ...weightedNotes(d.weighted),
    ...decisionNotes(answer),
  ];
  if (f3.performative_power_lower_bound !== null) {
    nodes.push(note(`Performative power, lower bound (largest drop of c1's CTR against control, over arms): ${fmt(f3.performative_power_lower_bound)}`));
  }
  return panel(arms.length, nodes, all.length ? "No control arm yet: gaps need one." : "No units after preprocessing yet.");
}
