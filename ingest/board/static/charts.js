// Charts as inline-SVG views (view.js): pure functions of the numbers they draw.

import { churnColor, ciText, crawlLabel, fmt, niceDomain, pct } from "./format.js";
import { s } from "./view.js";

export const WIDE = 1200; // SVG width of charts in full-width panels (scaled down on narrow screens)

const frame = (width, height) => ({ class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });

// The y range of bars with whiskers: [low, high] over values and interval ends, 0 included;
// `symmetric` centres it on 0 (gaps); `floor` (a CTR's 0) is the lowest it goes.
export function barRange(series, symmetric, floor = -Infinity) {
  let lo = 0;
  let hi = 0;
  for (const sr of series) {
    for (const v of sr.values) {
      if (!v || v.value === null) continue;
      for (const x of [v.value, v.ci_low, v.ci_high]) {
        if (x === null || x === undefined) continue;
        lo = Math.min(lo, x);
        hi = Math.max(hi, x);
      }
    }
  }
  if (symmetric) {
    const a = Math.max(Math.abs(lo), Math.abs(hi), 0.01);
    return [-a, a];
  }
  return [Math.max(lo, floor), hi];
}

// Grouped bars with CI whiskers: groups along x, one bar per series in each group. A
// series is {name, color, values}, values one {value, ci_low, ci_high} (or null) per group.
// `floor`: nothing is drawn below it (a CTR's axis starts at 0, whiskers stop there).
export function barChart({ groups, series, symmetric = false, yLabel = "", width = 720, height = 240, floor = -Infinity }) {
  const m = { l: 52, r: 10, t: 10, b: 30 };
  const pw = width - m.l - m.r;
  const ph = height - m.t - m.b;
  const [lo, hi] = barRange(series, symmetric, floor);
  const [d0, y1, step] = niceDomain(lo, hi || 0.1);
  const y0 = Math.max(d0, floor);
  const y = (v) => m.t + ph - ((v - y0) / (y1 - y0)) * ph;
  const decimals = Math.max(0, Math.ceil(-Math.log10(step) - 1e-9));
  const out = [];
  for (let t = y0; t <= y1 + step / 2; t += step) {
    out.push(s("line", { class: "grid-line", x1: m.l, x2: width - m.r, y1: y(t), y2: y(t) }));
    const label = Math.abs(t) < step / 1e6 ? 0 : t;
    out.push(s("text", { x: m.l - 6, y: y(t) + 4, "text-anchor": "end", text: label.toFixed(decimals) }));
  }
  out.push(s("line", { class: "zero", x1: m.l, x2: width - m.r, y1: y(0), y2: y(0) }));
  if (yLabel) {
    out.push(s("text", { x: 12, y: m.t + ph / 2, transform: `rotate(-90 12 ${m.t + ph / 2})`, "text-anchor": "middle", text: yLabel }));
  }
  const band = pw / Math.max(groups.length, 1);
  const bw = (band * 0.8) / Math.max(series.length, 1);
  groups.forEach((g, gi) => {
    const gx = m.l + gi * band + band * 0.1;
    out.push(s("text", { x: m.l + gi * band + band / 2, y: height - 10, "text-anchor": "middle", text: g }));
    series.forEach((sr, si) => {
      const v = sr.values[gi];
      if (!v || v.value === null) return;
      const x = gx + si * bw;
      const top = Math.min(y(v.value), y(0));
      const title = s("title", { text: `${sr.name} ${g}: ${fmt(v.value)} ${ciText(v)}` });
      out.push(s("rect", { x: x + 0.5, y: top, width: Math.max(bw - 1, 1), height: Math.max(Math.abs(y(v.value) - y(0)), 0.5), fill: sr.color }, title));
      if (v.ci_low !== null && v.ci_high !== null && v.ci_low !== undefined) {
        const cx = x + bw / 2;
        const cap = Math.min(bw / 4, 4);
        const low = Math.max(v.ci_low, floor);
        out.push(s("line", { class: "whisker", x1: cx, x2: cx, y1: y(low), y2: y(v.ci_high) }));
        out.push(s("line", { class: "whisker", x1: cx - cap, x2: cx + cap, y1: y(low), y2: y(low) }));
        out.push(s("line", { class: "whisker", x1: cx - cap, x2: cx + cap, y1: y(v.ci_high), y2: y(v.ci_high) }));
      }
    });
  });
  out.push(s("line", { class: "axis", x1: m.l, x2: m.l, y1: m.t, y2: m.t + ph }));
  return s("svg", frame(width, height), out);
}

// One stacked 100% bar per row: rows [{label, shares: {part: share}}], parts [[part, colour]].
export function stackedBars(rows, parts) {
  const width = 520;
  const rowH = 22;
  const m = { l: 120, r: 10, t: 4 };
  const height = m.t + rows.length * rowH + 4;
  const pw = width - m.l - m.r;
  const out = [];
  rows.forEach((r, i) => {
    const yy = m.t + i * rowH;
    out.push(s("text", { x: m.l - 6, y: yy + 15, "text-anchor": "end", text: r.label }));
    let x = m.l;
    for (const [name, color] of parts) {
      const share = r.shares[name] || 0;
      const w = share * pw;
      if (w <= 0) continue;
      out.push(s("rect", { x, y: yy + 3, width: w, height: rowH - 6, fill: color }, s("title", { text: `${r.label} · ${name}: ${pct(share)}` })));
      x += w;
    }
  });
  return s("svg", frame(width, height), out);
}

