// The arrangement experiment's answer (GET /v1/board/experiments/{id}) as the title and
// the eight panels it fills. Every panel is built before any is drawn, so an answer a
// panel cannot read (MissingField, fields.js) leaves all eight as they were, marked.

import { pick, union } from "./fields.js";
import { boxPanel, BOX_ANSWER_FIELDS } from "./panel-box.js";
import { correctionsPanel, CORRECTIONS_ANSWER_FIELDS } from "./panel-corrections.js";
import { dropsPanel, DROPS_ANSWER_FIELDS } from "./panel-drops.js";
import { ctrPanel, gapPanel, CTR_ANSWER_FIELDS, GAP_ANSWER_FIELDS } from "./panel-figure3.js";
import { marketsPanel, MARKETS_ANSWER_FIELDS } from "./panel-markets.js";
import { sharesPanel, SHARES_ANSWER_FIELDS } from "./panel-shares.js";
import { srmPanel, SRM_ANSWER_FIELDS } from "./panel-srm.js";
import { panel } from "./view.js";

/** The fields of the experiment answer (BoardExperimentPanel) the title reads. */
export const TITLE_FIELDS = ["experiment_id", "engine", "burn_in_days", "unit_mode", "registry_status"];

/** Every field of the experiment answer (BoardExperimentPanel) the board reads. */
export const EXPERIMENT_FIELDS = union(
  TITLE_FIELDS,
  CTR_ANSWER_FIELDS,
  GAP_ANSWER_FIELDS,
  CORRECTIONS_ANSWER_FIELDS,
  SHARES_ANSWER_FIELDS,
  BOX_ANSWER_FIELDS,
  SRM_ANSWER_FIELDS,
  MARKETS_ANSWER_FIELDS,
  DROPS_ANSWER_FIELDS,
);

// The section ids of the experiment's panels and what fills each.
export const EXPERIMENT_PANELS = {
  "panel-ctr": ctrPanel,
  "panel-gap": gapPanel,
  "panel-corrections": correctionsPanel,
  "panel-shares": sharesPanel,
  "panel-box": boxPanel,
  "panel-srm": srmPanel,
  "panel-markets": marketsPanel,
  "panel-drops": dropsPanel,
};

export function experimentTitle(answer) {
  const d = pick(answer, TITLE_FIELDS, "");
  return `${d.experiment_id} · ${d.engine} · burn-in ${d.burn_in_days} d · unit: ${d.unit_mode}` + (d.registry_status ? ` · ${d.registry_status}` : " · not registered");
}

// {title, panels: {section id: panel}} of an answer; throws if a panel cannot read it.
export function experimentViews(answer) {
  const panels = Object.fromEntries(Object.entries(EXPERIMENT_PANELS).map(([id, build]) => [id, build(answer)]));
  return { title: experimentTitle(answer), panels };
}

// Every experiment panel empty, saying why (no experiment has data yet).
export function emptyExperiment(why) {
  return { title: "", panels: Object.fromEntries(Object.keys(EXPERIMENT_PANELS).map((id) => [id, panel(0, [], why)])) };
}
