// The SERP rulebook evaluated in the browser: the same rules as the crawler's parser
// (collectors/serp/parser.py), exported by `auditstream rules export` to rules/<engine>.json.
// Only querySelectorAll, matches and closest are used, so the answers match selectolax's
// on the same page; tests/integration/test_serp_rules_chromium.py holds both to that.
// No URL, title or text leaves this module's callers: the extension needs elements.

export const RULES_FORMAT = "auditstream-serp-rules/1";

const SKIP_TAGS = new Set(["script", "style", "noscript", "template", "link", "meta", "input", "br", "hr"]);

function any(list, test) {
  for (const x of list) if (test(x)) return true;
  return false;
}

// Where a result link leads, through the engine's click redirects (Google's /url?q=...,
// Bing's /ck/a?u=a1<base64url>): {host, path}, or null when it is not a web link.
export function linkTarget(href, baseUrl) {
  let url;
  try {
    url = new URL(href, baseUrl);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (url.pathname === "/url") {
    const target = url.searchParams.get("q") || url.searchParams.get("url");
    if (target) return linkTarget(target, baseUrl);
  }
  if (url.pathname === "/ck/a") {
    const u = url.searchParams.get("u") || "";
    if (u.startsWith("a1")) {
      try {
        const b64 = u.slice(2).replace(/-/g, "+").replace(/_/g, "/");
        return linkTarget(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)), baseUrl);
      } catch {
        return null;
      }
    }
  }
  if (!url.hostname) return null;
  return { host: url.hostname.toLowerCase(), path: url.pathname || "/" };
}

function firstMatch(doc, selectors) {
  for (const s of selectors) {
    const el = doc.querySelector(s);
    if (el) return el;
  }
  return null;
}

// Organic results, in page order: [{link, heading}] (see rulebook.OrganicRules).
export function organicResults(doc, rules) {
  const org = rules.organic;
  const column = firstMatch(doc, org.column);
  if (!column) return [];
  const exclude = org.exclude.join(", ");
  const nested = org.sub_result.join(", ");
  const engineHost = new RegExp(org.engine_hosts);
  const enginePath = new RegExp(org.engine_paths);
  const out = [];
  const seen = new Set();
  for (const match of column.querySelectorAll(org.anchor)) {
    const link = match.closest("a[href]");
    if (!link || seen.has(link)) continue;
    seen.add(link);
    if (exclude && match.closest(exclude)) continue;
    if (nested) {
      const holder = match.closest(nested);
      if (holder && holder !== column && column.contains(holder)) continue;
    }
    const target = linkTarget(link.getAttribute("href") || "", rules.base_url);
    if (!target) continue;
    // the engine's own navigation (another search) is not a result; its other pages are
    if (engineHost.test(target.host) && enginePath.test(target.path)) continue;
    const heading = org.title ? match.querySelector(org.title) : match;
    out.push({ link, heading });
  }
  return out;
}

function matchesSelf(el, selector) {
  try {
    return el.matches(selector);
  } catch {
    return false;
  }
}

function matchesOrInside(el, selector) {
  return matchesSelf(el, selector) || el.querySelector(selector) !== null;
}

function skip(item, rules) {
  if (SKIP_TAGS.has(item.localName) || any(rules.page.ignore, (s) => matchesSelf(item, s))) return true;
  return item.textContent.trim() === "" && item.querySelector("a[href]") === null;
}

function topLevel(nodes) {
  const list = [...nodes];
  return list.filter((n) => !list.some((m) => m !== n && m.contains(n)));
}

function applies(rule, section) {
  return rule.within.length === 0 || rule.within.includes(section);
}

// Every component in page order: [{section, type, element}]. Organic results come from
// organicResults; the section walk classifies the other blocks, as the parser does.
export function findComponents(doc, rules) {
  const organic = organicResults(doc, rules);
  const under = new Map();
  for (const { link } of organic) {
    for (let n = link; n; n = n.parentElement) under.set(n, (under.get(n) || 0) + 1);
  }
  const found = [];
  const roots = [];
  let blocks = 0;
  const walk = (root, section, rootIndex) => {
    for (const item of root.children) {
      if (skip(item, rules)) continue;
      if (any(rules.page.no_results, (s) => matchesSelf(item, s))) {
        blocks += 1;
        continue;
      }
      const holds = under.get(item) || 0;
      const claimed = holds ? rules.rules.find((r) => applies(r, section) && matchesSelf(item, r.match)) : undefined;
      if (holds === 1 && !claimed) {
        blocks += 1;
        continue;
      }
      if (holds > 1 && !claimed) {
        walk(item, section, rootIndex);
        continue;
      }
      blocks += 1;
      const rule = claimed || rules.rules.find((r) => applies(r, section) && matchesOrInside(item, r.match));
      if (!rule) {
        found.push({ section, type: "unknown", element: item, order: [rootIndex, item] });
        continue;
      }
      const where = rule.section || section;
      const parts = rule.each && !holds ? topLevel(item.querySelectorAll(rule.each)) : [];
      for (const part of parts.length ? parts : [item]) {
        found.push({ section: where, type: rule.type, element: part, order: [rootIndex, item] });
      }
    }
  };
  for (const section of rules.sections) {
    for (const root of doc.querySelectorAll(section.root)) {
      if (roots.some(([, r]) => r.contains(root))) continue;
      roots.push([section.name, root]);
      walk(root, section.name, roots.length - 1);
    }
  }
  const main = roots.findIndex(([name]) => name === "main");
  for (const { link } of organic) {
    const walked = roots.findIndex(([, r]) => r.contains(link));
    if (walked < 0) blocks += 1;
    const section = walked < 0 ? "main" : roots[walked][0];
    const rootIndex = walked < 0 ? (main < 0 ? roots.length : main) : walked;
    found.push({ section, type: "organic", element: link, order: [rootIndex, link] });
  }
  found.sort((a, b) => {
    if (a.order[0] !== b.order[0]) return a.order[0] - b.order[0];
    if (a.order[1] === b.order[1]) return 0;
    return a.order[1].compareDocumentPosition(b.order[1]) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
  });
  const unknown = found.filter((f) => f.type === "unknown").length;
  let coverage;
  if (blocks === 0) {
    coverage = firstMatch(doc, rules.page.no_results) ? 1 : 0;
    if (coverage === 0) found.push({ section: "main", type: "unknown", element: null, order: [0, null] });
  } else {
    coverage = Math.round((1 - unknown / blocks) * 10000) / 10000;
  }
  return { components: found.map(({ section, type, element }) => ({ section, type, element })), coverage };
}
