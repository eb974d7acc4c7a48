import { test } from "node:test";
import assert from "node:assert/strict";
import { getText, HttpError } from "../api.js";
import { FIGURES, figureList, figurePath, figuresPanel, selectionKey, svgDataUrl } from "../figures.js";

test("a selection shows the selected engine's Figure 3, the experiment's others and each study's", () => {
  const list = figureList({ experiment: "pm 1", engine: "bing", ac: "rai", ps: "hannak" });
  assert.equal(list[0].name, "figure3_bing");
  assert.equal(list[0].path, "/v1/board/figures/powermeter/figure3_bing?experiment=pm%201");
  assert.deepEqual(
    list.map((f) => f.paper),
    [...Array(6).fill("powermeter"), ...Array(7).fill("personalization"), ...Array(7).fill("autocomplete")],
  );
  assert.equal(list.at(-1).path, "/v1/board/figures/autocomplete/figure9_associations?study=rai");
  assert.deepEqual(figureList({ experiment: "", engine: "", ac: "", ps: "" }), []);
  assert.equal(figureList({ experiment: "x", engine: "" })[0].name, "figure3_google");
  assert.equal(FIGURES.powermeter.length, 5);
  assert.deepEqual(
    FIGURES.personalization.map(([name]) => name),
    ["figure5_by_rank", "figures6_11_by_treatment", "figure12_consistency_days", "figure13_consistency_categories", "figure14_category_cdf", "figure15_grouped", "figure16_rank1"],
  );
});

test("figures are drawn again only when the selection changes", () => {
  const a = { experiment: "x", engine: "google", ac: "", ps: "", key: "k1", every: 2 };
  assert.equal(selectionKey(a), selectionKey({ ...a, key: "k2", every: 10 }));
  assert.notEqual(selectionKey(a), selectionKey({ ...a, engine: "bing" }));
});

test("an SVG becomes a data: URL image, an error a note, each with its title", () => {
  const item = { paper: "powermeter", name: "figure8", title: "Figure 8", path: figurePath("powermeter", "figure8", "experiment", "x") };
  const p = figuresPanel([[item, { svg: "<svg>é</svg>" }], [{ ...item, name: "figure9" }, { error: "no experiment" }]]);
  assert.equal(p.rows, 2);
  const [ok, failed] = p.nodes;
  assert.equal(ok.children[0].tag, "img");
  assert.equal(ok.children[0].attrs.src, "data:image/svg+xml;charset=utf-8,%3Csvg%3E%C3%A9%3C%2Fsvg%3E");
  assert.equal(ok.attrs["data-state"], "ready");
  assert.equal(failed.attrs["data-state"], "error");
  assert.equal(failed.children[0].attrs.text, "Figure 8: no experiment");
  assert.equal(svgDataUrl("a b"), "data:image/svg+xml;charset=utf-8,a%20b");
  assert.equal(figuresPanel([]).rows, 0);
});

test("a figure's SVG is fetched with the key in the header; an error carries the service's message", async () => {
  const seen = [];
  const ok = async (url, init) => {
    seen.push({ url, init });
    return { ok: true, status: 200, text: async () => "<svg/>" };
  };
  assert.equal(await getText("/v1/board/figures/powermeter/figure8?experiment=x", "k", ok), "<svg/>");
  assert.deepEqual(seen[0].init, { headers: { Authorization: "Bearer k", Accept: "image/svg+xml" }, cache: "no-store" });
  const missing = async () => ({ ok: false, status: 404, json: async () => ({ error: "not_found", message: "no figure 'x'" }) });
  await assert.rejects(getText("/p", "k", missing), (err) => err instanceof HttpError && err.status === 404 && err.message === "no figure 'x'");
});
