import { test } from "node:test";
import assert from "node:assert/strict";
import { HttpError, authHeaders, getJSON, isAuth, paths } from "../api.js";

function server(status, body) {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url, init });
    return { ok: status >= 200 && status < 300, status, json: async () => (body === undefined ? JSON.parse("not json") : body) };
  };
  return { fetch, seen };
}

test("the key goes only in the Authorization header, never in the URL, and nothing is cached", async () => {
  const { fetch, seen } = server(200, { alerts: [] });
  assert.deepEqual(await getJSON(paths.alerts(), "k-123", fetch), { alerts: [] });
  assert.equal(seen[0].url, "/v1/board/alerts?limit=50");
  assert.deepEqual(seen[0].init, { headers: { Authorization: "Bearer k-123", Accept: "application/json" }, cache: "no-store" });
  assert.deepEqual(authHeaders("x"), { Authorization: "Bearer x", Accept: "application/json" });
});

test("an error answer is an HttpError with the service's message, or the status", async () => {
  await assert.rejects(getJSON("/v1/board/index", "k", server(503, { error: "store_unavailable", message: "the store is down" }).fetch), (err) => {
    assert.ok(err instanceof HttpError);
    assert.deepEqual([err.status, err.message], [503, "the store is down"]);
    return true;
  });
  await assert.rejects(getJSON("/v1/board/index", "k", server(502).fetch), { status: 502, message: "HTTP 502" });
});

test("a refused key (401) or a missing scope (403) asks for another key; other errors do not", () => {
  assert.ok(isAuth(new HttpError(401, "")) && isAuth(new HttpError(403, "")));
  assert.ok(!isAuth(new HttpError(503, "")) && !isAuth(new Error("network")));
});

test("ids and studies are encoded into the paths", () => {
  assert.equal(paths.index(), "/v1/board/index");
  assert.equal(paths.experiment("a/b c", "google"), "/v1/board/experiments/a%2Fb%20c?engine=google");
  assert.equal(paths.experiment("e", "bing", { correction: "holm", vr: false }), "/v1/board/experiments/e?engine=bing");
  assert.equal(paths.experiment("e", "bing", { correction: "bh", vr: true }), "/v1/board/experiments/e?engine=bing&correction=bh&variance_reduction=1");
  assert.equal(paths.autocomplete("s&t-"), "/v1/board/autocomplete?study=s%26t-");
  assert.equal(paths.autocomplete(""), "/v1/board/autocomplete?study=");
  assert.equal(paths.personalization("p?1"), "/v1/board/personalization/p%3F1");
});
