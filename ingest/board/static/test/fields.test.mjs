import { test } from "node:test";
import assert from "node:assert/strict";
import { MissingField, UnlistedField, pick, pickEach, union } from "../fields.js";

test("pick keeps the listed fields, null ones too", () => {
  const row = pick({ arm: "control", units: null, extra: 1 }, ["arm", "units"], "figure3.arms[0]");
  assert.deepEqual({ ...row }, { arm: "control", units: null });
  assert.deepEqual(Object.keys(row), ["arm", "units"]);
});

test("a listed field the answer lacks is a MissingField naming where", () => {
  assert.throws(() => pick({ arm: "control" }, ["arm", "units"], "figure3.arms[0]"), (err) => {
    assert.ok(err instanceof MissingField);
    assert.equal(err.message, "the answer has no figure3.arms[0].units");
    assert.deepEqual([err.where, err.field], ["figure3.arms[0]", "units"]);
    return true;
  });
  assert.throws(() => pick({}, ["figure3"], ""), { message: "the answer has no figure3" });
  assert.throws(() => pickEach([{ arm: "a" }, {}], ["arm"], "srm.arms"), { message: "the answer has no srm.arms[1].arm" });
});

test("reading a field the list does not name is an UnlistedField", () => {
  const row = pick({ arm: "control", units: 3 }, ["arm"], "srm.arms[0]");
  assert.throws(() => row.units, (err) => err instanceof UnlistedField && err.message === "the board read srm.arms[0].units, which its field list does not name");
  assert.equal(String(Object.keys(row)), "arm"); // the language's own members still work
  assert.equal(typeof row.toString, "function");
  assert.equal(`${[row.arm]}`, "control");
});

test("objects and lists must be what they are said to be", () => {
  assert.throws(() => pick(null, ["a"], "weighted"), { name: "TypeError", message: "the answer's weighted is not an object" });
  assert.throws(() => pick([], ["a"], ""), { name: "TypeError", message: "the answer is not an object" });
  assert.throws(() => pickEach(null, ["a"], "drops"), { name: "TypeError", message: "the answer's drops is not a list" });
});

test("union keeps the first order and drops repeats", () => {
  assert.deepEqual(union(["a", "b"], ["b", "c"], []), ["a", "b", "c"]);
});