// Mean churn per depth (rows) and rank (columns) of one engine, with its colour scale.
export function heatmap(grid) {
  const cw = 52;
  const ch = 28;
  const m = { l: 60, t: 34, r: 8, b: 34 };
  const width = Math.max(m.l + grid.ranks.length * cw + m.r, m.l + 5 * 30 + m.r, 200);
  const height = m.t + grid.depths.length * ch + m.b;
  const out = [
    s("text", { class: "title", x: 4, y: 12, text: `${grid.engine}: mean churn` }),
    s("text", { x: 4, y: m.t - 6, text: "depth \\ rank" }),
  ];
  grid.ranks.forEach((r, ci) => {
    out.push(s("text", { x: m.l + ci * cw + cw / 2, y: m.t - 6, "text-anchor": "middle", text: `r${r}` }));
  });
  grid.depths.forEach((d, ri) => {
    out.push(s("text", { x: m.l - 8, y: m.t + ri * ch + ch / 2 + 4, "text-anchor": "end", text: String(d) }));
    grid.ranks.forEach((r, ci) => {
      const v = grid.churn[ri][ci];
      const x = m.l + ci * cw;
      const yy = m.t + ri * ch;
      const title = s("title", { text: `depth ${d}, rank ${r}: churn ${fmt(v, 3)} over ${grid.pairs[ri][ci] ?? 0} pairs` });
      const fill = v === null ? "#eef0f2" : churnColor(v);
      out.push(s("rect", { x: x + 1, y: yy + 1, width: cw - 2, height: ch - 2, fill, "data-depth": d, "data-rank": r, "data-value": v === null ? null : v }, title));
      if (v !== null) {
        out.push(s("text", { class: v > 0.55 ? "cell light" : "cell", x: x + cw / 2, y: yy + ch / 2 + 4, "text-anchor": "middle", text: fmt(v, 2) }));
      }
    });
  });
  const ly = m.t + grid.depths.length * ch + 12;
  out.push(s("text", { x: 4, y: ly + 11, text: "scale" }));
  [0, 0.25, 0.5, 0.75, 1].forEach((v, i) => {
    out.push(s("rect", { x: m.l + i * 30, y: ly, width: 28, height: 14, fill: churnColor(v) }));
    out.push(s("text", { class: v > 0.55 ? "cell light" : "cell", x: m.l + i * 30 + 14, y: ly + 11, "text-anchor": "middle", text: String(v) }));
  });
  return s("svg", frame(width, height), out);
}

// The "x,y x,y ..." of a polyline through the rounds that have `key` (null ones skipped).
export function linePoints(rounds, key, x, y) {
  return rounds.map((p, i) => (p[key] === null ? null : `${x(i)},${y(p[key])}`)).filter(Boolean);
}

// "dropped of evaluated" roots of a shock, "?" where the details do not say.
export function shockCounts(round) {
  const d = round.shock_details || {};
  return [Array.isArray(d.roots) ? d.roots.length : "?", d.roots_evaluated ?? "?"];
}

// nmi per crawl round of one engine (mean and lowest root), shocks as bands.
export function nmiChart(series) {
  const width = 560;
  const height = 230;
  const m = { l: 44, r: 30, t: 26, b: 42 };
  const pw = width - m.l - m.r;
  const ph = height - m.t - m.b;
  const rounds = series.rounds;
  const n = rounds.length;
  const x = (i) => m.l + (n === 1 ? pw / 2 : (i / (n - 1)) * pw);
  const y = (v) => m.t + ph - v * ph;
  const out = [s("text", { class: "title", x: 4, y: 14, text: `${series.engine}: nmi per crawl round (1 = nothing changed)` })];
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    out.push(s("line", { class: "grid-line", x1: m.l, x2: width - m.r, y1: y(t), y2: y(t) }));
    out.push(s("text", { x: m.l - 6, y: y(t) + 4, "text-anchor": "end", text: t.toFixed(2) }));
  }
  const half = n > 1 ? pw / (n - 1) / 2 : 20;
  rounds.forEach((p, i) => {
    if (!p.shock) return;
    const [dropped, evaluated] = shockCounts(p);
    const title = s("title", { text: `shock in ${p.crawl_id}: ${dropped} of ${evaluated} roots dropped` });
    out.push(s("rect", { class: "shock-band", x: x(i) - half, y: m.t, width: 2 * half, height: ph, "data-shock": p.crawl_id }, title));
    out.push(s("text", { class: "shock-label", x: x(i), y: m.t - 2, "text-anchor": "middle", text: "shock" }));
  });
  const line = (key, color, dash) => {
    const pts = linePoints(rounds, key, x, y);
    if (pts.length > 1) out.push(s("polyline", { points: pts.join(" "), fill: "none", stroke: color, "stroke-width": 2, "stroke-dasharray": dash }));
    rounds.forEach((p, i) => {
      if (p[key] === null) return;
      const title = s("title", { text: `${p.crawl_id} (${p.completed_at}): ${key.replace("_", " ")} ${fmt(p[key])} over ${p.roots} roots` });
      out.push(s("circle", { cx: x(i), cy: y(p[key]), r: 3.5, fill: p.shock ? "#b3261e" : color }, title));
    });
  };
  line("min_nmi", "#9aa3ad", "4 3");
  line("mean_nmi", "#1f4e79", null);
  const every = Math.max(1, Math.ceil(n / 8));
  rounds.forEach((p, i) => {
    if (i % every !== 0 && i !== n - 1) return;
    out.push(s("text", { x: x(i), y: height - m.b + 14, "text-anchor": "middle", text: crawlLabel(p.crawl_id) }));
  });
  out.push(s("line", { class: "axis", x1: m.l, x2: m.l, y1: m.t, y2: m.t + ph }));
  return s("svg", frame(width, height), out);
}
