import { test } from "node:test";
import assert from "node:assert/strict";
import { Poller } from "../poll.js";

// Timers that run only when told: [{fn, ms}] pending.
function timers() {
  let next = 1;
  const pending = new Map();
  return {
    setTimeout: (fn, ms) => {
      pending.set(next, { fn, ms });
      return next++;
    },
    clearTimeout: (id) => pending.delete(id),
    pending: () => [...pending.values()].map((t) => t.ms),
    fire: async () => {
      const [[id, t]] = pending;
      pending.delete(id);
      await t.fn();
    },
  };
}

test("refreshes now, then every interval after the last one ended", async () => {
  const t = timers();
  let runs = 0;
  let every = 3000;
  const p = new Poller(async () => runs++, () => every, t);
  await p.start();
  assert.equal(runs, 1);
  assert.deepEqual(t.pending(), [3000]);
  every = 1000; // the fragment changed the interval
  await t.fire();
  assert.equal(runs, 2);
  assert.deepEqual(t.pending(), [1000]);
});

test("a refresh asked for during one runs right after it, once", async () => {
  const t = timers();
  let release;
  let runs = 0;
  const p = new Poller(() => {
    runs++;
    return new Promise((r) => (release = r));
  }, () => 3000, t);
  const first = p.start();
  await p.tick(); // a selector changed while the first refresh runs
  await p.tick();
  assert.equal(runs, 1);
  release();
  await first;
  assert.deepEqual(t.pending(), [0]);
  const second = t.fire();
  assert.equal(runs, 2);
  release();
  await second;
  assert.deepEqual(t.pending(), [3000]);
});

test("stopped, it schedules nothing, even when stopped by its own refresh", async () => {
  const t = timers();
  let runs = 0;
  const p = new Poller(async () => {
    runs++;
    p.stop(); // the key was refused
  }, () => 3000, t);
  await p.start();
  assert.deepEqual(t.pending(), []);
  await p.tick();
  assert.equal(runs, 1);
  assert.ok(p.stopped);
});

test("a tick while a timer waits refreshes now and replaces the timer", async () => {
  const t = timers();
  let runs = 0;
  const p = new Poller(async () => runs++, () => 3000, t);
  await p.start();
  await p.tick();
  assert.equal(runs, 2);
  assert.deepEqual(t.pending(), [3000]);
});
