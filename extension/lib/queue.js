// The durable outbox: events wait in chrome.storage.local until ingest answers 202, so a
// network drop, a server outage or a browser restart loses nothing. Every event keeps the
// id it was created with across retries; ingest and the worker store each id once.
// Storage and fetch are injected, so node tests drive this without a browser.

export const MAX_BATCH = 100;
export const MAX_QUEUED = 20000;
export const SENT_LOG = 50; // the last events sent, as they left the browser, for the popup
const BASE_BACKOFF_S = 2;
const POST_TIMEOUT_MS = 30000; // a request that hangs must not hold the outbox
const MAX_BACKOFF_S = 600;

export const EMPTY_STATE = {
  outbox: [], queued: 0, sent: 0, dropped: 0, rejected: 0, retry_at: 0, failures: 0, last_error: "", sent_log: [],
};

export class Outbox {
  // storage: {get(): Promise<state>, set(state): Promise<void>}; state as EMPTY_STATE.
  constructor(storage, { fetch, now = () => Date.now() } = {}) {
    this.storage = storage;
    this.fetch = fetch;
    this.now = now;
    this.busy = Promise.resolve();
  }

  // Serialize every read-modify-write of the stored state (a service worker handles
  // messages and alarms concurrently).
  locked(work) {
    const run = this.busy.then(work, work);
    this.busy = run.catch(() => {});
    return run;
  }

  add(events) {
    return this.locked(async () => {
      const state = { ...EMPTY_STATE, ...(await this.storage.get()) };
      let outbox = state.outbox.concat(events);
      let dropped = state.dropped;
      if (outbox.length > MAX_QUEUED) {
        dropped += outbox.length - MAX_QUEUED; // counted and shown, never silent
        outbox = outbox.slice(outbox.length - MAX_QUEUED);
      }
      await this.storage.set({ ...state, outbox, dropped, queued: outbox.length });
    });
  }

  // Post the queued events in batches until the queue is empty or the server says wait.
  // Returns the state afterwards.
  flush(endpoint, key) {
    return this.locked(async () => {
      let state = { ...EMPTY_STATE, ...(await this.storage.get()) };
      while (state.outbox.length && this.now() >= state.retry_at) {
        const batch = state.outbox.slice(0, MAX_BATCH);
        const body = JSON.stringify(batch); // what leaves the browser, and what the popup shows
        const outcome = await this.post(endpoint, key, body);
        state = { ...EMPTY_STATE, ...(await this.storage.get()) }; // add() may have appended meanwhile
        if (outcome.done) {
          const ids = new Set(batch.map((e) => e.event_id));
          const outbox = state.outbox.filter((e) => !ids.has(e.event_id));
          state = {
            ...state,
            outbox,
            queued: outbox.length,
            sent: state.sent + outcome.accepted,
            rejected: state.rejected + outcome.rejected,
            failures: 0,
            retry_at: 0,
            last_error: outcome.error || state.last_error,
            sent_log: sentLog(state.sent_log, body, outcome, this.now()),
          };
        } else {
          const failures = state.failures + 1;
          const backoff = Math.min(MAX_BACKOFF_S, BASE_BACKOFF_S * 2 ** (failures - 1));
          const wait = outcome.retryAfter != null ? Math.max(outcome.retryAfter, 1) : backoff;
          state = { ...state, failures, retry_at: this.now() + wait * 1000, last_error: outcome.error };
        }
        await this.storage.set(state);
      }
      return state;
    });
  }

  // One POST: {done, accepted, rejected, error, retryAfter}. done = the batch may leave the
  // queue (stored, or refused for good); otherwise it is retried later.
  async post(endpoint, key, sent) {
    const batch = JSON.parse(sent);
    let response;
    try {
      response = await this.fetch(`${endpoint.replace(/\/$/, "")}/v1/events`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
        body: sent,
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
    } catch (err) {
      return { done: false, error: `network: ${String(err && err.message ? err.message : err).slice(0, 200)}` };
    }
    let body = {};
    try {
      body = await response.json();
    } catch {
      body = {};
    }
    const status = response.status;
    const refusedAt = Array.isArray(body.rejected)
      ? body.rejected.map((r) => ({ index: r.index, reason: String(r.reason || "invalid").slice(0, 40) }))
      : [];
    if (status === 202) {
      const rejected = refusedAt.length;
      return {
        done: true, accepted: batch.length - rejected, rejected, refusedAt,
        error: rejected ? `${rejected} events refused: ${reasonOf(body)}` : "",
      };
    }
    if (status === 422) {
      const all = batch.map((_, index) => refusedAt.find((r) => r.index === index) || { index, reason: "invalid" });
      return { done: true, accepted: 0, rejected: batch.length, refusedAt: all, error: `all refused: ${reasonOf(body)}` };
    }
    const retryAfter = Number.parseFloat(response.headers.get("Retry-After") || "");
    return {
      done: false,
      error: `HTTP ${status}${body.error ? ` ${body.error}` : ""}`,
      retryAfter: Number.isFinite(retryAfter) ? retryAfter : null,
    };
  }
}

// The newest SENT_LOG events of the batches that left the queue: each event's JSON text, cut
// from the body that was posted, and what became of it (accepted or refused, with why).
function sentLog(log, body, outcome, now) {
  const refused = new Map((outcome.refusedAt || []).map((r) => [r.index, r.reason]));
  const entries = JSON.parse(body).map((event, i) => ({
    at: now,
    status: refused.has(i) ? `refused: ${refused.get(i)}` : "accepted",
    json: JSON.stringify(event),
  }));
  return [...(log || []), ...entries].slice(-SENT_LOG);
}

function reasonOf(body) {
  const first = Array.isArray(body.rejected) && body.rejected[0];
  return String((first && (first.reason || first.error)) || body.error || "invalid").slice(0, 100);
}
