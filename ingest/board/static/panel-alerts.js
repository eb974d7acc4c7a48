// The alerts (GET /v1/board/alerts), newest first.

import { h, panel } from "./view.js";

export function alertsPanel(answer) {
  const items = answer.alerts.map((a) =>
    h(
      "li",
      { "data-kind": a.kind, "data-alert-id": a.alert_id },
      h("span", { class: "muted", text: a.created_at }),
      h("span", {}, h("span", { class: `badge ${a.severity}`, text: a.kind })),
      h("span", { class: "subject", text: a.subject }),
      h("span", { text: a.summary }),
    ),
  );
  return panel(answer.alerts.length, [h("ul", { class: "alerts" }, items)], "No alerts.");
}
