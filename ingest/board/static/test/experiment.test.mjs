// The arrangement experiment's panels from an example answer (fixtures/), and the field
// lists they export: each list is exactly what its panel reads (the board draws the same
// from an answer cut down to the listed fields, every listed field changes what is drawn,
// and an answer missing a listed field is refused with MissingField, which the board shows
// on the panels: see dom.test.mjs).

import { test } from "node:test";
import assert from "node:assert/strict";
import { ESTIMATE_FIELDS } from "../estimate.js";
import { EXPERIMENT_FIELDS, EXPERIMENT_PANELS, TITLE_FIELDS, emptyExperiment, experimentTitle, experimentViews } from "../experiment.js";
import { MissingField, union } from "../fields.js";
import { BOX_ANSWER_FIELDS, BOX_FIELDS, BOX_ROW_FIELDS } from "../panel-box.js";
import { CORRECTIONS_ANSWER_FIELDS, CORRECTIONS_FIELDS, FAMILY_TEST_FIELDS, REDUCED_FIELDS, REDUCTION_FIELDS } from "../panel-corrections.js";
import { DROPS_ANSWER_FIELDS, DROP_FIELDS, dropTotals } from "../panel-drops.js";
import {
  CTR_ANSWER_FIELDS,
  DECISION_FIELDS,
  FIGURE3_FIELDS,
  FIGURE3_ROW_FIELDS,
  GAP_ANSWER_FIELDS,
  GAP_ROW_FIELDS,
  WEIGHTED_FIELDS,
  WEIGHTED_FIGURE3_FIELDS,
  WEIGHTED_ROW_FIELDS,
  decisionNotes,
} from "../panel-figure3.js";
import { MARKETS_ANSWER_FIELDS, MARKET_FIELDS, keptClicks } from "../panel-markets.js";
import { SHARES_ANSWER_FIELDS, SHARE_FIELDS } from "../panel-shares.js";
import { SRM_ALERT_FIELDS, SRM_ANSWER_FIELDS, SRM_ARM_FIELDS, SRM_FIELDS, explainSrm } from "../panel-srm.js";
import { barTitles, cells, findAll, fixture, panelText, textOf } from "./helpers.mjs";

const estimatesOf = (rows, keys) => rows.flatMap((r) => keys.flatMap((k) => r[k]));

// Where in the experiment answer each field list applies: [name, list, objects it reads].
const PLACES = [
  ["EXPERIMENT_FIELDS", EXPERIMENT_FIELDS, (a) => [a]],
  ["FIGURE3_FIELDS", FIGURE3_FIELDS, (a) => [a.figure3]],
  ["FIGURE3_ROW_FIELDS", FIGURE3_ROW_FIELDS, (a) => a.figure3.arms],
  ["GAP_ROW_FIELDS", GAP_ROW_FIELDS, (a) => a.figure3.arms],
  ["ESTIMATE_FIELDS (figure3)", ESTIMATE_FIELDS, (a) => estimatesOf(a.figure3.arms, ["ctr", "delta", "beta"])],
  ["WEIGHTED_FIELDS", WEIGHTED_FIELDS, (a) => [a.weighted]],
  ["WEIGHTED_FIGURE3_FIELDS", WEIGHTED_FIGURE3_FIELDS, (a) => [a.weighted.figure3]],
  ["WEIGHTED_ROW_FIELDS", WEIGHTED_ROW_FIELDS, (a) => a.weighted.figure3.arms],
  ["ESTIMATE_FIELDS (weighted)", ESTIMATE_FIELDS, (a) => estimatesOf(a.weighted.figure3.arms, ["ctr", "delta"])],
  ["CORRECTIONS_FIELDS", CORRECTIONS_FIELDS, (a) => [a.corrections]],
  ["FAMILY_TEST_FIELDS", FAMILY_TEST_FIELDS, (a) => a.corrections.tests],
  ["REDUCTION_FIELDS", REDUCTION_FIELDS, (a) => [a.variance_reduction]],
  ["REDUCED_FIELDS", REDUCED_FIELDS, (a) => a.variance_reduction.estimates],
  ["SHARE_FIELDS", SHARE_FIELDS, (a) => a.element_shares],
  ["BOX_FIELDS", BOX_FIELDS, (a) => [a.box_subset]],
  ["BOX_ROW_FIELDS", BOX_ROW_FIELDS, (a) => a.box_subset.arms],
  ["ESTIMATE_FIELDS (box)", ESTIMATE_FIELDS, (a) => estimatesOf(a.box_subset.arms, ["ctr", "delta", "beta"])],
  ["SRM_FIELDS", SRM_FIELDS, (a) => [a.srm]],
  ["SRM_ARM_FIELDS", SRM_ARM_FIELDS, (a) => a.srm.arms],
  ["SRM_ALERT_FIELDS", SRM_ALERT_FIELDS, (a) => a.srm.alerts],
  ["MARKET_FIELDS", MARKET_FIELDS, (a) => a.markets],
  ["DROP_FIELDS", DROP_FIELDS, (a) => a.drops],
];

