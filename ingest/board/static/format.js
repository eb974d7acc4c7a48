// Numbers, intervals, colours and scales as text: pure functions, no DOM.

export const ARM_COLORS = {
  control: "#1f4e79",
  swap_1_2: "#e07b39",
  swap_1_3: "#c23b22",
  swap_2_3: "#d4a017",
  hide_box: "#2e8b57",
  hide_ads_box: "#6a5acd",
  hide_ads_box_swap_1_2: "#8b4513",
};
export const PALETTE = ["#17becf", "#bcbd22", "#7f7f7f", "#e377c2", "#9467bd", "#8c564b", "#2ca02c"];

// A number with fixed digits; "–" where there is none.
export function fmt(v, digits = 3) {
  return v === null || v === undefined || Number.isNaN(v) ? "–" : Number(v).toFixed(digits);
}

// A share as a percentage; "–" where there is none.
export function pct(v, digits = 1) {
  return v === null || v === undefined ? "–" : (100 * v).toFixed(digits) + "%";
}

// "[low, high]" of an estimate ({value, ci_low, ci_high}); "" without an interval.
export function ciText(e) {
  return e && e.ci_low !== null && e.ci_high !== null ? `[${fmt(e.ci_low)}, ${fmt(e.ci_high)}]` : "";
}

// An arm's colour: its own where it has one, else the i-th of the palette.
export function colorOf(arm, i) {
  // own keys only: an arm named "constructor" or "toString" would find Object's
  return Object.hasOwn(ARM_COLORS, arm) ? ARM_COLORS[arm] : PALETTE[i % PALETTE.length];
}

// {arm: colour} for arms in the order given (the colour of an unknown arm is its position's).
export function armColors(arms) {
  return Object.fromEntries(arms.map((arm, i) => [arm, colorOf(arm, i)]));
}

// "c1" ... "c<ranks>": the positions of a Figure-3 table.
export function positions(ranks) {
  return Array.from({ length: ranks }, (_, i) => `c${i + 1}`);
}

// A round step (1, 2 or 5 times a power of ten) giving about `ticks` ticks over `span`.
export function niceStep(span, ticks) {
  const raw = span / Math.max(ticks, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  return (norm >= 5 ? 10 : norm >= 2 ? 5 : norm >= 1 ? 2 : 1) * mag;
}

// [low, high, step]: the data's range widened to whole steps.
export function niceDomain(lo, hi) {
  if (!(hi > lo)) hi = lo + 1;
  const step = niceStep(hi - lo, 5);
  return [Math.floor(lo / step) * step, Math.ceil(hi / step) * step, step];
}

// white (stable) -> dark orange (every suggestion replaced)
export function churnColor(v) {
  const a = [255, 245, 235];
  const b = [127, 39, 4];
  const t = Math.max(0, Math.min(1, v));
  return `rgb(${a.map((c, i) => Math.round(c + (b[i] - c) * t)).join(",")})`;
}

// A crawl id's short label on an axis: what follows its last "-", at most 12 characters.
export function crawlLabel(crawlId) {
  const tail = crawlId.slice(crawlId.lastIndexOf("-") + 1) || crawlId;
  return tail.length > 12 ? "…" + tail.slice(-11) : tail;
}

// The status line after a refresh: "live" when every panel refreshed, else "partly stale".
export function statusLine(ok, when, everyMs) {
  const stamp = when.toISOString().slice(11, 19);
  return `${ok ? "live" : "partly stale"} · updated ${stamp} UTC · every ${everyMs / 1000} s`;
}
