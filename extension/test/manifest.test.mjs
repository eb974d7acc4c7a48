import { test } from "node:test";
import assert from "node:assert/strict";
import { BING_HOSTS, generated, googleDomains, readSources, searchHosts, withHosts } from "../tools/hosts.mjs";

test("manifest.json's search hosts are generated from google_domains.txt", () => {
  const { manifest } = readSources();
  assert.equal(manifest, generated(), "manifest.json is stale: run `node extension/tools/hosts.mjs`");
});

test("each list names every search host, and only those beside the study's origin", () => {
  const { manifest, domains } = readSources();
  const m = JSON.parse(manifest);
  const hosts = searchHosts(domains);
  for (const host of ["www.google.com", "www.google.de", "www.google.co.uk", "www.google.com.br", "www.bing.com"]) {
    assert.ok(hosts.includes(host), host);
  }
  const origins = hosts.map((h) => `https://${h}/*`);
  assert.deepEqual(m.host_permissions, [...origins, "http://127.0.0.1/*"]);
  assert.deepEqual(m.content_scripts[0].matches, hosts.map((h) => `https://${h}/search*`));
  assert.deepEqual(m.web_accessible_resources[0].matches, origins);
  // no wildcard host: a volunteer (and a store reviewer) reads the exact list
  for (const pattern of [...m.host_permissions, ...m.content_scripts[0].matches]) {
    assert.ok(!new URL(pattern.replace("*", "x")).hostname.includes("*"), pattern);
  }
  assert.equal(hosts.length, domains.length + BING_HOSTS.length);
});

test("the generator replaces old search hosts, keeps others, and refuses a malformed list", () => {
  const old = {
    host_permissions: ["https://www.google.com/*", "https://www.google.xx/*", "https://study.example.org/*"],
    content_scripts: [{ matches: ["https://www.google.com/search*"], js: ["content.js"] }],
    web_accessible_resources: [{ resources: ["lib/*.js"], matches: ["https://www.bing.com/*"] }],
  };
  const out = withHosts(old, ["www.google.de", "www.bing.com"]);
  assert.deepEqual(out.host_permissions, ["https://www.google.de/*", "https://www.bing.com/*", "https://study.example.org/*"]);
  assert.deepEqual(out.content_scripts[0].matches, ["https://www.google.de/search*", "https://www.bing.com/search*"]);
  assert.deepEqual(out.web_accessible_resources[0].matches, ["https://www.google.de/*", "https://www.bing.com/*"]);
  assert.deepEqual(old.host_permissions.length, 3); // not changed in place
  assert.deepEqual(googleDomains("# comment\n.google.de\n\n.google.co.uk\n"), ["google.de", "google.co.uk"]);
  assert.throws(() => googleDomains(".google.de\n.google.de\n"), /twice/);
  assert.throws(() => googleDomains("*.google.*\n"), /not a Google domain/);
  assert.throws(() => googleDomains(".example.org\n"), /not a Google domain/);
});