// The answer with only the fields the lists name, where they name them.
function cutDown(answer) {
  const byPlace = new Map();
  for (const [, list, objects] of PLACES) {
    for (const obj of objects(answer)) byPlace.set(obj, union(byPlace.get(obj) || [], list));
  }
  for (const [obj, keep] of byPlace) for (const k of Object.keys(obj)) if (!keep.includes(k)) delete obj[k];
  return answer;
}

test("the field lists are plain JSON arrays of distinct names", () => {
  const lists = {
    TITLE_FIELDS, CTR_ANSWER_FIELDS, GAP_ANSWER_FIELDS, DECISION_FIELDS, CORRECTIONS_ANSWER_FIELDS, SHARES_ANSWER_FIELDS, BOX_ANSWER_FIELDS,
    SRM_ANSWER_FIELDS, MARKETS_ANSWER_FIELDS, DROPS_ANSWER_FIELDS, ...Object.fromEntries(PLACES.map(([name, list]) => [name, list])),
  };
  for (const [name, list] of Object.entries(lists)) {
    assert.ok(Array.isArray(list) && list.length > 0, name);
    assert.ok(list.every((f) => typeof f === "string" && /^[a-z_0-9]+$/.test(f)), name);
    assert.equal(new Set(list).size, list.length, `${name} has no duplicates`);
    assert.deepEqual(JSON.parse(JSON.stringify(list)), list);
  }
  assert.deepEqual(
    [...EXPERIMENT_FIELDS].sort(),
    union(TITLE_FIELDS, CTR_ANSWER_FIELDS, GAP_ANSWER_FIELDS, CORRECTIONS_ANSWER_FIELDS, SHARES_ANSWER_FIELDS, BOX_ANSWER_FIELDS, SRM_ANSWER_FIELDS, MARKETS_ANSWER_FIELDS, DROPS_ANSWER_FIELDS).sort(),
  );
  assert.ok(DECISION_FIELDS.every((f) => GAP_ANSWER_FIELDS.includes(f)));
});

test("the board draws the same from an answer cut down to the listed fields", () => {
  const full = fixture("experiment");
  const cut = cutDown(fixture("experiment"));
  assert.ok(!("seed" in cut) && !("has_baseline" in cut.figure3) && !("kept_clicks" in cut.drops[0]), "extra fields were cut");
  assert.ok(!("srm_chi2" in cut.markets[0]) && !("kind" in cut.srm.alerts[0]) && !("beta" in cut.weighted.figure3.arms[0]));
  assert.deepEqual(experimentViews(cut), experimentViews(full));
});

