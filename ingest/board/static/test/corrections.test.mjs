// Issue 38's panel from the example answer (fixtures/experiment.json): the family's tests
// corrected for their number beside the unadjusted intervals, and the variance-reduced
// estimates beside the plain ones.

import { test } from "node:test";
import assert from "node:assert/strict";
import { experimentViews } from "../experiment.js";
import { CORRECTION_NAMES, correctionsPanel, correctionsTitle } from "../panel-corrections.js";
import { cells, findAll, fixture, panelText, textOf } from "./helpers.mjs";

const rowsOf = (p, attr) => p.nodes.flatMap((n) => findAll(n, (v) => v.tag === "tr" && v.attrs[attr] !== undefined));

test("the experiment's views carry the corrections panel", () => {
  assert.ok("panel-corrections" in experimentViews(fixture("experiment")).panels);
});

test("each test of the family: estimate, unadjusted CI, p, adjusted p, family CI, rejected", () => {
  const p = correctionsPanel(fixture("experiment"));
  assert.equal(p.title, "Holm over 3 tests: delta of every arm at every rank shown");
  assert.equal(p.rows, 5); // three tests, two reduced estimates
  assert.deepEqual(p.data, { correction: "holm", reduced: 2 });
  const tests = rowsOf(p, "data-test");
  assert.deepEqual(tests.map((r) => [r.attrs["data-test"], r.attrs["data-rejected"]]), [
    ["delta/swap_1_2/1", "1"],
    ["delta/swap_1_2/2", "0"],
    ["delta/swap_1_2/3", "0"],
  ]);
  assert.deepEqual(tests[0].children.map(textOf), ["δ swap_1_2 c1", "-0.111", "[-0.141, -0.081]", "2.0e-5", "6.0e-5", "[-0.152, -0.070] at 98.33%", "yes"]);
  assert.deepEqual(tests[1].children.map(textOf).slice(3), ["0.0412", "0.0824", "[-0.006, 0.056] at 98.33%", "no"]);
  assert.equal(textOf(tests[2].children[5]), "– at –"); // BH and not selected: no family interval
  const c = cells(p);
  assert.equal(c["swap_1_2/adjusted_p_delta_c2"].value, "0.0824");
  assert.equal(c["swap_1_2/rejected_delta_c1"].value, "true");
  const text = panelText(p);
  assert.match(text, /95% CI, unadjusted/);
  assert.match(text, /Holm \(family-wise error\); intervals: Bonferroni's simultaneous; each test: leave-one-install-out jackknife SE/);
  assert.match(text, /Not testable in this selection: delta hide_box 1\./);
});

test("variance reduction on: reduced against plain, with the width ratio", () => {
  const p = correctionsPanel(fixture("experiment"));
  const rows = rowsOf(p, "data-reduced");
  assert.deepEqual(rows.map((r) => r.attrs["data-reduced"]), ["delta/swap_1_2/1", "beta/swap_1_2/2"]);
  const c = cells(p);
  assert.deepEqual(c["swap_1_2/reduced_delta_c1"], { text: "-0.108", value: "-0.108", ci: "[-0.130, -0.086]" });
  assert.deepEqual(c["swap_1_2/plain_delta_c1"], { text: "-0.111", value: "-0.111", ci: "[-0.141, -0.081]" });
  assert.deepEqual(c["swap_1_2/width_ratio_beta_c2"], { text: "0.75", value: "0.75", ci: "" });
  assert.match(panelText(p), /Variance reduction: design control variates/);
});

test("variance reduction off: only the family's tests", () => {
  const p = correctionsPanel({ ...fixture("experiment"), variance_reduction: null });
  assert.equal(p.rows, 3);
  assert.equal(rowsOf(p, "data-reduced").length, 0);
  assert.doesNotMatch(panelText(p), /Variance reduction/);
  assert.deepEqual(p.data, { correction: "holm", reduced: 0 });
});

test("the title names the method; correction none or no family says why", () => {
  const answer = fixture("experiment");
  const bh = { ...answer, correction: "bh", corrections: { ...answer.corrections, method: "bh", tests: answer.corrections.tests.slice(0, 1) } };
  assert.equal(correctionsPanel(bh).title, "Benjamini-Hochberg over 1 test: delta of every arm at every rank shown");
  const none = correctionsPanel({ ...answer, correction: "none", corrections: null, variance_reduction: null });
  assert.equal(none.title, "Family of tests: no correction");
  assert.equal(none.rows, 0);
  assert.equal(none.empty, "No correction asked for (correction: none).");
  const noControl = correctionsPanel({ ...answer, corrections: null, variance_reduction: null });
  assert.equal(noControl.empty, "No family to test yet: it needs a control arm and units.");
  const onlyReduced = correctionsPanel({ ...answer, correction: "none", corrections: null });
  assert.equal(onlyReduced.rows, 2);
  assert.match(panelText(onlyReduced), /No correction asked for \(correction: none\): Figure 3's intervals are unadjusted\./);
  assert.deepEqual(Object.keys(CORRECTION_NAMES), ["holm", "bh", "bonferroni", "none"]);
  assert.equal(correctionsTitle("bonferroni", null), "Family of tests: Bonferroni");
});
