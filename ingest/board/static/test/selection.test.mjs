import { test } from "node:test";
import assert from "node:assert/strict";
import { choose, defaultStudy } from "../selection.js";
import { fixture } from "./helpers.mjs";

const NOTHING = { experiment: "", engine: "", ac: null, ps: "" };

test("with nothing chosen: the first experiment, Google, the newest studies with data", () => {
  const c = choose(fixture("index"), NOTHING);
  assert.deepEqual([c.experiment, c.engine, c.ac, c.ps], ["demo-exp", "google", "board-ac-", "board-pers"]);
  assert.deepEqual(c.options.experiment, [["demo-exp", "demo-exp (running)"], ["old-exp", "old-exp"]]);
  assert.deepEqual(c.options.engine, [["bing", "bing"], ["google", "google"]]);
  assert.deepEqual(c.options.ac, [["", "every crawl"], ["board-ac-", "board-ac-* (google, bing)"]]);
  assert.deepEqual(c.options.ps, [["board-pers", "board-pers"]]);
});

test("an experiment without Google takes its first engine; a chosen engine it runs stays", () => {
  assert.equal(choose(fixture("index"), { ...NOTHING, experiment: "old-exp", engine: "google" }).engine, "bing");
  assert.equal(choose(fixture("index"), { ...NOTHING, experiment: "demo-exp", engine: "bing" }).engine, "bing");
});

test("choices with no data yet stay chosen and are listed as such", () => {
  const c = choose(fixture("index"), { experiment: "new-exp", engine: "bing", ac: "zz-", ps: "p9" });
  assert.deepEqual([c.experiment, c.engine, c.ac, c.ps], ["new-exp", "google", "zz-", "p9"]);
  assert.deepEqual(c.options.experiment[0], ["new-exp", "new-exp (no data yet)"]);
  assert.deepEqual(c.options.engine, [["google", "google"]]);
  assert.deepEqual(c.options.ac.at(-1), ["zz-", "zz-*"]);
  assert.deepEqual(c.options.ps[0], ["p9", "p9 (no data yet)"]);
  assert.equal(choose(fixture("index"), { ...NOTHING, ac: "" }).ac, ""); // "every crawl" is a choice
});

test("an empty service offers 'none yet'", () => {
  const c = choose({ experiments: [], autocomplete_studies: [], personalization_studies: [] }, NOTHING);
  assert.deepEqual([c.experiment, c.engine, c.ac, c.ps], ["", "google", "", ""]);
  assert.deepEqual(c.options, { experiment: [["", "none yet"]], engine: [["google", "google"]], ac: [["", "every crawl"]], ps: [["", "none yet"]] });
});

test("the board opens on the newest autocomplete study it can draw, not merely the newest", () => {
  const study = (name, rounds, withData) => ({ study: name, rounds, rounds_with_data: withData, engines: ["google"], last: "" });
  const failed = study("mystudy-", 1, 0); // issue 40: one crawl that fetched nothing, the newest
  const single = study("once-", 1, 1);
  const demo = study("ac-demo-", 6, 6);
  assert.equal(defaultStudy([failed, single, demo]), "ac-demo-");
  assert.equal(defaultStudy([failed, single]), "once-");
  assert.equal(defaultStudy([failed]), "mystudy-");
  assert.equal(defaultStudy([]), "");
  const index = { experiments: [], autocomplete_studies: [failed, demo], personalization_studies: [] };
  assert.equal(choose(index, NOTHING).ac, "ac-demo-");
  assert.equal(choose(index, { ...NOTHING, ac: "mystudy-" }).ac, "mystudy-"); // a chosen study stays
});