test("an answer missing any listed field is refused, naming the field and where it is missing", () => {
  for (const [name, list, objects] of PLACES) {
    for (const field of list) {
      const answer = fixture("experiment");
      const [first] = objects(answer);
      delete first[field];
      assert.throws(
        () => experimentViews(answer),
        (err) => err instanceof MissingField && err.field === field && err.message.endsWith(field),
        `${name}: without ${field}`,
      );
    }
  }
  const answer = fixture("experiment");
  delete answer.figure3.arms[1].units;
  assert.throws(() => experimentViews(answer), { message: "the answer has no figure3.arms[1].units" });
});

// Another value of the same kind: what drawing a field from it must show.
function changed(v) {
  if (v === null) return 0.123;
  if (typeof v === "number") return v + 1;
  if (typeof v === "string") return v + "x";
  if (typeof v === "boolean") return !v;
  if (Array.isArray(v)) return [];
  return {};
}

test("every listed field is read: changing it (in some row) changes what is drawn", () => {
  const drawn = JSON.stringify(experimentViews(fixture("experiment")));
  const redraw = (answer) => {
    try {
      return JSON.stringify(experimentViews(answer));
    } catch (err) {
      assert.ok(err instanceof MissingField || err instanceof TypeError, String(err));
      return "refused"; // an object or list the panel reads into
    }
  };
  for (const [name, list, objects] of PLACES) {
    for (const field of list) {
      const count = objects(fixture("experiment")).length;
      const read = Array.from({ length: count }, (_, i) => {
        const answer = fixture("experiment");
        const obj = objects(answer)[i];
        obj[field] = changed(obj[field]);
        return redraw(answer) !== drawn;
      });
      assert.ok(read.some(Boolean), `${name}: changing ${field} changed nothing drawn`);
    }
  }
});

test("the title says experiment, engine, burn-in, unit and registry status", () => {
  const answer = fixture("experiment");
  assert.equal(experimentTitle(answer), "demo-exp · google · burn-in 4 d · unit: click · running");
  assert.equal(experimentTitle({ ...answer, registry_status: null }), "demo-exp · google · burn-in 4 d · unit: click · not registered");
});

test("Figure 3, CTR: a row per arm, a cell per position with its value and interval", () => {
  const { panels } = experimentViews(fixture("experiment"));
  const ctr = panels["panel-ctr"];
  assert.equal(ctr.rows, 2);
  const c = cells(ctr);
  assert.deepEqual(c["control/units"], { text: "1200", value: "1200", ci: "" });
  assert.deepEqual(c["control/ctr_c1"], { text: "0.412", value: "0.412", ci: "[0.390, 0.434]" });
  assert.deepEqual(c["swap_1_2/ctr_c3"], { text: "0.081", value: "0.081", ci: "" }); // no interval yet
  assert.equal(c["swap_1_2/installs"].value, "38");
  assert.ok(barTitles(ctr).includes("control c2: 0.151 [0.137, 0.166]"));
  assert.match(panelText(ctr), /CTR c3 \[95% CS\]/); // the fixture's intervals are sequential
});

test("Figure 3, CTR: the title names the intervals shown, and the report's warnings are under it", () => {
  const answer = fixture("experiment");
  const ctr = experimentViews(answer).panels["panel-ctr"];
  assert.equal(ctr.title, "CTR per position by arm, 95% confidence sequence");
  const boot = experimentViews({ ...answer, intervals: "bootstrap" }).panels;
  assert.equal(boot["panel-ctr"].title, "CTR per position by arm, 95% clustered-bootstrap CI");
  assert.match(panelText(boot["panel-ctr"]), /CTR c1 \[95% CI\]/);
  assert.match(panelText(boot["panel-gap"]), /δ c1 \[95% CI\]/);
  const notes = ctr.nodes.flatMap((n) => findAll(n, (v) => v.attrs["data-warning"] !== undefined));
  assert.deepEqual(notes.map((n) => [n.attrs["data-warning"], textOf(n)]), [["too_few_units", `Warning: ${answer.warnings[0].message}`]]);
  assert.equal(experimentViews({ ...answer, warnings: [] }).panels["panel-ctr"].nodes.flatMap((n) => findAll(n, (v) => v.attrs["data-warning"] !== undefined)).length, 0);
});

