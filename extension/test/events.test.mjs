import { test } from "node:test";
import assert from "node:assert/strict";
import { click, coarseLanguage, installProfile, serpView } from "../lib/events.js";

const context = {
  experiment_id: "pm1", arm: "swap_1_2", engine: "google", install_id: "abcdefgh-1234", install_day: "2026-11-20",
  extension_version: "0.1.0", page_index: 0, n_organic: 10, ads_top_count: 2, box: "none", ssr_positions: [3],
  n_candidates: 1230000, identified: true, ui_lang: "de", market: "ch",
  // whatever a page script or a bug puts beside the context never leaves
  query: "secret query", url: "https://example.org/", title: "A title",
};

test("events carry the context and nothing else", () => {
  const view = serpView(context, new Date("2026-11-24T10:00:00Z"));
  assert.equal(view.type, "serp_view");
  assert.equal(view.sent_at, "2026-11-24T10:00:00.000Z");
  assert.match(view.event_id, /^[0-9a-f-]{36}$/);
  for (const forbidden of ["query", "url", "title"]) assert.ok(!(forbidden in view));
  assert.equal(view.market, "ch");
  const organic = click(context, { element_type: "organic", original_rank: 2, display_rank: 1, href: "x" });
  assert.deepEqual([organic.original_rank, organic.display_rank, "href" in organic], [2, 1, false]);
  const ad = click(context, { element_type: "ad", original_rank: 1 });
  assert.ok(!("original_rank" in ad) && ad.element_type === "ad");
  assert.ok(!JSON.stringify([view, organic, ad]).includes("secret query"));
});

test("a declined consent carries no answers; languages are coarse", () => {
  const declined = installProfile({ install_id: "abcdefgh", consent: "declined", age_band: "25-34", search_languages: ["en"] });
  assert.deepEqual([declined.consent, declined.age_band, declined.search_languages], ["declined", undefined, []]);
  assert.equal(coarseLanguage("de-DE"), "de");
  assert.equal(coarseLanguage("zh_Hant_TW"), "zh");
  assert.equal(coarseLanguage("x"), "und");
});
