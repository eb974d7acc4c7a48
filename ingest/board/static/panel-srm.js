// The sample-ratio check: its status, χ², units and share per arm against the allocation,
// and the SRM alerts raised. Reads the experiment answer only through the field lists
// below (see fields.js).

import { pick, pickEach } from "./fields.js";
import { fmt, pct } from "./format.js";
import { cell, dataTable, h, panel } from "./view.js";

/** The fields of the experiment answer (BoardExperimentPanel) the SRM panel reads. */
export const SRM_ANSWER_FIELDS = ["srm"];

/** The fields of `srm` (Srm) the SRM panel reads. */
export const SRM_FIELDS = ["status", "alpha", "p_value", "chi2", "units", "arms", "alerts"];

/** The fields of an arm of `srm.arms` (SrmArm) the SRM panel reads. */
export const SRM_ARM_FIELDS = ["arm", "units", "share", "expected_share"];

/** The fields of an alert of `srm.alerts` (Alert) the SRM panel reads. */
export const SRM_ALERT_FIELDS = ["created_at", "summary"];

// What a status means, in a sentence.
export function explainSrm(srm) {
  const explain = {
    ok: `units match the allocation (p = ${fmt(srm.p_value, 4)} ≥ ${srm.alpha})`,
    mismatch: `live test: p = ${fmt(srm.p_value, 6)} < ${srm.alpha}; the worker raises an alert at its next check`,
    alert: "a sample-ratio-mismatch alert was raised",
    unregistered: "not in the experiment registry: no allocation to test against",
    no_units: "no units after preprocessing yet",
  };
  return Object.hasOwn(explain, srm.status) ? explain[srm.status] : "";
}

export function srmPanel(answer) {
  const srm = pick(pick(answer, SRM_ANSWER_FIELDS, "").srm, SRM_FIELDS, "srm");
  const arms = pickEach(srm.arms, SRM_ARM_FIELDS, "srm.arms");
  const alerts = pickEach(srm.alerts, SRM_ALERT_FIELDS, "srm.alerts");
  const nodes = [
    h("p", {}, h("span", { class: `badge ${srm.status}`, "data-status": srm.status, text: srm.status.replace("_", " ") }), " ", explainSrm(srm)),
    srm.chi2 !== null ? h("p", { class: "note", text: `χ² = ${fmt(srm.chi2, 2)} over ${srm.units} units (identified, past burn-in)` }) : null,
    dataTable(
      ["arm", "units", "share", "allocation"],
      arms.map((a) =>
        h(
          "tr",
          { "data-arm": a.arm },
          cell(a.arm),
          cell(String(a.units), { field: "units", arm: a.arm, value: a.units }),
          cell(pct(a.share, 2), { field: "share", arm: a.arm, value: a.share }),
          cell(pct(a.expected_share, 2), { field: "expected_share", arm: a.arm, value: a.expected_share }),
        ),
      ),
    ),
    alerts.map((a) => h("p", { class: "note error", text: `${a.created_at} · ${a.summary}` })),
  ];
  return panel(arms.length, nodes, "No units and no allocation yet.", { status: srm.status });
}
