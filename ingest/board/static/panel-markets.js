// Per engine market: identified share of the events and the SRM of the clicks kept (a
// layout one country is served, or an arm that breaks a localized page). Reads the
// experiment answer only through the field lists below (see fields.js).

import { pick, pickEach } from "./fields.js";
import { fmt, pct } from "./format.js";
import { cell, dataTable, h, note, panel } from "./view.js";

/** The fields of the experiment answer (BoardExperimentPanel) the markets panel reads. */
export const MARKETS_ANSWER_FIELDS = ["markets"];

/** The fields of a row of `markets` (MarketHealth) the markets panel reads. */
export const MARKET_FIELDS = ["market", "srm_mismatch", "events", "identified_share", "units_by_arm", "srm_p_value"];

// The clicks kept in a market, over its arms.
export const keptClicks = (unitsByArm) => Object.values(unitsByArm).reduce((a, b) => a + b, 0);

export function marketsPanel(answer) {
  const markets = pickEach(pick(answer, MARKETS_ANSWER_FIELDS, "").markets || [], MARKET_FIELDS, "markets");
  const rows = markets.map((m) =>
    h(
      "tr",
      { "data-market": m.market, class: m.srm_mismatch ? "mismatch" : "" },
      cell(m.market || "(unknown)"),
      cell(String(m.events), { field: "events", arm: m.market, value: m.events }),
      cell(pct(m.identified_share, 1), { field: "identified_share", arm: m.market, value: m.identified_share }),
      cell(String(keptClicks(m.units_by_arm))),
      cell(m.srm_p_value === null ? "–" : fmt(m.srm_p_value, 4) + (m.srm_mismatch ? " mismatch" : ""), { field: "srm_p_value", arm: m.market, value: m.srm_p_value }),
    ),
  );
  const explain =
    "Identified share of all events per engine market (the Google domain's country, Bing's market); SRM of the clicks kept after preprocessing against the allocation.";
  return panel(markets.length, [dataTable(["market", "events", "identified", "kept clicks", "SRM p"], rows), note(explain)], "No events yet.");
}
