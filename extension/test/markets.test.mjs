import { test } from "node:test";
import assert from "node:assert/strict";
import { MARKET, engineOf, marketOf } from "../lib/markets.js";
import { readSources } from "../tools/hosts.mjs";

const at = (url) => new URL(url);

test("Google's market is its domain's country code", () => {
  const cases = {
    "https://www.google.com/search?q=x": "com",
    "https://www.google.de/search?q=x&hl=en": "de",
    "https://www.google.ch/search?q=x": "ch",
    "https://www.google.co.uk/search?q=x": "uk",
    "https://www.google.com.br/search?q=x": "br",
    "https://www.google.co.jp/search?q=x": "jp",
    "https://www.google.cat/search?q=x": "cat",
    // Google's own country parameter does not change the domain's market
    "https://www.google.com/search?q=x&gl=de&mkt=de-DE": "com",
  };
  for (const [url, market] of Object.entries(cases)) {
    assert.equal(engineOf(at(url)), "google", url);
    assert.equal(marketOf(at(url), "google"), market, url);
  }
});

test("every Google domain of the list has a market of its own, valid for the model", () => {
  const { domains } = readSources();
  assert.ok(domains.length > 150, `${domains.length} domains`);
  const seen = new Map();
  for (const domain of domains) {
    const page = at(`https://www.${domain}/search?q=x`);
    assert.equal(engineOf(page), "google", domain);
    const market = marketOf(page, "google");
    assert.match(market, /^[a-z]{2,3}$/, domain);
    assert.ok(!seen.has(market), `${domain} and ${seen.get(market)} share ${market}`);
    seen.set(market, domain);
  }
});

test("Bing's market is its mkt (or setmkt), else cc, lowercased; none is empty", () => {
  const cases = {
    "https://www.bing.com/search?q=x&mkt=de-DE&cc=DE": "de-de",
    "https://www.bing.com/search?q=x&cc=CH&mkt=fr-CH": "fr-ch",
    "https://www.bing.com/search?q=x&setmkt=en-GB": "en-gb",
    "https://www.bing.com/search?q=x&cc=DE": "de",
    "https://www.bing.com/search?q=x&setlang=de": "", // the interface language, not a market
    "https://www.bing.com/search?q=x": "",
    "https://www.bing.com/search?q=x&mkt=global&cc=AT": "at", // not a market code: cc is
    "https://www.bing.com/search?q=x&mkt=zh-Hant-TW": "",
    "https://www.bing.com/search?q=x&mkt=https%3A%2F%2Fexample.org%2F": "",
    "https://www.bing.com/search?q=x&cc=somewhere": "",
  };
  for (const [url, market] of Object.entries(cases)) {
    assert.equal(engineOf(at(url)), "bing", url);
    assert.equal(marketOf(at(url), "bing"), market, url);
  }
});

test("a market never carries more than a short code", () => {
  for (const bad of ["de.example", "www.google.de", "DE", "de-DE", "deutschland", "de-de-de", " de"]) {
    assert.doesNotMatch(bad, MARKET, bad);
  }
  for (const good of ["", "de", "uk", "com", "cat", "de-de", "es-xl"]) assert.match(good, MARKET, good);
  assert.equal(engineOf(at("https://example.org/search?q=x")), null);
  assert.equal(marketOf(at("https://example.org/search?q=x&mkt=de-DE"), null), "");
});
