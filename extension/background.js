// The service worker: the install's identity, enrollment, the experiment's public config,
// and the durable outbox that delivers events to ingest exactly once.

import { installProfile, utcDay } from "./lib/events.js";
import { EMPTY_STATE, Outbox } from "./lib/queue.js";

const CONFIG_EVERY_MIN = 30;
const ERASE_TIMEOUT_MS = 120000; // erasing recomputes the study's sums: seconds, not milliseconds
const FLUSH_EVERY_MIN = 1;
let configPromise = null;

// The build's options (auditstream extension build). Content scripts read the public part
// from storage, so config.json itself is never exposed to web pages.
function buildConfig() {
  configPromise ??= fetch(chrome.runtime.getURL("config.json"))
    .then((r) => r.json())
    .then(async (config) => {
      await chrome.storage.local.set({ build: { test_marks: Boolean(config.test_marks) } });
      return config;
    });
  return configPromise;
}

const outbox = new Outbox(
  {
    get: async () => (await chrome.storage.local.get("outbox")).outbox || { ...EMPTY_STATE },
    set: (state) => chrome.storage.local.set({ outbox: state }),
  },
  { fetch: (...args) => fetch(...args) },
);

// The install's identity, and the secret that proves it is this browser's when the volunteer
// asks to erase what was sent: only its SHA-256 goes to the service (with the onboarding
// answers), the secret itself only with the erasure request.
async function ensureInstall() {
  const { install } = await chrome.storage.local.get("install");
  if (install && install.erasure_key) return install;
  const fresh = install
    ? { ...install, erasure_key: randomHex(32) } // an install made before erasure existed
    : { install_id: crypto.randomUUID(), install_day: utcDay(), erasure_key: randomHex(32) };
  await chrome.storage.local.set({ install: fresh });
  if (!install) await chrome.storage.local.set({ enrollment: { status: "pending", paused: false } });
  return fresh;
}

