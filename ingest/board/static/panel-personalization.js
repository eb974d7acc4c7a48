// The personalization study (GET /v1/board/personalization/{id}): results changed per rank
// for each treatment against the noise floor (control vs twin), and the rounds' health.

import { WIDE, barChart } from "./charts.js";
import { PALETTE, fmt, pct } from "./format.js";
import { cell, dataTable, h, legend, note, panel } from "./view.js";

// The ranks any treatment has, in order.
export const ranksOf = (treatments) => [...new Set(treatments.flatMap((t) => t.ranks.map((r) => r.rank)))].sort((a, b) => a - b);

const at = (t, rk) => t.ranks.find((p) => p.rank === rk) || {};

// The noise floor at a rank: the first treatment's that has one.
export function noiseAt(treatments, rk) {
  const t = treatments.find((tr) => at(tr, rk).noise !== undefined);
  return t ? at(t, rk).noise : null;
}

// The bar chart's series: each treatment's share changed per rank, then the noise floor.
export function personalizationSeries(treatments, ranks) {
  const byRank = (t, key) =>
    ranks.map((rk) => {
      const p = t.ranks.find((r) => r.rank === rk);
      return p && p[key] !== null ? { value: p[key], ci_low: null, ci_high: null } : null;
    });
  const series = treatments.map((t, i) => ({ name: t.treatment || "(none)", color: PALETTE[(i + 4) % PALETTE.length], values: byRank(t, "changed") }));
  if (treatments.length) series.push({ name: "noise floor (control vs twin)", color: "#c9ced4", values: byRank(treatments[0], "noise") });
  return series;
}

export function roundsLine(r) {
  return `${r.rounds} rounds: ${r.complete} complete, ${r.incomplete} incomplete, ${r.waiting} waiting · ${r.late_snapshots} late snapshots · ${r.failed_fetches} failed fetches · lock-step skew median ${fmt(r.skew_ms_median, 1)} ms, max ${fmt(r.skew_ms_max, 1)} ms`;
}

export function personalizationPanel(answer) {
  const treatments = answer.treatments;
  const ranks = ranksOf(treatments);
  const series = personalizationSeries(treatments, ranks);
  const points = treatments.reduce((acc, t) => acc + t.ranks.length, 0);
  return panel(
    points,
    [
      legend(series.map((sr) => [sr.name, sr.color])),
      barChart({ groups: ranks.map((rk) => `rank ${rk}`), series, yLabel: "share changed", height: 220, width: WIDE }),
      answer.rounds ? note(roundsLine(answer.rounds)) : null,
      dataTable(
        ["rank", "noise floor", ...treatments.flatMap((t) => [`${t.treatment || "(none)"}: changed`, "personalization"])],
        ranks.map((rk) =>
          h(
            "tr",
            { "data-rank": rk },
            cell(String(rk)),
            cell(pct(noiseAt(treatments, rk)), { field: "noise", value: noiseAt(treatments, rk) }),
            treatments.flatMap((t) => [
              cell(pct(at(t, rk).changed ?? null), { field: "changed", arm: t.treatment, value: at(t, rk).changed }),
              cell(pct(at(t, rk).personalization ?? null), { field: "personalization", arm: t.treatment, value: at(t, rk).personalization }),
            ]),
          ),
        ),
      ),
    ],
    answer.study_id ? "No compared rounds for this study yet." : "No personalization study has data yet.",
  );
}

// {title, panels: {section id: panel}} of an answer.
export function personalizationViews(answer) {
  return { title: answer.study_id ? answer.study_id : "", panels: { "panel-pers": personalizationPanel(answer) } };
}

// What the panel shows when no personalization study is chosen.
export const NO_STUDY = { study_id: "", treatments: [], rounds: null };
