import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { armsFor, assignArm, pickArm, unitInterval } from "../lib/assignment.js";

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

test("an engine listed in engine_arms draws only among its arms; others among all", async () => {
  const experiment = {
    arms: [
      { arm: "control", weight: 0.5 },
      { arm: "swap_1_2", weight: 0.25 },
      { arm: "hide_box", weight: 0.25 },
    ],
    engine_arms: { bing: [{ arm: "control", weight: 2 / 3 }, { arm: "swap_1_2", weight: 1 / 3 }] },
  };
  assert.deepEqual(armsFor(experiment, "google"), experiment.arms);
  assert.deepEqual(armsFor(experiment, "bing"), experiment.engine_arms.bing);
  assert.deepEqual(armsFor({ arms: experiment.arms }, "bing"), experiment.arms); // older configs
  const seen = new Set();
  for (let i = 0; i < 300; i += 1) {
    seen.add(await assignArm("install-0001", `q${i}`, "salt-1234", armsFor(experiment, "bing")));
  }
  assert.deepEqual([...seen].sort(), ["control", "swap_1_2"]);
});
