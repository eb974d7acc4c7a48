import { test } from "node:test";
import assert from "node:assert/strict";
import { barChart, barRange, heatmap, linePoints, nmiChart, shockCounts, stackedBars } from "../charts.js";
import { findAll, fixture, textOf } from "./helpers.mjs";

const est = (value, lo = null, hi = null) => ({ value, ci_low: lo, ci_high: hi });
const tags = (v, tag, cls) => findAll(v, (n) => n.tag === tag && (cls === undefined || n.attrs.class === cls));

test("the bar range covers values and interval ends, and holds 0", () => {
  const series = [{ values: [est(0.2, 0.1, 0.3), null, est(null)] }, { values: [est(0.05, -0.02, 0.4)] }];
  assert.deepEqual(barRange(series, false), [-0.02, 0.4]);
  assert.deepEqual(barRange(series, true), [-0.4, 0.4]);
  assert.deepEqual(barRange([], true), [-0.01, 0.01]);
  assert.deepEqual(barRange(series, false, 0), [0, 0.4]); // a CTR's axis: nothing below 0
});

test("a bar per value, whiskers only where there is an interval", () => {
  const svg = barChart({
    groups: ["c1", "c2"],
    series: [
      { name: "control", color: "#111111", values: [est(0.4, 0.35, 0.45), est(0.2)] },
      { name: "swap", color: "#222222", values: [null, est(null)] },
    ],
    yLabel: "CTR",
  });
  assert.equal(svg.attrs.viewBox, "0 0 720 240");
  const bars = tags(svg, "rect");
  assert.deepEqual(bars.map(textOf), ["control c1: 0.400 [0.350, 0.450]", "control c2: 0.200 "]);
  assert.ok(bars.every((b) => b.attrs.fill === "#111111" && b.attrs.height >= 0.5));
  assert.equal(tags(svg, "line", "whisker").length, 3); // one bar's stem and two caps
  assert.deepEqual(tags(svg, "text").map(textOf).slice(-3), ["CTR", "c1", "c2"]);
});

test("gap bars are centred on zero and go down for negative gaps", () => {
  const svg = barChart({ groups: ["c1"], series: [{ name: "a", color: "#000", values: [est(-0.1, -0.15, -0.05)] }], symmetric: true, height: 200 });
  const zero = tags(svg, "line", "zero")[0].attrs.y1;
  const [bar] = tags(svg, "rect");
  assert.equal(bar.attrs.y, zero); // starts at zero and extends below it
  const labels = tags(svg, "text").map(textOf);
  assert.equal(labels[0], String(-Number(labels.at(-2)))); // symmetric axis: lowest = -highest
});

test("stacked shares: a segment per non-zero part, as wide as its share", () => {
  const svg = stackedBars([{ label: "control", shares: { organic: 0.75, ad: 0.25, other: 0 } }], [["organic", "#1"], ["ad", "#2"], ["other", "#3"]]);
  const rects = tags(svg, "rect");
  assert.deepEqual(rects.map(textOf), ["control · organic: 75.0%", "control · ad: 25.0%"]);
  assert.equal(rects[0].attrs.width, 3 * rects[1].attrs.width);
  assert.equal(rects[1].attrs.x, rects[0].attrs.x + rects[0].attrs.width);
});

test("the churn heatmap has a cell per rank and depth, grey where there is no value", () => {
  const grid = fixture("autocomplete").churn[0];
  const svg = heatmap(grid);
  const cells = findAll(svg, (n) => n.tag === "rect" && n.attrs["data-rank"] !== undefined);
  assert.equal(cells.length, 6);
  const empty = cells.filter((c) => c.attrs["data-value"] === undefined);
  assert.deepEqual(empty.map((c) => [c.attrs["data-depth"], c.attrs["data-rank"], c.attrs.fill]), [[1, 3, "#eef0f2"]]);
  assert.equal(textOf(empty[0]), "depth 1, rank 3: churn – over 0 pairs");
  assert.ok(tags(svg, "text", "cell light").some((t) => t.attrs.text === "0.60")); // dark cells get light text
});

test("nmi lines skip rounds without a value; a shock is a band with its counts", () => {
  const series = fixture("autocomplete").nmi[0];
  const x = (i) => i * 10;
  const y = (v) => v;
  assert.deepEqual(linePoints(series.rounds, "min_nmi", x, y), ["0,0.9", "20,0.2"]);
  assert.deepEqual(shockCounts(series.rounds[2]), [3, 4]);
  assert.deepEqual(shockCounts({ shock_details: null }), ["?", "?"]);
  const svg = nmiChart(series);
  const bands = findAll(svg, (n) => n.attrs["data-shock"] !== undefined);
  assert.deepEqual(bands.map((b) => [b.attrs["data-shock"], textOf(b)]), [["board-ac-google-r0003", "shock in board-ac-google-r0003: 3 of 4 roots dropped"]]);
  assert.equal(tags(svg, "polyline").length, 2);
  assert.equal(tags(svg, "circle").length, 5); // 3 mean + 2 min
  assert.equal(tags(svg, "circle").filter((c) => c.attrs.fill === "#b3261e").length, 2); // the shock's dots
});
