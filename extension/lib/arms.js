// What an arm does to a result page (the paper's Figure 5): swap two of the first three
// organic results, hide the ads and the shopping box, hide the box, or a combination such
// as hide_ads_box_swap_1_2. Pure functions: the DOM work is in page.js.

const ARM = /^(?:(hide_ads_box|hide_box|hide_ads)(?:_(?=swap)|$))?(?:swap_([1-9])_([1-9]))?$/;

// {hideAds, hideBox, swap: [i, j] | null, needs: organic results required}, or null when
// the arm is not one this extension knows how to apply.
export function parseArm(arm) {
  if (arm === "control") return { hideAds: false, hideBox: false, swap: null, needs: 0 };
  const m = ARM.exec(arm);
  if (!m || (!m[1] && !m[2])) return null;
  const swap = m[2] ? [Number(m[2]), Number(m[3])] : null;
  if (swap && (swap[0] >= swap[1])) return null;
  return {
    hideAds: m[1] === "hide_ads_box" || m[1] === "hide_ads",
    hideBox: m[1] === "hide_ads_box" || m[1] === "hide_box",
    swap,
    needs: swap ? swap[1] : 0,
  };
}

// The display order of n organic results under an arm: displayed[k] = original rank
// (1-based) of the result shown at display position k + 1.
export function displayOrder(n, plan) {
  const order = Array.from({ length: n }, (_, i) => i + 1);
  if (plan && plan.swap && plan.swap[1] <= n) {
    const [i, j] = plan.swap;
    [order[i - 1], order[j - 1]] = [order[j - 1], order[i - 1]];
  }
  return order;
}