test("Figure 3, CTR: the axis starts at 0 whatever an interval says", () => {
  const answer = fixture("experiment");
  answer.figure3.arms[0].ctr[0] = { value: 0.333, ci_low: -4.048, ci_high: 0.9 }; // as an old answer could
  const ctr = experimentViews(answer).panels["panel-ctr"];
  const svg = ctr.nodes.flatMap((n) => findAll(n, (v) => v.tag === "svg" && v.attrs.class === "chart"))[0];
  const ticks = findAll(svg, (v) => v.tag === "text" && /^-?[0-9.]+$/.test(v.attrs.text ?? "")).map((t) => Number(t.attrs.text));
  assert.equal(Math.min(...ticks), 0);
  const zero = findAll(svg, (v) => v.tag === "line" && v.attrs.class === "zero")[0].attrs.y1;
  const whiskers = findAll(svg, (v) => v.tag === "line" && v.attrs.class === "whisker");
  assert.ok(whiskers.every((w) => w.attrs.y1 <= zero + 1e-9 && w.attrs.y2 <= zero + 1e-9), "no whisker below 0");
});

test("Figure 3, gaps: δ and β of the first three positions for arms with a gap", () => {
  const { panels } = experimentViews(fixture("experiment"));
  const gap = panels["panel-gap"];
  assert.equal(gap.rows, 1); // control has no gap against itself
  const c = cells(gap);
  assert.deepEqual(c["swap_1_2/delta_c1"], { text: "-0.111", value: "-0.111", ci: "[-0.140, -0.082]" });
  assert.deepEqual(c["swap_1_2/beta_c2"], { text: "1.74", value: "1.74", ci: "[1.580, 1.900]" });
  assert.deepEqual(c["swap_1_2/beta_c3"], { text: "–", value: undefined, ci: "" });
  assert.equal(c["control/delta_c1"], undefined);
  const text = panelText(gap);
  assert.match(text, /Reweighted to the target population \(78 installs raked, effective sample size 61\.5\)/);
  assert.match(text, /swap_1_2: CTR c1 0\.298 \[0\.270, 0\.325\], δ c1 -0\.107 \[-0\.140, -0\.074\]/);
  assert.match(text, /control: CTR c1 0\.405 \[0\.380, 0\.430\]\n/);
  assert.match(text, /Intervals: 95% confidence sequence: .*excludes zero\./);
  assert.match(text, /Decision, swap_1_2: δ c1 excluded zero first on 2026-03-05\./);
  assert.match(text, /Performative power, lower bound \(largest drop of c1.s CTR against control, over arms\): 0\.111/);
});

test("the decision line: a day, not yet, or nothing under bootstrap intervals", () => {
  const answer = fixture("experiment");
  const lines = (d) => decisionNotes({ ...answer, ...d }).map((n) => [n.attrs["data-decision"] ?? n.attrs["data-intervals"], textOf(n)]);
  assert.deepEqual(lines({ decisions: { swap_1_2: null, hide_box: "2026-03-02" } }).slice(1), [
    ["swap_1_2", "Decision, swap_1_2: δ c1 excluded zero not yet."],
    ["hide_box", "Decision, hide_box: δ c1 excluded zero first on 2026-03-02."],
  ]);
  assert.deepEqual(lines({ intervals: "bootstrap", interval_guarantee: "one look", decisions: null }), [["bootstrap", "Intervals: one look."]]);
  assert.deepEqual(lines({ interval_guarantee: "", decisions: {} }), []);
});

