// The autocomplete, personalization and alerts panels from example answers (fixtures/).

import { test } from "node:test";
import assert from "node:assert/strict";
import { alertsPanel } from "../panel-alerts.js";
import { autocompleteViews, churnCells, shocksOf } from "../panel-autocomplete.js";
import { NO_STUDY, noiseAt, personalizationSeries, personalizationViews, ranksOf, roundsLine } from "../panel-personalization.js";
import { cells, findAll, fixture, panelText, textOf } from "./helpers.mjs";

test("autocomplete: churn cells with a value, nmi rounds, and each shock named", () => {
  const answer = fixture("autocomplete");
  const { title, panels } = autocompleteViews(answer);
  assert.equal(title, "crawls board-ac-*");
  assert.equal(autocompleteViews({ ...answer, study: "" }).title, "every crawl");
  assert.equal(churnCells(answer.churn), 5);
  assert.equal(panels["panel-churn"].rows, 5);
  assert.equal(panels["panel-nmi"].rows, 3);
  assert.deepEqual(panels["panel-nmi"].data, { shocks: 1 });
  assert.deepEqual(shocksOf(answer.nmi).map((p) => [p.engine, p.crawl_id]), [["google", "board-ac-google-r0003"]]);
  assert.match(panelText(panels["panel-nmi"]), /shock · google · board-ac-google-r0003: 3 of 4 roots dropped below their baseline/);
});

test("autocomplete without crawl pairs says so", () => {
  const { panels } = autocompleteViews({ study: "x-", engine: "", churn: [], nmi: [] });
  assert.equal(panels["panel-churn"].empty, "No pair of completed crawls yet.");
  assert.equal(panels["panel-nmi"].empty, "nmi needs two completed crawls of a root.");
  assert.deepEqual(panels["panel-nmi"].data, { shocks: 0 });
});

test("personalization: ranks in order, each treatment against the noise floor", () => {
  const answer = fixture("personalization");
  assert.deepEqual(ranksOf(answer.treatments), [1, 2]);
  assert.equal(noiseAt(answer.treatments, 2), 0.05);
  assert.equal(noiseAt(answer.treatments, 9), null);
  const series = personalizationSeries(answer.treatments, [1, 2]);
  assert.deepEqual(series.map((s) => s.name), ["logged_in", "(none)", "noise floor (control vs twin)"]);
  assert.deepEqual(series[0].values.map((v) => v.value), [0.1, 0.3]);
  assert.deepEqual(series[1].values, [null, null]); // no value at rank 1, no rank 2
  const { title, panels } = personalizationViews(answer);
  assert.equal(title, "board-pers");
  const p = panels["panel-pers"];
  assert.equal(p.rows, 3);
  const c = cells(p);
  assert.deepEqual(c["logged_in/changed"], { text: "30.0%", value: "0.3", ci: "" }); // the last rank's row wins the key
  assert.deepEqual(c["/changed"], { text: "–", value: undefined, ci: "" });
  assert.match(panelText(p), /5 rounds: 4 complete, 1 incomplete, 0 waiting · 2 late snapshots · 1 failed fetches · lock-step skew median 12\.5 ms, max 80\.3 ms/);
  assert.equal(roundsLine({ ...answer.rounds, skew_ms_median: null }).includes("median – ms"), true);
});

test("personalization without a study, or without rounds", () => {
  assert.deepEqual(personalizationViews(NO_STUDY).title, "");
  assert.equal(personalizationViews(NO_STUDY).panels["panel-pers"].empty, "No personalization study has data yet.");
  const none = personalizationViews({ study_id: "p", treatments: [], rounds: null }).panels["panel-pers"];
  assert.equal(none.empty, "No compared rounds for this study yet.");
});

test("alerts: one item per alert, their text as text", () => {
  const p = alertsPanel(fixture("alerts"));
  assert.equal(p.rows, 2);
  const items = p.nodes.flatMap((n) => findAll(n, (v) => v.tag === "li"));
  assert.deepEqual(items.map((li) => [li.attrs["data-kind"], li.attrs["data-alert-id"]]), [["autocomplete_shock", "a-2"], ["srm", "a-1"]]);
  assert.equal(textOf(items[1].children[3]), "<b>not markup</b>"); // a text attribute, set as textContent
  assert.equal(alertsPanel({ alerts: [] }).empty, "No alerts.");
});
