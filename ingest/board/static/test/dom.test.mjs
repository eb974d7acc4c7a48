// dom.js on a minimal document (fake-dom.mjs): views become nodes, panels are filled and
// marked, and an answer a panel cannot read shows on the page as "could not refresh".

import { test } from "node:test";
import assert from "node:assert/strict";
import { build, fillSelect, panelError, setPanel, setStatus } from "../dom.js";
import { experimentViews } from "../experiment.js";
import { cell, h, panel, s } from "../view.js";
import { FakeDocument, html, section } from "./fake-dom.mjs";
import { fixture } from "./helpers.mjs";

test("views become HTML and SVG nodes; text is text, never markup", () => {
  const doc = new FakeDocument();
  const node = build(doc, h("p", { class: "note", hidden: false, title: null }, "<b>x</b>", s("svg", { width: 12 }, s("rect", { fill: "#fff" }))));
  assert.equal(node.namespaceURI, null);
  assert.equal(node.childNodes[1].namespaceURI, "http://www.w3.org/2000/svg");
  assert.equal(html(node), '<p class="note">&lt;b>x&lt;/b><svg:svg width="12"><svg:rect fill="#fff"></svg:rect></svg:svg></p>');
  const td = build(doc, cell("0.412", { field: "ctr_c1", arm: "control", value: 0.412, ci: "[0.390, 0.434]" }));
  assert.equal(html(td), '<td data-field="ctr_c1" data-arm="control" data-value="0.412">0.412<span class="ci">[0.390, 0.434]</span></td>');
  assert.equal(td.firstChild.text, "0.412"); // the integration test reads the number before the interval
});

test("a panel with rows is ready with its nodes; without, empty with its note", () => {
  const doc = new FakeDocument();
  const el = section(doc, "panel-srm");
  setPanel(doc, "panel-srm", panel(2, [h("p", { text: "a" }), [h("p", { text: "b" })], null], "none", { status: "ok" }));
  assert.deepEqual([el.dataset.state, el.dataset.rows, el.dataset.status], ["ready", "2", "ok"]);
  assert.equal(el.querySelector(".body").textContent, "ab");
  setPanel(doc, "panel-srm", panel(0, [h("p", { text: "a" })], "No units and no allocation yet."));
  assert.deepEqual([el.dataset.state, el.dataset.rows], ["empty", "0"]);
  assert.equal(html(el.querySelector(".body")), '<div class="body"><p class="note">No units and no allocation yet.</p></div>');
});

test("a panel with a title sets its heading's .title, and only that", () => {
  const doc = new FakeDocument();
  const el = section(doc, "panel-ctr");
  const h3 = doc.createElement("h3");
  const title = doc.createElement("span");
  title.setAttribute("class", "title");
  title.textContent = "CTR per position by arm, with 95% intervals";
  h3.appendChild(title);
  el.prepend(h3);
  setPanel(doc, "panel-ctr", { ...panel(1, [h("p", { text: "a" })], "none"), title: "CTR per position by arm, 95% confidence sequence" });
  assert.equal(title.textContent, "CTR per position by arm, 95% confidence sequence");
  setPanel(doc, "panel-ctr", panel(0, [], "none")); // no title: the heading stays
  assert.equal(title.textContent, "CTR per position by arm, 95% confidence sequence");
});

test("an answer missing a listed field leaves the panels as drawn, marked 'could not refresh'", () => {
  const doc = new FakeDocument();
  const ids = ["panel-ctr", "panel-gap"];
  for (const id of ids) section(doc, id);
  const good = experimentViews(fixture("experiment"));
  for (const id of ids) setPanel(doc, id, good.panels[id]);
  const before = doc.getElementById("panel-ctr").querySelector(".body").textContent;

  const answer = fixture("experiment");
  delete answer.figure3.arms[0].ctr;
  let err;
  try {
    experimentViews(answer);
  } catch (e) {
    err = e;
  }
  panelError(doc, ids, err.message); // what board.js does with a panel group's error
  panelError(doc, ids, err.message); // a second failed refresh does not add a second note
  for (const id of ids) {
    const el = doc.getElementById(id);
    assert.equal(el.dataset.state, "error");
    const notes = el.querySelectorAll(".note.error");
    assert.equal(notes.length, 1);
    assert.equal(notes[0].textContent, "could not refresh: the answer has no figure3.arms[0].ctr");
  }
  assert.ok(doc.getElementById("panel-ctr").querySelector(".body").textContent.endsWith(before)); // still drawn
});

test("select options are rebuilt only when they change; the status line is set", () => {
  const doc = new FakeDocument();
  const select = doc.createElement("select");
  fillSelect(doc, select, [["a", "A"], ["b", "B"]], "b");
  const first = select.childNodes[0];
  fillSelect(doc, select, [["a", "A"], ["b", "B"]], "a");
  assert.equal(select.childNodes[0], first);
  assert.equal(select.value, "a");
  fillSelect(doc, select, [["", "none yet"]], "");
  assert.equal(html(select), '<select data-signature="[[&quot;&quot;,&quot;none yet&quot;]]"><option value="">none yet</option></select>');

  const status = doc.createElement("div");
  status.setAttribute("id", "status");
  doc.body.appendChild(status);
  setStatus(doc, "live", "live · updated 12:00:00 UTC · every 3 s");
  assert.deepEqual([status.dataset.state, status.textContent], ["live", "live · updated 12:00:00 UTC · every 3 s"]);
});
