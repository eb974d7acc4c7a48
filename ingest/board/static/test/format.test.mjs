import { test } from "node:test";
import assert from "node:assert/strict";
import { armColors, churnColor, ciText, colorOf, crawlLabel, fmt, niceDomain, niceStep, PALETTE, pct, positions, statusLine } from "../format.js";

test("numbers have fixed digits and a dash where there is none", () => {
  assert.equal(fmt(0.41234), "0.412");
  assert.equal(fmt(1.5, 2), "1.50");
  for (const none of [null, undefined, NaN]) assert.equal(fmt(none), "–");
  assert.equal(pct(0.1234), "12.3%");
  assert.equal(pct(0.5, 2), "50.00%");
  assert.equal(pct(null), "–");
});

test("an interval is [low, high], and nothing without one", () => {
  assert.equal(ciText({ value: 0.4, ci_low: 0.39, ci_high: 0.434 }), "[0.390, 0.434]");
  assert.equal(ciText({ value: 0.4, ci_low: null, ci_high: null }), "");
  assert.equal(ciText(null), "");
});

test("arms keep their colour; others, even named like Object's properties, take the palette's", () => {
  assert.equal(colorOf("control", 5), "#1f4e79");
  assert.equal(colorOf("constructor", 1), PALETTE[1]);
  assert.equal(colorOf("toString", 9), PALETTE[9 % PALETTE.length]);
  assert.deepEqual(armColors(["swap_1_2", "valueOf"]), { swap_1_2: "#e07b39", valueOf: PALETTE[1] });
});

test("positions are c1..cN", () => {
  assert.deepEqual(positions(3), ["c1", "c2", "c3"]);
  assert.deepEqual(positions(0), []);
});

test("axis domains are widened to whole round steps (1, 2 or 5 times a power of ten)", () => {
  assert.equal(niceStep(1, 5), 0.5); // a raw step of 0.2 rounds up to the next round one
  assert.deepEqual(niceDomain(0, 0.43), [0, 0.5, 0.1]);
  for (const [a, b] of [[-0.12, 0.12], [0, 0.43], [-3, 250], [0.001, 0.0042]]) {
    const [lo, hi, step] = niceDomain(a, b);
    assert.ok(lo <= a && hi >= b, `${a}..${b} inside ${lo}..${hi}`);
    assert.ok((hi - lo) / step <= 10, "at most ten steps");
    const mantissa = step / Math.pow(10, Math.floor(Math.log10(step)));
    assert.ok([1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-9), `${step} is round`);
  }
  assert.deepEqual(niceDomain(0, 0), [0, 1, 0.5]); // an empty range still has an axis
});

test("churn runs from white to dark orange, clamped", () => {
  assert.equal(churnColor(0), "rgb(255,245,235)");
  assert.equal(churnColor(1), "rgb(127,39,4)");
  assert.equal(churnColor(2), churnColor(1));
  assert.equal(churnColor(-1), churnColor(0));
});

test("crawl labels are the id's last part, at most 12 characters", () => {
  assert.equal(crawlLabel("board-ac-google-r0004"), "r0004");
  assert.equal(crawlLabel("nodash"), "nodash");
  assert.equal(crawlLabel("x-20260301T120000Z"), "…301T120000Z");
  assert.equal(crawlLabel("trailing-"), "trailing-");
});

test("the status line says live or partly stale, the UTC time and the interval", () => {
  const when = new Date("2026-03-01T12:34:56.789Z");
  assert.equal(statusLine(true, when, 3000), "live · updated 12:34:56 UTC · every 3 s");
  assert.equal(statusLine(false, when, 1000), "partly stale · updated 12:34:56 UTC · every 1 s");
});