function randomHex(bytes) {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Ask the service to erase this install's data (after leaving). Kept as pending and tried
// again every minute while the service cannot answer; a refusal is shown, not retried.
async function eraseOwn() {
  const { install, erasure } = await chrome.storage.local.get(["install", "erasure"]);
  if (!install || !erasure || erasure.status !== "pending") return erasure;
  const config = await buildConfig();
  let next;
  try {
    const response = await fetch(`${config.study_url.replace(/\/$/, "")}/v1/participants/erase-own`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.ingest_key}` },
      body: JSON.stringify({ install_id: install.install_id, erasure_key: install.erasure_key }),
      signal: AbortSignal.timeout(ERASE_TIMEOUT_MS),
    });
    const body = await response.json().catch(() => ({}));
    if (response.ok && Array.isArray(body.receipts) && body.receipts.length) {
      next = { status: "done", receipt: body.receipts[0] };
    } else if (response.status === 400 || response.status === 403) {
      next = { status: "refused", error: String(body.message || body.error || response.status).slice(0, 300) };
    } else {
      next = { status: "pending", error: `HTTP ${response.status}${body.error ? ` ${body.error}` : ""}` };
      const wait = Number.parseFloat(response.headers.get("Retry-After") || "");
      if (Number.isFinite(wait)) setTimeout(eraseOwn, Math.min(Math.max(wait, 1), 60) * 1000); // the alarm is the backstop
    }
  } catch (error) {
    next = { status: "pending", error: `network: ${String(error && error.message).slice(0, 200)}` };
  }
  await chrome.storage.local.set({ erasure: { ...next, asked_at: erasure.asked_at } });
  return next;
}

async function refreshExperiment() {
  const config = await buildConfig();
  try {
    const response = await fetch(
      `${config.study_url.replace(/\/$/, "")}/v1/experiments/${encodeURIComponent(config.experiment_id)}/config`,
      { headers: { Authorization: `Bearer ${config.ingest_key}` } },
    );
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const experiment = await response.json();
    await chrome.storage.local.set({ experiment: { ...experiment, fetched_at: Date.now() } });
  } catch (error) {
    await noteError(`experiment config: ${error.message}`); // keep the last config
  }
}

async function noteError(message) {
  const state = await outbox.storage.get();
  await outbox.storage.set({ ...EMPTY_STATE, ...state, last_error: String(message).slice(0, 200) });
}

async function flush() {
  const config = await buildConfig();
  const { enrollment } = await chrome.storage.local.get("enrollment");
  if (!enrollment || enrollment.status === "left") return;
  await outbox.flush(config.study_url, config.ingest_key);
}

async function handle(message) {
  const config = await buildConfig();
  const { enrollment = { status: "pending", paused: false } } = await chrome.storage.local.get("enrollment");
  switch (message.kind) {
    case "events":
      if (enrollment.status !== "enrolled" || enrollment.paused) return { ok: false };
      await outbox.add(message.events);
      flush();
      return { ok: true };
    case "onboarding": {
      const install = await ensureInstall();
      const consent = message.consent === "given" ? "given" : "declined";
      const event = installProfile({
        ...message.answers,
        erasure_key_sha256: await sha256Hex(install.erasure_key),
        consent,
        install_id: install.install_id,
        install_day: install.install_day,
        extension_version: chrome.runtime.getManifest().version,
        experiment_id: config.experiment_id,
      });
      await chrome.storage.local.set({ enrollment: { status: consent === "given" ? "enrolled" : "declined", paused: false } });
      await outbox.add([event]); // a declined consent is recorded too, with no answers
      await refreshExperiment();
      await flush();
      return { ok: true };
    }
    case "pause":
    case "resume":
      await chrome.storage.local.set({ enrollment: { ...enrollment, paused: message.kind === "pause" } });
      return { ok: true };
    case "leave":
    case "leave_and_erase": {
      // Leaving sends nothing more: what is still queued is discarded, not sent.
      const state = await outbox.storage.get();
      await outbox.storage.set({ ...EMPTY_STATE, ...state, outbox: [], queued: 0 });
      await chrome.storage.local.set({ enrollment: { status: "left", paused: false } });
      if (message.kind === "leave") return { ok: true };
      await chrome.storage.local.set({ erasure: { status: "pending", asked_at: Date.now() } });
      return { ok: true, erasure: await eraseOwn() };
    }
    case "send_now": {
      const state = await outbox.storage.get();
      await outbox.storage.set({ ...EMPTY_STATE, ...state, retry_at: 0 });
      await flush();
      return { ok: true };
    }
    case "status": {
      const stored = await chrome.storage.local.get(["install", "experiment", "outbox", "erasure"]);
      const box = { ...EMPTY_STATE, ...(stored.outbox || {}) };
      return {
        enrollment,
        experiment_id: config.experiment_id,
        study_name: config.study_name || "Search study",
        experiment_status: stored.experiment ? stored.experiment.status : "unknown",
        install_day: stored.install ? stored.install.install_day : null,
        queued: box.queued,
        sent: box.sent,
        rejected: box.rejected,
        dropped: box.dropped,
        last_error: box.last_error,
        retry_at: box.retry_at,
        test_marks: Boolean(config.test_marks),
        install_id: stored.install ? stored.install.install_id : null,
        erasure: stored.erasure || null,
        sent_log: box.sent_log || [],
        waiting: box.outbox.slice(0, 20).map((event) => JSON.stringify(event)),
      };
    }
    default:
      return { ok: false, error: "unknown message" };
  }
}

chrome.runtime.onMessage.addListener((message, sender, reply) => {
  if (sender.id !== chrome.runtime.id) return false;
  handle(message).then(reply, (error) => reply({ ok: false, error: String(error && error.message) }));
  return true; // the reply comes asynchronously
});

chrome.runtime.onInstalled.addListener(async (details) => {
  await ensureInstall();
  chrome.alarms.create("flush", { periodInMinutes: FLUSH_EVERY_MIN });
  chrome.alarms.create("config", { periodInMinutes: CONFIG_EVERY_MIN });
  await refreshExperiment();
  const config = await buildConfig();
  if (details.reason === "install" && !config.skip_onboarding_tab) {
    chrome.tabs.create({ url: chrome.runtime.getURL("onboarding.html") });
  }
});

chrome.runtime.onStartup.addListener(() => {
  refreshExperiment();
  flush();
});

chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === "flush") {
    flush();
    eraseOwn(); // a pending erasure, tried again
  }
  if (alarm.name === "config") refreshExperiment();
});
