import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_BATCH, Outbox, SENT_LOG } from "../lib/queue.js";

function memory() {
  let state = {};
  return { get: async () => structuredClone(state), set: async (s) => { state = structuredClone(s); } };
}

function server(script) {
  const seen = [];
  const fetch = async (url, init) => {
    const batch = JSON.parse(init.body);
    seen.push({ url, headers: init.headers, batch });
    const step = script.length > 1 ? script.shift() : script[0];
    if (step === "down") throw new TypeError("Failed to fetch");
    const [status, retryAfter] = step;
    const body = status === 202 ? { accepted: batch.length, rejected: [] } : { error: "x" };
    return { status, json: async () => body, headers: { get: (h) => (h === "Retry-After" ? retryAfter ?? null : null) } };
  };
  return { fetch, seen };
}

const events = (n, from = 0) => Array.from({ length: n }, (_, i) => ({ event_id: `id-${from + i}`, type: "click" }));

test("a batch is posted with the key and leaves the queue on 202", async () => {
  const { fetch, seen } = server([[202]]);
  const box = new Outbox(memory(), { fetch });
  await box.add(events(3));
  const state = await box.flush("http://ingest.example/", "k-123");
  assert.equal(seen[0].url, "http://ingest.example/v1/events");
  assert.equal(seen[0].headers.Authorization, "Bearer k-123");
  assert.deepEqual({ queued: state.queued, sent: state.sent }, { queued: 0, sent: 3 });
});

test("an outage keeps every event, with the same ids, until the server is back", async () => {
  let clock = 0;
  const { fetch, seen } = server(["down", [503, "30"], [202]]);
  const box = new Outbox(memory(), { fetch, now: () => clock });
  await box.add(events(MAX_BATCH + 20));
  let state = await box.flush("http://i", "k");
  assert.equal(state.queued, MAX_BATCH + 20);
  assert.match(state.last_error, /network/);
  assert.equal(seen.length, 1); // no hammering: the next try waits for the backoff
  clock = state.retry_at;
  state = await box.flush("http://i", "k");
  assert.equal(state.retry_at - clock, 30_000); // Retry-After honoured
  clock = state.retry_at;
  state = await box.flush("http://i", "k");
  assert.deepEqual({ queued: state.queued, sent: state.sent }, { queued: 0, sent: MAX_BATCH + 20 });
  const posted = seen.flatMap((s) => s.batch.map((e) => e.event_id));
  const delivered = seen.slice(2).flatMap((s) => s.batch.map((e) => e.event_id));
  assert.deepEqual(new Set(delivered), new Set(events(MAX_BATCH + 20).map((e) => e.event_id)));
  assert.equal(delivered.length, MAX_BATCH + 20); // each id delivered once
  assert.ok(posted.length > delivered.length); // the retried ones kept their ids
});

test("events refused for good leave the queue and are counted", async () => {
  const { fetch } = server([[422]]);
  const box = new Outbox(memory(), { fetch });
  await box.add(events(2));
  const state = await box.flush("http://i", "k");
  assert.deepEqual({ queued: state.queued, rejected: state.rejected, sent: state.sent }, { queued: 0, rejected: 2, sent: 0 });
  assert.match(state.last_error, /refused/);
});

test("concurrent adds and flushes lose nothing", async () => {
  const { fetch } = server([[202]]);
  const box = new Outbox(memory(), { fetch });
  await Promise.all([box.add(events(5)), box.flush("http://i", "k"), box.add(events(5, 5)), box.flush("http://i", "k")]);
  const state = await box.flush("http://i", "k");
  assert.deepEqual({ queued: state.queued, sent: state.sent }, { queued: 0, sent: 10 });
});

test("the sent log keeps the newest events as they left the browser, with what became of them", async () => {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push(init.body);
    const rejected = seen.length === 1 ? [{ index: 1, reason: "install_erased", field: "install_id" }] : [];
    return { status: 202, json: async () => ({ accepted: 3 - rejected.length, rejected }), headers: { get: () => null } };
  };
  const box = new Outbox(memory(), { fetch });
  await box.add(events(3));
  await box.flush("http://i", "k");
  await box.add(events(SENT_LOG, 3));
  const state = await box.flush("http://i", "k");
  assert.equal(state.sent_log.length, SENT_LOG);
  const posted = seen.flatMap((body) => JSON.parse(body).map((e) => JSON.stringify(e)));
  assert.deepEqual(state.sent_log.map((entry) => entry.json), posted.slice(-SENT_LOG));
  const all = [...(await box.storage.get()).sent_log];
  assert.ok(all.every((entry) => entry.status === "accepted")); // the refused one has left the log
});

test("a refused event is logged with its reason", async () => {
  const fetch = async () => ({
    status: 422,
    json: async () => ({ error: "all_rejected", rejected: [{ index: 0, reason: "install_erased" }] }),
    headers: { get: () => null },
  });
  const box = new Outbox(memory(), { fetch });
  await box.add(events(1));
  const state = await box.flush("http://i", "k");
  assert.deepEqual(state.sent_log.map((e) => e.status), ["refused: install_erased"]);
});
