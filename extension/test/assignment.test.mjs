import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { assignArm, pickArm, unitInterval } from "../lib/assignment.js";

const vectors = JSON.parse(readFileSync(new URL("../../schemas/assignment_vectors.json", import.meta.url)));

test("every published vector gives the same u and arm as schemas/assignment.py", async () => {
  const arms = vectors.arms.map(([arm, weight]) => ({ arm, weight }));
  assert.ok(vectors.vectors.length >= 40);
  for (const v of vectors.vectors) {
    assert.equal(await unitInterval(v.install_id, v.query, v.salt), v.unit_interval, JSON.stringify(v));
    assert.equal(await assignArm(v.install_id, v.query, v.salt, arms), v.arm, JSON.stringify(v));
  }
});

test("weights are checked", () => {
  assert.throws(() => pickArm(0.5, [{ arm: "control", weight: 0 }]));
  assert.throws(() => pickArm(0.5, [{ arm: "control", weight: 1 }, { arm: "x", weight: -1 }]));
  assert.equal(pickArm(0.999999, [{ arm: "control", weight: 0.5 }, { arm: "b", weight: 0.5 }]), "b");
});
