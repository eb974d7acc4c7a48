// A result page as the experiment sees it: which element is which (with the rulebook of
// serp_rules.js), the page context of docs/method.md, and the arm's rearrangement. DOM only;
// nothing here reads or returns the query, a URL, a title or page text.

import { findComponents } from "./serp_rules.js";
import { displayOrder } from "./arms.js";

export const KNOWN_LAYOUT = 0.8; // schemas.events.KNOWN_LAYOUT: below it, identification is unreliable
const SPECIALIZED = new Set(["top_stories", "videos", "images", "local", "people_also_ask", "knowledge_panel"]);

// Is this page 1 of a plain web search? {engine, pageIndex, web}
export function searchKind(location, engine) {
  const params = new URLSearchParams(location.search);
  if (engine === "google") {
    const start = Number.parseInt(params.get("start") || "0", 10) || 0;
    const vertical = params.get("tbm") || params.get("udm") || "";
    return { pageIndex: Math.floor(start / 10), web: location.pathname === "/search" && vertical === "" };
  }
  const first = Number.parseInt(params.get("first") || "1", 10) || 1;
  return { pageIndex: Math.floor(Math.max(first - 1, 0) / 10), web: location.pathname === "/search" };
}

// The element to move for an organic result: its link's highest ancestor that holds no
// other organic result (the result's whole block, snippet and sitelinks included).
function blockOf(link, links) {
  let block = link;
  for (let up = link.parentElement; up && up !== document.body; up = up.parentElement) {
    if (links.some((other) => other !== link && up.contains(other))) break;
    block = up;
  }
  return block;
}

function estimateOf(doc, rules) {
  for (const selector of rules.page.estimate) {
    const el = doc.querySelector(selector);
    if (!el) continue;
    const text = el.textContent.replace(/\([^)]*\)/g, " ");
    let best = null;
    for (const m of text.matchAll(/[\p{Nd}][\p{Nd}.,\u00a0\u202f\u2009\u066c' ]*/gu)) {
      const digits = [...m[0]].filter((c) => /\p{Nd}/u.test(c)).map(digitValue).join("");
      const value = digits ? Number(digits) : NaN;
      if (Number.isSafeInteger(value) && (best === null || value > best)) best = value;
    }
    return best;
  }
  return null;
}

function digitValue(ch) {
  const cp = ch.codePointAt(0);
  for (const zero of [0x30, 0x660, 0x6f0, 0x966, 0x9e6, 0xe50, 0xff10]) {
    if (cp >= zero && cp <= zero + 9) return String(cp - zero);
  }
  return "";
}

// Identify a page: organic blocks in control order, ads, the shopping box, specialized
// results, and the page context; `reliable` says whether an arm may be applied.
export function identify(doc, rules, location) {
  const { components, coverage } = findComponents(doc, rules);
  const links = components.filter((c) => c.type === "organic").map((c) => c.element);
  const organic = links.map((link) => blockOf(link, links));
  const ads = components.filter((c) => c.type === "ad");
  const boxes = components.filter((c) => c.type === "shopping");
  const main = components.filter((c) => c.section === "main" && (c.type === "organic" || SPECIALIZED.has(c.type)));
  const ssrPositions = [];
  main.forEach((c, i) => {
    if (c.type !== "organic" && ssrPositions.length < 20 && i < 100) ssrPositions.push(i + 1);
  });
  const kind = searchKind(location, rules.engine);
  return {
    organic,
    ads: ads.map((c) => c.element),
    boxes: boxes.map((c) => c.element),
    specialized: components.filter((c) => SPECIALIZED.has(c.type) && c.element).map((c) => c.element),
    coverage,
    reliable: kind.web && kind.pageIndex === 0 && coverage >= KNOWN_LAYOUT && organic.length >= 3,
    context: {
      engine: rules.engine,
      page_index: Math.min(kind.pageIndex, 100),
      n_organic: Math.min(organic.length, 100),
      ads_top_count: Math.min(ads.filter((c) => c.section === "top").length, 20),
      box: boxes.length === 0 ? "none" : boxes.some((c) => c.section !== "side") ? "top" : "side",
      ssr_positions: ssrPositions,
      n_candidates: estimateOf(doc, rules),
    },
  };
}

function swapNodes(a, b) {
  const mark = document.createComment("auditstream");
  a.replaceWith(mark);
  b.replaceWith(a);
  mark.replaceWith(b);
}

function hide(el) {
  el.style.setProperty("display", "none", "important");
}

// Apply a parsed arm to an identified page; returns the display order (original ranks).
export function applyArm(page, plan) {
  const order = displayOrder(page.organic.length, plan);
  if (plan.swap && plan.swap[1] <= page.organic.length) {
    swapNodes(page.organic[plan.swap[0] - 1], page.organic[plan.swap[1] - 1]);
  }
  if (plan.hideAds) page.ads.forEach(hide);
  if (plan.hideBox) page.boxes.forEach(hide);
  return order;
}

// What a click landed on: {element_type, original_rank, display_rank}, or null when it was
// not on a link. `order[k]` is the original rank shown at display position k + 1.
export function clickTarget(page, order, target) {
  const link = target && target.closest ? target.closest("a[href]") : null;
  if (!link) return null;
  const i = page.organic.findIndex((block) => block.contains(link));
  if (i >= 0) {
    return { element_type: "organic", original_rank: i + 1, display_rank: order.indexOf(i + 1) + 1 };
  }
  if (page.ads.some((el) => el.contains(link))) return { element_type: "ad" };
  if (page.boxes.some((el) => el.contains(link))) return { element_type: "shopping_box" };
  if (page.specialized.some((el) => el.contains(link))) return { element_type: "ssr" };
  return { element_type: "other" };
}

// The test build's marks: every identified element says what it is (organic results also
// their control rank), so a test can check identification on any page.
export function mark(page) {
  page.organic.forEach((el, i) => {
    el.setAttribute("data-auditstream-type", "organic");
    el.setAttribute("data-auditstream-original-rank", String(i + 1));
  });
  page.ads.forEach((el) => el.setAttribute("data-auditstream-type", "ad"));
  page.boxes.forEach((el) => el.setAttribute("data-auditstream-type", "shopping_box"));
  page.specialized.forEach((el) => {
    if (!el.hasAttribute("data-auditstream-type")) el.setAttribute("data-auditstream-type", "ssr");
  });
}
