import { test } from "node:test";
import assert from "node:assert/strict";
import { DEFAULT_EVERY_MS, formatFragment, parseFragment } from "../fragment.js";

test("an empty fragment: no key, nothing chosen, the newest autocomplete study, every 3 s", () => {
  assert.deepEqual(parseFragment(""), { key: "", experiment: "", engine: "", ac: null, ps: "", every: DEFAULT_EVERY_MS, correction: "holm", vr: false });
  assert.equal(DEFAULT_EVERY_MS, 3000);
});

test("the fragment's settings are read and written back the same", () => {
  const hash = "#key=k%2B1&experiment=demo&engine=bing&ac=&ps=p1&every=1";
  const state = parseFragment(hash);
  assert.deepEqual(state, { key: "k+1", experiment: "demo", engine: "bing", ac: "", ps: "p1", every: 1000, correction: "holm", vr: false });
  assert.equal(formatFragment(state), hash.slice(1));
  assert.equal(formatFragment(parseFragment("")), "");
});

test("the interval is at least 1 s; nonsense means the default", () => {
  assert.equal(parseFragment("every=0.5").every, DEFAULT_EVERY_MS); // below 1: not a number of seconds we take
  assert.equal(parseFragment("every=2.5").every, 2500);
  assert.equal(parseFragment("every=x").every, DEFAULT_EVERY_MS);
  assert.equal(parseFragment("every=Infinity").every, DEFAULT_EVERY_MS);
  assert.equal(formatFragment({ ...parseFragment(""), every: 2500 }), "every=2.5");
});

test("the experiment's correction and variance reduction: holm and off unless chosen, nonsense means the default", () => {
  const state = parseFragment("#experiment=demo&correction=bh&vr=1");
  assert.deepEqual([state.correction, state.vr], ["bh", true]);
  assert.equal(formatFragment(state), "experiment=demo&correction=bh&vr=1");
  assert.equal(formatFragment({ ...state, correction: "holm", vr: false }), "experiment=demo");
  assert.deepEqual([parseFragment("correction=sidak").correction, parseFragment("vr=yes").vr], ["holm", false]);
  assert.equal(parseFragment("correction=none").correction, "none");
});
