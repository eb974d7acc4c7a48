// auditstream live board: polls /v1/board/* with the key from the URL fragment and draws
// every panel as HTML tables and inline SVG. No third-party code; text is set with
// textContent only (suggestions, queries and ids are data, never markup).
"use strict";

(() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const DEFAULT_EVERY_MS = 3000;
  const WIDE = 1200; // SVG width of charts in full-width panels (scaled down on narrow screens)
  const ARM_COLORS = {
    control: "#1f4e79",
    swap_1_2: "#e07b39",
    swap_1_3: "#c23b22",
    swap_2_3: "#d4a017",
    hide_box: "#2e8b57",
    hide_ads_box: "#6a5acd",
    hide_ads_box_swap_1_2: "#8b4513",
  };
  const PALETTE = ["#17becf", "#bcbd22", "#7f7f7f", "#e377c2", "#9467bd", "#8c564b", "#2ca02c"];
  const ELEMENTS = [
    ["organic", "#4a7fb5"],
    ["ad", "#e07b39"],
    ["shopping_box", "#2e8b57"],
    ["ssr", "#d4a017"],
    ["other", "#9aa3ad"],
  ];

  const state = {
    key: "",
    experiment: "",
    engine: "",
    ac: null, // crawl id prefix; "" = every crawl; null = the newest study
    ps: "",
    every: DEFAULT_EVERY_MS,
    timer: 0,
    busy: false,
    again: false,
    stopped: true,
    index: null,
  };

  // ------------------------------------------------------------------ small helpers

  const $ = (id) => document.getElementById(id);

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function s(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, String(v));
    }
  }

  function append(node, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }

  function fmt(v, digits = 3) {
    return v === null || v === undefined || Number.isNaN(v) ? "–" : Number(v).toFixed(digits);
  }

  function pct(v, digits = 1) {
    return v === null || v === undefined ? "–" : (100 * v).toFixed(digits) + "%";
  }

  function colorOf(arm, i) {
    // own keys only: an arm named "constructor" or "toString" would find Object's
    return Object.hasOwn(ARM_COLORS, arm) ? ARM_COLORS[arm] : PALETTE[i % PALETTE.length];
  }

  function swatch(color) {
    return s("svg", { width: 12, height: 12, "aria-hidden": "true" }, s("rect", { width: 12, height: 12, rx: 2, fill: color }));
  }

  function legend(items) {
    return h("div", { class: "legend" }, items.map(([label, color]) => h("span", {}, swatch(color), label)));
  }

  function niceStep(span, ticks) {
    const raw = span / Math.max(ticks, 1);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const norm = raw / mag;
    return (norm >= 5 ? 10 : norm >= 2 ? 5 : norm >= 1 ? 2 : 1) * mag;
  }

  function niceDomain(lo, hi) {
    if (!(hi > lo)) hi = lo + 1;
    const step = niceStep(hi - lo, 5);
    return [Math.floor(lo / step) * step, Math.ceil(hi / step) * step, step];
  }

  // A cell of a data table; `field` and `value` make the number readable from the DOM.
  function cell(text, opts = {}) {
    const td = h("td", {
      "data-field": opts.field,
      "data-arm": opts.arm,
      "data-value": opts.value === undefined || opts.value === null ? null : String(opts.value),
    });
    td.textContent = text;
    if (opts.ci) td.appendChild(h("span", { class: "ci", text: opts.ci }));
    return td;
  }

  function ciText(e) {
    return e && e.ci_low !== null && e.ci_high !== null ? `[${fmt(e.ci_low)}, ${fmt(e.ci_high)}]` : "";
  }

  function dataTable(headers, rows) {
    return h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "data" },
        h("thead", {}, h("tr", {}, headers.map((t) => h("th", { text: t })))),
        h("tbody", {}, rows),
      ),
    );
  }

  function setPanel(id, rows, nodes, emptyNote, extra) {
    const panel = $(id);
    const body = panel.querySelector(".body");
    body.replaceChildren();
    panel.dataset.rows = String(rows);
    panel.dataset.state = rows > 0 ? "ready" : "empty";
    for (const [k, v] of Object.entries(extra || {})) panel.dataset[k] = String(v);
    if (rows > 0) append(body, nodes);
    else body.appendChild(h("p", { class: "note", text: emptyNote }));
  }

  function panelError(ids, message) {
    for (const id of ids) {
      const panel = $(id);
      panel.dataset.state = "error";
      // Keep what was drawn; say why it is not current.
      const body = panel.querySelector(".body");
      let note = body.querySelector(".note.error");
      if (!note) {
        note = h("p", { class: "note error" });
        body.prepend(note);
      }
      note.textContent = `could not refresh: ${message}`;
    }
  }

  // ------------------------------------------------------------------ charts (inline SVG)

  // Grouped bars with CI whiskers: groups along x, one bar per series in each group.
  function barChart({ groups, series, symmetric = false, yLabel = "", width = 720, height = 240 }) {
    const m = { l: 52, r: 10, t: 10, b: 30 };
    const pw = width - m.l - m.r;
    const ph = height - m.t - m.b;
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
      lo = -a;
      hi = a;
    }
    const [y0, y1, step] = niceDomain(lo, hi || 0.1);
    const y = (v) => m.t + ph - ((v - y0) / (y1 - y0)) * ph;
    const decimals = Math.max(0, Math.ceil(-Math.log10(step) - 1e-9));
    const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
    for (let t = y0; t <= y1 + step / 2; t += step) {
      svg.appendChild(s("line", { class: "grid-line", x1: m.l, x2: width - m.r, y1: y(t), y2: y(t) }));
      const label = Math.abs(t) < step / 1e6 ? 0 : t;
      svg.appendChild(s("text", { x: m.l - 6, y: y(t) + 4, "text-anchor": "end", text: label.toFixed(decimals) }));
    }
    svg.appendChild(s("line", { class: "zero", x1: m.l, x2: width - m.r, y1: y(0), y2: y(0) }));
    if (yLabel) {
      svg.appendChild(s("text", { x: 12, y: m.t + ph / 2, transform: `rotate(-90 12 ${m.t + ph / 2})`, "text-anchor": "middle", text: yLabel }));
    }
    const band = pw / Math.max(groups.length, 1);
    const bw = (band * 0.8) / Math.max(series.length, 1);
    groups.forEach((g, gi) => {
      const gx = m.l + gi * band + band * 0.1;
      svg.appendChild(s("text", { x: m.l + gi * band + band / 2, y: height - 10, "text-anchor": "middle", text: g }));
      series.forEach((sr, si) => {
        const v = sr.values[gi];
        if (!v || v.value === null) return;
        const x = gx + si * bw;
        const top = Math.min(y(v.value), y(0));
        const bar = s("rect", {
          x: x + 0.5,
          y: top,
          width: Math.max(bw - 1, 1),
          height: Math.max(Math.abs(y(v.value) - y(0)), 0.5),
          fill: sr.color,
        });
        bar.appendChild(s("title", { text: `${sr.name} ${g}: ${fmt(v.value)} ${ciText(v)}` }));
        svg.appendChild(bar);
        if (v.ci_low !== null && v.ci_high !== null && v.ci_low !== undefined) {
          const cx = x + bw / 2;
          const cap = Math.min(bw / 4, 4);
          svg.appendChild(s("line", { class: "whisker", x1: cx, x2: cx, y1: y(v.ci_low), y2: y(v.ci_high) }));
          svg.appendChild(s("line", { class: "whisker", x1: cx - cap, x2: cx + cap, y1: y(v.ci_low), y2: y(v.ci_low) }));
          svg.appendChild(s("line", { class: "whisker", x1: cx - cap, x2: cx + cap, y1: y(v.ci_high), y2: y(v.ci_high) }));
        }
      });
    });
    svg.appendChild(s("line", { class: "axis", x1: m.l, x2: m.l, y1: m.t, y2: m.t + ph }));
    return svg;
  }

  // One stacked 100% bar per row (element-type shares).
  function stackedBars(rows, parts) {
    const width = 520;
    const rowH = 22;
    const m = { l: 120, r: 10, t: 4 };
    const height = m.t + rows.length * rowH + 4;
    const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
    const pw = width - m.l - m.r;
    rows.forEach((r, i) => {
      const yy = m.t + i * rowH;
      svg.appendChild(s("text", { x: m.l - 6, y: yy + 15, "text-anchor": "end", text: r.arm }));
      let x = m.l;
      for (const [name, color] of parts) {
        const share = r[name] || 0;
        const w = share * pw;
        if (w <= 0) continue;
        const rect = s("rect", { x, y: yy + 3, width: w, height: rowH - 6, fill: color });
        rect.appendChild(s("title", { text: `${r.arm} · ${name}: ${pct(share)}` }));
        svg.appendChild(rect);
        x += w;
      }
    });
    return svg;
  }

  function churnColor(v) {
    // white (stable) -> dark orange (every suggestion replaced)
    const a = [255, 245, 235];
    const b = [127, 39, 4];
    const t = Math.max(0, Math.min(1, v));
    return `rgb(${a.map((c, i) => Math.round(c + (b[i] - c) * t)).join(",")})`;
  }

  function heatmap(grid) {
    const cw = 52;
    const ch = 28;
    const m = { l: 60, t: 34, r: 8, b: 34 };
    const width = Math.max(m.l + grid.ranks.length * cw + m.r, m.l + 5 * 30 + m.r, 200);
    const height = m.t + grid.depths.length * ch + m.b;
    const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
    svg.appendChild(s("text", { class: "title", x: 4, y: 12, text: `${grid.engine}: mean churn` }));
    svg.appendChild(s("text", { x: 4, y: m.t - 6, text: "depth \\ rank" }));
    grid.ranks.forEach((r, ci) => {
      svg.appendChild(s("text", { x: m.l + ci * cw + cw / 2, y: m.t - 6, "text-anchor": "middle", text: `r${r}` }));
    });
    grid.depths.forEach((d, ri) => {
      svg.appendChild(s("text", { x: m.l - 8, y: m.t + ri * ch + ch / 2 + 4, "text-anchor": "end", text: String(d) }));
      grid.ranks.forEach((r, ci) => {
        const v = grid.churn[ri][ci];
        const x = m.l + ci * cw;
        const yy = m.t + ri * ch;
        const rect = s("rect", {
          x: x + 1,
          y: yy + 1,
          width: cw - 2,
          height: ch - 2,
          fill: v === null ? "#eef0f2" : churnColor(v),
          "data-depth": d,
          "data-rank": r,
          "data-value": v === null ? null : v,
        });
        rect.appendChild(s("title", { text: `depth ${d}, rank ${r}: churn ${fmt(v, 3)} over ${grid.pairs[ri][ci] ?? 0} pairs` }));
        svg.appendChild(rect);
        if (v !== null) {
          svg.appendChild(s("text", { class: v > 0.55 ? "cell light" : "cell", x: x + cw / 2, y: yy + ch / 2 + 4, "text-anchor": "middle", text: fmt(v, 2) }));
        }
      });
    });
    // colour scale
    const ly = m.t + grid.depths.length * ch + 12;
    svg.appendChild(s("text", { x: 4, y: ly + 11, text: "scale" }));
    [0, 0.25, 0.5, 0.75, 1].forEach((v, i) => {
      svg.appendChild(s("rect", { x: m.l + i * 30, y: ly, width: 28, height: 14, fill: churnColor(v) }));
      svg.appendChild(s("text", { class: v > 0.55 ? "cell light" : "cell", x: m.l + i * 30 + 14, y: ly + 11, "text-anchor": "middle", text: String(v) }));
    });
    return svg;
  }

  function nmiChart(series) {
    const width = 560;
    const height = 230;
    const m = { l: 44, r: 30, t: 26, b: 42 };
    const pw = width - m.l - m.r;
    const ph = height - m.t - m.b;
    const rounds = series.rounds;
    const n = rounds.length;
    const x = (i) => m.l + (n === 1 ? pw / 2 : (i / (n - 1)) * pw);
    const y = (v) => m.t + ph - v * ph;
    const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });
    svg.appendChild(s("text", { class: "title", x: 4, y: 14, text: `${series.engine}: nmi per crawl round (1 = nothing changed)` }));
    for (const t of [0, 0.25, 0.5, 0.75, 1]) {
      svg.appendChild(s("line", { class: "grid-line", x1: m.l, x2: width - m.r, y1: y(t), y2: y(t) }));
      svg.appendChild(s("text", { x: m.l - 6, y: y(t) + 4, "text-anchor": "end", text: t.toFixed(2) }));
    }
    const half = n > 1 ? pw / (n - 1) / 2 : 20;
    rounds.forEach((p, i) => {
      if (!p.shock) return;
      const band = s("rect", { class: "shock-band", x: x(i) - half, y: m.t, width: 2 * half, height: ph, "data-shock": p.crawl_id });
      const d = p.shock_details || {};
      const dropped = Array.isArray(d.roots) ? d.roots.length : "?";
      band.appendChild(s("title", { text: `shock in ${p.crawl_id}: ${dropped} of ${d.roots_evaluated ?? "?"} roots dropped` }));
      svg.appendChild(band);
      svg.appendChild(s("text", { class: "shock-label", x: x(i), y: m.t - 2, "text-anchor": "middle", text: "shock" }));
    });
    const line = (key, color, dash) => {
      const pts = rounds.map((p, i) => (p[key] === null ? null : `${x(i)},${y(p[key])}`)).filter(Boolean);
      if (pts.length > 1) svg.appendChild(s("polyline", { points: pts.join(" "), fill: "none", stroke: color, "stroke-width": 2, "stroke-dasharray": dash }));
      rounds.forEach((p, i) => {
        if (p[key] === null) return;
        const dot = s("circle", { cx: x(i), cy: y(p[key]), r: 3.5, fill: p.shock ? "#b3261e" : color });
        dot.appendChild(s("title", { text: `${p.crawl_id} (${p.completed_at}): ${key.replace("_", " ")} ${fmt(p[key])} over ${p.roots} roots` }));
        svg.appendChild(dot);
      });
    };
    line("min_nmi", "#9aa3ad", "4 3");
    line("mean_nmi", "#1f4e79", null);
    const every = Math.max(1, Math.ceil(n / 8));
    rounds.forEach((p, i) => {
      if (i % every !== 0 && i !== n - 1) return;
      const tail = p.crawl_id.slice(p.crawl_id.lastIndexOf("-") + 1) || p.crawl_id;
      const label = tail.length > 12 ? "…" + tail.slice(-11) : tail;
      svg.appendChild(s("text", { x: x(i), y: height - m.b + 14, "text-anchor": "middle", text: label }));
    });
    svg.appendChild(s("line", { class: "axis", x1: m.l, x2: m.l, y1: m.t, y2: m.t + ph }));
    return svg;
  }

  // ------------------------------------------------------------------ panels

  function renderExperiment(d) {
    const f3 = d.figure3;
    $("exp-title").textContent =
      `${d.experiment_id} · ${d.engine} · burn-in ${d.burn_in_days} d · unit: ${d.unit_mode}` +
      (d.registry_status ? ` · ${d.registry_status}` : " · not registered");
    const positions = Array.from({ length: f3.ranks }, (_, i) => `c${i + 1}`);
    const arms = f3.arms;
    const colors = Object.fromEntries(arms.map((a, i) => [a.arm, colorOf(a.arm, i)]));

    // Figure 3: CTR
    setPanel(
      "panel-ctr",
      arms.length,
      [
        legend(arms.map((a) => [a.arm, colors[a.arm]])),
        barChart({ groups: positions, series: arms.map((a) => ({ name: a.arm, color: colors[a.arm], values: a.ctr })), yLabel: "CTR", width: WIDE }),
        dataTable(
          ["arm", "units", "installs", ...positions.map((p) => `CTR ${p} [95% CI]`)],
          arms.map((a) =>
            h(
              "tr",
              { "data-arm": a.arm },
              cell(a.arm),
              cell(String(a.units), { field: "units", arm: a.arm, value: a.units }),
              cell(String(a.installs), { field: "installs", arm: a.arm, value: a.installs }),
              a.ctr.map((e, i) => cell(fmt(e.value), { field: `ctr_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
            ),
          ),
        ),
      ],
      "No units after preprocessing yet.",
    );

    // Figure 3: gaps
    const gapArms = arms.filter((a) => a.delta.length);
    const shown = Math.min(3, f3.ranks);
    const gapNodes = [
      legend(gapArms.map((a) => [a.arm, colors[a.arm]])),
      barChart({ groups: positions, series: gapArms.map((a) => ({ name: a.arm, color: colors[a.arm], values: a.delta })), symmetric: true, yLabel: "δ = CTR − CTR(control)", width: WIDE }),
      dataTable(
        ["arm", ...positions.slice(0, shown).map((p) => `δ ${p} [95% CI]`), ...positions.slice(0, shown).map((p) => `β ${p} [95% CI]`)],
        gapArms.map((a) =>
          h(
            "tr",
            { "data-arm": a.arm },
            cell(a.arm),
            a.delta.slice(0, shown).map((e, i) => cell(fmt(e.value), { field: `delta_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
            a.beta.slice(0, shown).map((e, i) => cell(fmt(e.value, 2), { field: `beta_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
          ),
        ),
      ),
    ];
    if (d.weighted) {
      const w = d.weighted;
      gapNodes.push(h("p", { class: "note", "data-weighted": "1", text: `Reweighted to the target population (${w.installs_raked} installs raked, effective sample size ${w.effective_sample_size}):` }));
      for (const a of w.figure3.arms) {
        const delta = a.delta.length ? `, δ c1 ${fmt(a.delta[0].value)} ${ciText(a.delta[0])}` : "";
        gapNodes.push(h("p", { class: "note", "data-weighted-arm": a.arm, text: `${a.arm}: CTR c1 ${fmt(a.ctr[0].value)} ${ciText(a.ctr[0])}${delta}` }));
      }
    }
    if (d.interval_guarantee) {
      gapNodes.push(h("p", { class: "note", "data-intervals": d.intervals, text: `Intervals: ${d.interval_guarantee}.` }));
    }
    for (const [arm, day] of Object.entries(d.decisions || {})) {
      gapNodes.push(h("p", { class: "note", "data-decision": arm, text: `Decision, ${arm}: δ c1 excluded zero ${day ? "first on " + day : "not yet"}.` }));
    }
    if (f3.performative_power_lower_bound !== null) {
      gapNodes.push(h("p", { class: "note", text: `Performative power, lower bound (max |δ c1| over arms): ${fmt(f3.performative_power_lower_bound)}` }));
    }
    setPanel("panel-gap", gapArms.length, gapNodes, arms.length ? "No control arm yet: gaps need one." : "No units after preprocessing yet.");

    // Figure 4: element-type shares
    const shares = d.element_shares;
    setPanel(
      "panel-shares",
      shares.length,
      [
        legend(ELEMENTS),
        stackedBars(shares, ELEMENTS),
        dataTable(
          ["arm", "clicks", ...ELEMENTS.map(([n]) => n)],
          shares.map((r) =>
            h("tr", { "data-arm": r.arm }, cell(r.arm), cell(String(r.clicks), { field: "clicks", arm: r.arm, value: r.clicks }), ELEMENTS.map(([n]) => cell(pct(r[n]), { field: n, arm: r.arm, value: r[n] }))),
          ),
        ),
      ],
      "No clicks after preprocessing yet.",
    );

    // Figure 5: the box subset
    const box = d.box_subset;
    const boxPositions = Array.from({ length: box.ranks }, (_, i) => `c${i + 1}`);
    const boxNodes = [
      dataTable(
        ["arm", "units", ...boxPositions.map((p) => `CTR ${p}`), "δ c1", "β c1"],
        box.arms.map((a) =>
          h(
            "tr",
            { "data-arm": a.arm },
            cell(a.arm),
            cell(String(a.units), { field: "units", arm: a.arm, value: a.units }),
            a.ctr.map((e, i) => cell(fmt(e.value), { field: `ctr_c${i + 1}`, arm: a.arm, value: e.value, ci: ciText(e) })),
            a.delta.length ? cell(fmt(a.delta[0].value), { field: "delta_c1", arm: a.arm, value: a.delta[0].value, ci: ciText(a.delta[0]) }) : cell(a.arm === box.baseline ? "baseline" : "–"),
            a.beta.length ? cell(fmt(a.beta[0].value, 2), { field: "beta_c1", arm: a.arm, value: a.beta[0].value, ci: ciText(a.beta[0]) }) : cell(""),
          ),
        ),
      ),
    ];
    boxNodes.push(
      h("p", {
        class: "note",
        text: box.has_baseline
          ? `Pages with a shopping box only; δ and β against ${box.baseline} (the paper's Figure 5), 95% CI.`
          : `No ${box.baseline} arm among pages with a box: no gaps.`,
      }),
    );
    setPanel("panel-box", box.arms.length, boxNodes, "No units on pages with a shopping box yet.");

    // SRM
    const srm = d.srm;
    const explain = {
      ok: `units match the allocation (p = ${fmt(srm.p_value, 4)} ≥ ${srm.alpha})`,
      mismatch: `live test: p = ${fmt(srm.p_value, 6)} < ${srm.alpha}; the worker raises an alert at its next check`,
      alert: "a sample-ratio-mismatch alert was raised",
      unregistered: "not in the experiment registry: no allocation to test against",
      no_units: "no units after preprocessing yet",
    };
    const srmNodes = [
      h("p", {}, h("span", { class: `badge ${srm.status}`, "data-status": srm.status, text: srm.status.replace("_", " ") }), " ", explain[srm.status] || ""),
      srm.chi2 !== null ? h("p", { class: "note", text: `χ² = ${fmt(srm.chi2, 2)} over ${srm.units} units (identified, past burn-in)` }) : null,
      dataTable(
        ["arm", "units", "share", "allocation"],
        srm.arms.map((a) =>
          h("tr", { "data-arm": a.arm }, cell(a.arm), cell(String(a.units), { field: "units", arm: a.arm, value: a.units }), cell(pct(a.share, 2), { field: "share", arm: a.arm, value: a.share }), cell(pct(a.expected_share, 2), { field: "expected_share", arm: a.arm, value: a.expected_share })),
        ),
      ),
      srm.alerts.map((a) => h("p", { class: "note error", text: `${a.created_at} · ${a.summary}` })),
    ];
    setPanel("panel-srm", srm.arms.length, srmNodes, "No units and no allocation yet.", { status: srm.status });

    // Per market: a layout one country is served, or an arm that breaks a localized page
    const markets = d.markets || [];
    setPanel(
      "panel-markets",
      markets.length,
      [
        dataTable(
          ["market", "events", "identified", "kept clicks", "SRM p"],
          markets.map((m) =>
            h(
              "tr",
              { "data-market": m.market, class: m.srm_mismatch ? "mismatch" : "" },
              cell(m.market || "(unknown)"),
              cell(String(m.events), { field: "events", arm: m.market, value: m.events }),
              cell(pct(m.identified_share, 1), { field: "identified_share", arm: m.market, value: m.identified_share }),
              cell(String(Object.values(m.units_by_arm).reduce((a, b) => a + b, 0))),
              cell(m.srm_p_value === null ? "–" : fmt(m.srm_p_value, 4) + (m.srm_mismatch ? " mismatch" : ""), { field: "srm_p_value", arm: m.market, value: m.srm_p_value }),
            ),
          ),
        ),
        h("p", { class: "note", text: "Identified share of all events per engine market (the Google domain's country, Bing's market); SRM of the clicks kept after preprocessing against the allocation." }),
      ],
      "No events yet.",
    );

    // Preprocessing drops
    const drops = d.drops;
    const total = (k) => drops.reduce((acc, r) => acc + r[k], 0);
    const cols = ["all_units", "burn_in_dropped", "unidentified_dropped", "kept"];
    setPanel(
      "panel-drops",
      drops.length,
      [
        dataTable(
          ["arm", "all units", `burn-in (< ${d.burn_in_days} d)`, "unidentified", "kept"],
          [
            ...drops.map((r) => h("tr", { "data-arm": r.arm }, cell(r.arm), cols.map((k) => cell(String(r[k]), { field: k, arm: r.arm, value: r[k] })))),
            h("tr", { class: "total" }, cell("total"), cols.map((k) => cell(String(total(k)), { field: k, arm: "*", value: total(k) }))),
          ],
        ),
      ],
      "No units yet.",
    );
  }

  function clearExperiment(note) {
    $("exp-title").textContent = "";
    for (const id of ["panel-ctr", "panel-gap", "panel-shares", "panel-box", "panel-srm", "panel-markets", "panel-drops"]) setPanel(id, 0, [], note);
  }

  function renderAutocomplete(d) {
    $("ac-title").textContent = d.study ? `crawls ${d.study}*` : "every crawl";
    const cells = d.churn.reduce((acc, g) => acc + g.churn.flat().filter((v) => v !== null).length, 0);
    setPanel(
      "panel-churn",
      cells,
      [h("div", { class: "charts" }, d.churn.map(heatmap)), h("p", { class: "note", text: "1 − Jaccard of the suggestion sets at each rank and depth between a root's consecutive completed crawls, averaged over roots and crawl pairs." })],
      "No pair of completed crawls yet.",
    );
    const rounds = d.nmi.reduce((acc, sr) => acc + sr.rounds.length, 0);
    const shocks = d.nmi.flatMap((sr) => sr.rounds.filter((p) => p.shock).map((p) => ({ ...p, engine: sr.engine })));
    setPanel(
      "panel-nmi",
      rounds,
      [
        h("div", { class: "charts" }, d.nmi.map(nmiChart)),
        legend([["mean nmi over roots", "#1f4e79"], ["lowest root", "#9aa3ad"], ["shock (alert raised)", "#b3261e"]]),
        shocks.map((p) => {
          const det = p.shock_details || {};
          const n = Array.isArray(det.roots) ? det.roots.length : "?";
          return h("p", { class: "note error", "data-shock": p.crawl_id, text: `shock · ${p.engine} · ${p.crawl_id}: ${n} of ${det.roots_evaluated ?? "?"} roots dropped below their baseline` });
        }),
      ],
      "nmi needs two completed crawls of a root.",
      { shocks: shocks.length },
    );
  }

  function renderPersonalization(d) {
    $("ps-title").textContent = d.study_id ? d.study_id : "";
    const treatments = d.treatments;
    const ranks = [...new Set(treatments.flatMap((t) => t.ranks.map((r) => r.rank)))].sort((a, b) => a - b);
    const byRank = (t, key) => ranks.map((rk) => {
      const p = t.ranks.find((r) => r.rank === rk);
      return p && p[key] !== null ? { value: p[key], ci_low: null, ci_high: null } : null;
    });
    const series = treatments.map((t, i) => ({ name: t.treatment || "(none)", color: PALETTE[(i + 4) % PALETTE.length], values: byRank(t, "changed") }));
    if (treatments.length) series.push({ name: "noise floor (control vs twin)", color: "#c9ced4", values: byRank(treatments[0], "noise") });
    const points = treatments.reduce((acc, t) => acc + t.ranks.length, 0);
    const at = (t, rk) => t.ranks.find((p) => p.rank === rk) || {};
    const noiseAt = (rk) => {
      const t = treatments.find((tr) => at(tr, rk).noise !== undefined);
      return t ? at(t, rk).noise : null;
    };
    const r = d.rounds;
    setPanel(
      "panel-pers",
      points,
      [
        legend(series.map((sr) => [sr.name, sr.color])),
        barChart({ groups: ranks.map((rk) => `rank ${rk}`), series, yLabel: "share changed", height: 220, width: WIDE }),
        r ? h("p", { class: "note", text: `${r.rounds} rounds: ${r.complete} complete, ${r.incomplete} incomplete, ${r.waiting} waiting · ${r.late_snapshots} late snapshots · ${r.failed_fetches} failed fetches · lock-step skew median ${fmt(r.skew_ms_median, 1)} ms, max ${fmt(r.skew_ms_max, 1)} ms` }) : null,
        dataTable(
          ["rank", "noise floor", ...treatments.flatMap((t) => [`${t.treatment || "(none)"}: changed`, "personalization"])],
          ranks.map((rk) =>
            h(
              "tr",
              { "data-rank": rk },
              cell(String(rk)),
              cell(pct(noiseAt(rk)), { field: "noise", value: noiseAt(rk) }),
              treatments.flatMap((t) => [
                cell(pct(at(t, rk).changed ?? null), { field: "changed", arm: t.treatment, value: at(t, rk).changed }),
                cell(pct(at(t, rk).personalization ?? null), { field: "personalization", arm: t.treatment, value: at(t, rk).personalization }),
              ]),
            ),
          ),
        ),
      ],
      d.study_id ? "No compared rounds for this study yet." : "No personalization study has data yet.",
    );
  }

  function renderAlerts(d) {
    setPanel(
      "panel-alerts",
      d.alerts.length,
      [
        h(
          "ul",
          { class: "alerts" },
          d.alerts.map((a) =>
            h(
              "li",
              { "data-kind": a.kind, "data-alert-id": a.alert_id },
              h("span", { class: "muted", text: a.created_at }),
              h("span", {}, h("span", { class: `badge ${a.severity}`, text: a.kind })),
              h("span", { class: "subject", text: a.subject }),
              h("span", { text: a.summary }),
            ),
          ),
        ),
      ],
      "No alerts.",
    );
  }

  // ------------------------------------------------------------------ selectors

  function fillSelect(select, options, value) {
    const signature = JSON.stringify(options);
    if (select.dataset.signature !== signature) {
      select.replaceChildren(...options.map(([v, label]) => h("option", { value: v, text: label })));
      select.dataset.signature = signature;
    }
    select.value = value;
  }

  function applyIndex(idx) {
    state.index = idx;
    const exps = idx.experiments;
    if (!state.experiment && exps.length) state.experiment = exps[0].experiment_id;
    const expOptions = exps.map((e) => [e.experiment_id, e.registered ? `${e.experiment_id} (${e.status})` : e.experiment_id]);
    if (state.experiment && !exps.some((e) => e.experiment_id === state.experiment)) expOptions.unshift([state.experiment, `${state.experiment} (no data yet)`]);
    fillSelect($("sel-experiment"), expOptions.length ? expOptions : [["", "none yet"]], state.experiment);

    const current = exps.find((e) => e.experiment_id === state.experiment);
    const engines = current && current.engines.length ? current.engines : ["google"];
    if (!engines.includes(state.engine)) state.engine = engines.includes("google") ? "google" : engines[0];
    fillSelect($("sel-engine"), engines.map((e) => [e, e]), state.engine);

    const studies = idx.autocomplete_studies;
    if (state.ac === null) state.ac = studies.length ? studies[0].study : "";
    const acOptions = [["", "every crawl"], ...studies.map((st) => [st.study, `${st.study}* (${st.engines.join(", ")})`])];
    if (state.ac && !studies.some((st) => st.study === state.ac)) acOptions.push([state.ac, `${state.ac}*`]);
    fillSelect($("sel-ac"), acOptions, state.ac);

    const ps = idx.personalization_studies;
    if (!state.ps && ps.length) state.ps = ps[0].study_id;
    const psOptions = ps.map((st) => [st.study_id, st.study_id]);
    if (state.ps && !ps.some((st) => st.study_id === state.ps)) psOptions.unshift([state.ps, `${state.ps} (no data yet)`]);
    fillSelect($("sel-ps"), psOptions.length ? psOptions : [["", "none yet"]], state.ps);
  }

  // ------------------------------------------------------------------ data

  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function getJSON(path) {
    const resp = await fetch(path, { headers: { Authorization: `Bearer ${state.key}`, Accept: "application/json" }, cache: "no-store" });
    let body = null;
    try {
      body = await resp.json();
    } catch (_) {
      body = null;
    }
    if (!resp.ok) throw new HttpError(resp.status, (body && body.message) || `HTTP ${resp.status}`);
    return body;
  }

  const isAuth = (err) => err instanceof HttpError && (err.status === 401 || err.status === 403);

  async function guarded(ids, load) {
    try {
      await load();
    } catch (err) {
      if (isAuth(err)) throw err;
      panelError(ids, err.message);
      return false;
    }
    return true;
  }

  async function loadExperiment() {
    const exp = state.experiment;
    const engine = state.engine;
    if (!exp) {
      clearExperiment("No arrangement experiment has data yet.");
      return;
    }
    const d = await getJSON(`/v1/board/experiments/${encodeURIComponent(exp)}?engine=${encodeURIComponent(engine)}`);
    if (exp === state.experiment && engine === state.engine) renderExperiment(d);
  }

  async function loadAutocomplete() {
    const study = state.ac || "";
    const d = await getJSON(`/v1/board/autocomplete?study=${encodeURIComponent(study)}`);
    if (study === (state.ac || "")) renderAutocomplete(d);
  }

  async function loadPersonalization() {
    const study = state.ps;
    if (!study) {
      renderPersonalization({ study_id: "", treatments: [], rounds: null });
      return;
    }
    const d = await getJSON(`/v1/board/personalization/${encodeURIComponent(study)}`);
    if (study === state.ps) renderPersonalization(d);
  }

  async function loadAlerts() {
    renderAlerts(await getJSON("/v1/board/alerts?limit=50"));
  }

  function setStatus(kind, text) {
    const el = $("status");
    el.dataset.state = kind;
    el.textContent = text;
  }

  async function tick() {
    if (state.stopped) return;
    if (state.busy) {
      state.again = true;
      return;
    }
    state.busy = true;
    clearTimeout(state.timer);
    let ok = false;
    try {
      applyIndex(await getJSON("/v1/board/index"));
      const results = await Promise.all([
        guarded(["panel-ctr", "panel-gap", "panel-shares", "panel-box", "panel-srm", "panel-markets", "panel-drops"], loadExperiment),
        guarded(["panel-churn", "panel-nmi"], loadAutocomplete),
        guarded(["panel-pers"], loadPersonalization),
        guarded(["panel-alerts"], loadAlerts),
      ]);
      ok = results.every(Boolean);
      const stamp = new Date().toISOString().slice(11, 19);
      setStatus(ok ? "live" : "waiting", `${ok ? "live" : "partly stale"} · updated ${stamp} UTC · every ${state.every / 1000} s`);
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    } catch (err) {
      if (isAuth(err)) {
        stop();
        showPrompt(`The key was refused: ${err.message}`);
        return;
      }
      setStatus("error", `cannot reach the service: ${err.message}; retrying`);
    } finally {
      state.busy = false;
      if (!state.stopped) {
        state.timer = setTimeout(tick, state.again ? 0 : state.every);
        state.again = false;
      }
    }
  }

  // ------------------------------------------------------------------ fragment and start

  function readFragment() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ""));
    state.key = p.get("key") || "";
    state.experiment = p.get("experiment") || "";
    state.engine = p.get("engine") || "";
    state.ac = p.has("ac") ? p.get("ac") : null;
    state.ps = p.get("ps") || "";
    const every = Number(p.get("every"));
    state.every = Number.isFinite(every) && every >= 1 ? Math.max(1000, every * 1000) : DEFAULT_EVERY_MS;
  }

  function writeFragment() {
    const p = new URLSearchParams();
    if (state.key) p.set("key", state.key);
    if (state.experiment) p.set("experiment", state.experiment);
    if (state.engine) p.set("engine", state.engine);
    if (state.ac !== null) p.set("ac", state.ac);
    if (state.ps) p.set("ps", state.ps);
    if (state.every !== DEFAULT_EVERY_MS) p.set("every", String(state.every / 1000));
    history.replaceState(null, "", `${location.pathname}#${p.toString()}`);
  }

  function stop() {
    state.stopped = true;
    clearTimeout(state.timer);
  }

  function showPrompt(message) {
    $("board").hidden = true;
    $("prompt").hidden = false;
    const err = $("prompt-error");
    err.hidden = !message;
    err.textContent = message || "";
    setStatus("idle", "no API key");
    $("key-input").focus();
  }

  function start() {
    $("prompt").hidden = true;
    $("board").hidden = false;
    state.stopped = false;
    setStatus("waiting", "loading…");
    tick();
  }

  function onSelect(field, select) {
    select.addEventListener("change", () => {
      state[field] = select.value;
      if (field === "experiment") state.engine = "";
      writeFragment();
      tick();
    });
  }

  function init() {
    readFragment();
    $("key-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const key = $("key-input").value.trim();
      if (!key) return;
      state.key = key;
      $("key-input").value = "";
      writeFragment();
      start();
    });
    onSelect("experiment", $("sel-experiment"));
    onSelect("engine", $("sel-engine"));
    onSelect("ac", $("sel-ac"));
    onSelect("ps", $("sel-ps"));
    window.addEventListener("hashchange", () => {
      readFragment();
      if (!state.key) {
        stop();
        showPrompt("");
      } else if (state.stopped) start();
      else tick();
    });
    if (state.key) start();
    else showPrompt("");
  }

  init();
})();