test("without a control arm the gap panel says why it is empty; without units both do", () => {
  const answer = fixture("experiment");
  answer.figure3.arms = answer.figure3.arms.filter((a) => a.arm !== "control").map((a) => ({ ...a, delta: [], beta: [] }));
  assert.equal(experimentViews(answer).panels["panel-gap"].empty, "No control arm yet: gaps need one.");
  answer.figure3.arms = [];
  const { panels } = experimentViews(answer);
  assert.equal(panels["panel-gap"].rows, 0);
  assert.equal(panels["panel-gap"].empty, "No units after preprocessing yet.");
  assert.equal(panels["panel-ctr"].empty, "No units after preprocessing yet.");
});

test("shares, box subset, SRM, markets and drops show the answer's numbers", () => {
  const { panels } = experimentViews(fixture("experiment"));
  assert.deepEqual(cells(panels["panel-shares"])["control/organic"], { text: "70.0%", value: "0.7", ci: "" });
  assert.ok(barTitles(panels["panel-shares"]).includes("swap_1_2 · ad: 19.0%"));

  const box = cells(panels["panel-box"]);
  assert.deepEqual(box["control/beta_c1"], { text: "0.86", value: "0.86", ci: "[0.700, 1.050]" });
  const baselineRow = panels["panel-box"].nodes.flatMap((n) => findAll(n, (v) => v.tag === "tr" && v.attrs["data-arm"] === "hide_ads_box"));
  assert.deepEqual(baselineRow[0].children.map(textOf).slice(-2), ["baseline", ""]);
  assert.match(panelText(panels["panel-box"]), /against hide_ads_box \(the paper's Figure 5\)/);

  const srm = panels["panel-srm"];
  assert.deepEqual(srm.data, { status: "ok" });
  assert.equal(cells(srm)["control/share"].text, "51.06%");
  assert.match(panelText(srm), /units match the allocation \(p = 0\.3025 ≥ 0\.001\)/);
  assert.match(panelText(srm), /χ² = 1\.06 over 2350 units/);
  assert.match(panelText(srm), /2026-03-04T10:00:00Z · sample ratio mismatch/);

  const markets = cells(panels["panel-markets"]);
  assert.deepEqual(markets["de/srm_p_value"], { text: "0.4400", value: "0.44", ci: "" });
  assert.deepEqual(markets["/srm_p_value"], { text: "–", value: undefined, ci: "" });
  assert.match(panelText(panels["panel-markets"]), /\(unknown\)/);
  assert.equal(keptClicks({ control: 700, swap_1_2: 660 }), 1360);

  const drops = cells(panels["panel-drops"]);
  assert.equal(drops["*/kept"].value, "2350");
  assert.equal(drops["*/burn_in_dropped"].value, "480");
  assert.deepEqual(dropTotals([]), { all_units: 0, burn_in_dropped: 0, unidentified_dropped: 0, kept: 0 });
  assert.match(panelText(panels["panel-drops"]), /burn-in \(< 4 d\)/);
});

test("each SRM status has its sentence; an unknown one none", () => {
  const srm = { p_value: 0.0004, alpha: 0.001 };
  assert.match(explainSrm({ ...srm, status: "mismatch" }), /p = 0\.000400 < 0\.001/);
  assert.equal(explainSrm({ ...srm, status: "no_units" }), "no units after preprocessing yet");
  assert.equal(explainSrm({ ...srm, status: "constructor" }), "");
});

test("markets may be null (an answer from before per-market checks)", () => {
  const { panels } = experimentViews({ ...fixture("experiment"), markets: null });
  assert.equal(panels["panel-markets"].rows, 0);
  assert.equal(panels["panel-markets"].empty, "No events yet.");
});

test("with no experiment every experiment panel is empty with the reason", () => {
  const { title, panels } = emptyExperiment("No arrangement experiment has data yet.");
  assert.equal(title, "");
  assert.deepEqual(Object.keys(panels), Object.keys(EXPERIMENT_PANELS));
  for (const p of Object.values(panels)) assert.deepEqual(p, { rows: 0, nodes: [], empty: "No arrangement experiment has data yet.", data: {} });
});
