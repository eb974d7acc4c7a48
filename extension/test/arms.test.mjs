import { test } from "node:test";
import assert from "node:assert/strict";
import { displayOrder, parseArm } from "../lib/arms.js";

test("the paper's arms parse into what they do", () => {
  assert.deepEqual(parseArm("control"), { hideAds: false, hideBox: false, swap: null, needs: 0 });
  assert.deepEqual(parseArm("swap_1_3"), { hideAds: false, hideBox: false, swap: [1, 3], needs: 3 });
  assert.deepEqual(parseArm("hide_ads_box"), { hideAds: true, hideBox: true, swap: null, needs: 0 });
  assert.deepEqual(parseArm("hide_box"), { hideAds: false, hideBox: true, swap: null, needs: 0 });
  assert.deepEqual(parseArm("hide_ads_box_swap_1_2"), { hideAds: true, hideBox: true, swap: [1, 2], needs: 2 });
  for (const bad of ["swap_2_1", "swap_1_1", "hide_everything", "swap_1_2_3", "", "hide_box_"]) {
    assert.equal(parseArm(bad), null, bad);
  }
});

test("display orders swap exactly the two named positions", () => {
  assert.deepEqual(displayOrder(5, parseArm("control")), [1, 2, 3, 4, 5]);
  assert.deepEqual(displayOrder(5, parseArm("swap_1_2")), [2, 1, 3, 4, 5]);
  assert.deepEqual(displayOrder(5, parseArm("swap_1_3")), [3, 2, 1, 4, 5]);
  assert.deepEqual(displayOrder(5, parseArm("swap_2_3")), [1, 3, 2, 4, 5]);
  assert.deepEqual(displayOrder(2, parseArm("swap_1_3")), [1, 2]); // too few results: untouched
});
