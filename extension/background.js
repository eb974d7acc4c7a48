// The service worker: the install's identity, enrollment, the experiment's public config,
// and the durable outbox that delivers events to ingest exactly once.

import { installProfile, utcDay } from "./lib/events.js";
import { EMPTY_STATE, Outbox } from "./lib/queue.js";

const CONFIG_EVERY_MIN = 30;
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

async function ensureInstall() {
  const { install } = await chrome.storage.local.get("install");
  if (install) return install;
  const fresh = { install_id: crypto.randomUUID(), install_day: utcDay() };
  await chrome.storage.local.set({ install: fresh, enrollment: { status: "pending", paused: false } });
  return fresh;
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
    case "leave": {
      // Leaving sends nothing more: what is still queued is discarded, not sent.
      const state = await outbox.storage.get();
      await outbox.storage.set({ ...EMPTY_STATE, ...state, outbox: [], queued: 0 });
      await chrome.storage.local.set({ enrollment: { status: "left", paused: false } });
      return { ok: true };
    }
    case "send_now": {
      const state = await outbox.storage.get();
      await outbox.storage.set({ ...EMPTY_STATE, ...state, retry_at: 0 });
      await flush();
      return { ok: true };
    }
    case "status": {
      const stored = await chrome.storage.local.get(["install", "experiment", "outbox"]);
      const box = { ...EMPTY_STATE, ...(stored.outbox || {}) };
      return {
        enrollment,
        experiment_id: config.experiment_id,
        experiment_status: stored.experiment ? stored.experiment.status : "unknown",
        install_day: stored.install ? stored.install.install_day : null,
        queued: box.queued,
        sent: box.sent,
        rejected: box.rejected,
        dropped: box.dropped,
        last_error: box.last_error,
        retry_at: box.retry_at,
        test_marks: Boolean(config.test_marks),
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
  if (alarm.name === "flush") flush();
  if (alarm.name === "config") refreshExperiment();
});
