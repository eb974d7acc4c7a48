// manifest.json's search hosts, generated from google_domains.txt (Google's country domains)
// and Bing's one host. `node extension/tools/hosts.mjs` rewrites manifest.json;
// extension/test/manifest.test.mjs fails while the manifest is not what this writes.
//
// Three lists name the hosts, each exactly: host_permissions (https://HOST/*), the content
// script's matches (https://HOST/search*, result pages only) and the matches of the
// web-accessible modules (content.js imports lib/content_main.js from the page's origin:
// without them the script would load on a host and fail there). Entries that are not a
// search host (the development study URL) are kept, after the search hosts.

import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const BING_HOSTS = ["www.bing.com"];
const DOMAIN = /^google(\.[a-z]{2,3}){1,2}$/;
const SEARCH_PATTERN = /^https:\/\/www\.(google|bing)\.[a-z.]+\//;

// "google.de", ... from the text of google_domains.txt ('#' comments; ".google.de" lines).
export function googleDomains(text) {
  const domains = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const domain = line.replace(/^\./, "");
    if (!DOMAIN.test(domain)) throw new Error(`google_domains.txt: ${JSON.stringify(line)} is not a Google domain`);
    if (domains.includes(domain)) throw new Error(`google_domains.txt: ${domain} is listed twice`);
    domains.push(domain);
  }
  return domains;
}

export function searchHosts(domains) {
  return [...domains.map((d) => `www.${d}`), ...BING_HOSTS];
}

function replaced(patterns, generated) {
  return [...generated, ...patterns.filter((p) => !SEARCH_PATTERN.test(p))];
}

// The manifest with its search-host lists generated from `hosts` (a new object).
export function withHosts(manifest, hosts) {
  const origins = hosts.map((h) => `https://${h}/*`);
  const pages = hosts.map((h) => `https://${h}/search*`);
  const out = structuredClone(manifest);
  out.host_permissions = replaced(out.host_permissions || [], origins);
  for (const script of out.content_scripts || []) {
    if (script.matches.some((p) => SEARCH_PATTERN.test(p))) script.matches = replaced(script.matches, pages);
  }
  for (const entry of out.web_accessible_resources || []) {
    if (entry.matches.some((p) => SEARCH_PATTERN.test(p))) entry.matches = replaced(entry.matches, origins);
  }
  return out;
}

export function manifestText(manifest) {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

const ROOT = new URL("../", import.meta.url);

export function readSources(root = ROOT) {
  return {
    manifest: readFileSync(new URL("manifest.json", root), "utf8"),
    domains: googleDomains(readFileSync(new URL("google_domains.txt", root), "utf8")),
  };
}

// The manifest's text as this script writes it now.
export function generated(root = ROOT) {
  const { manifest, domains } = readSources(root);
  return manifestText(withHosts(JSON.parse(manifest), searchHosts(domains)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generated();
  writeFileSync(new URL("manifest.json", ROOT), text);
  const { domains } = readSources();
  console.log(`manifest.json: ${domains.length} Google domains and ${BING_HOSTS.length} Bing host`);
}
