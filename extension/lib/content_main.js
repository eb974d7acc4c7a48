// The content script's work on a result page (content.js loads this module): identify the
// elements, apply the install's arm before the results are shown, and record the page
// view and clicks. The query is hashed here for the assignment and goes nowhere else.

import { armsFor, assignArm } from "./assignment.js";
import { parseArm } from "./arms.js";
import { click, coarseLanguage, serpView } from "./events.js";
import { engineOf, marketOf } from "./markets.js";
import { applyArm, clickTarget, identify, mark } from "./page.js";

function queryOf(location, engine) {
  const q = new URLSearchParams(location.search).get("q") || "";
  return engine === "google" || engine === "bing" ? q.trim().replace(/\s+/g, " ").toLowerCase() : "";
}

function domReady() {
  if (document.readyState !== "loading") return Promise.resolve();
  return new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }));
}

async function bundled(path) {
  return (await fetch(chrome.runtime.getURL(path))).json();
}

export async function run() {
  const engine = engineOf(location);
  if (!engine) return;
  const stored0 = await chrome.storage.local.get("build");
  try {
    await runOn(engine);
  } finally {
    // the test build says when it is done, so a test waits on a condition, not a clock
    if (stored0.build && stored0.build.test_marks) document.documentElement.dataset.auditstreamReady = "1";
  }
}

async function runOn(engine) {
  const stored = await chrome.storage.local.get(["build", "install", "enrollment", "experiment"]);
  const config = stored.build || {}; // the build's options, copied to storage by the service worker
  const enrollment = stored.enrollment || { status: "pending", paused: false };
  const experiment = stored.experiment;
  const active =
    enrollment.status === "enrolled" &&
    !enrollment.paused &&
    stored.install &&
    experiment &&
    experiment.status === "running" &&
    experiment.engines.includes(engine);
  if (!active && !config.test_marks) return;
  const rules = await bundled(`rules/${engine}.json`);
  await domReady();
  const page = identify(document, rules, location);
  if (config.test_marks) mark(page);
  if (!active) return;

  const assigned = await assignArm(stored.install.install_id, queryOf(location, engine), experiment.salt, armsFor(experiment, engine));
  const plan = parseArm(assigned);
  const identified = page.reliable && plan !== null && page.organic.length >= plan.needs;
  const arm = identified ? assigned : "control";
  const order = applyArm(page, identified ? plan : parseArm("control"));
  const context = {
    ...page.context,
    market: marketOf(location, engine),
    experiment_id: experiment.experiment_id,
    arm,
    install_id: stored.install.install_id,
    install_day: stored.install.install_day,
    extension_version: chrome.runtime.getManifest().version,
    identified,
    ui_lang: coarseLanguage(document.documentElement.lang || navigator.language),
  };
  if (context.n_candidates === null) delete context.n_candidates;
  send([serpView(context)]);
  const onClick = (event) => {
    if (event.type === "auxclick" && event.button !== 1) return; // middle-click opens a tab
    const target = clickTarget(page, order, event.target);
    if (target) send([click(context, target)]);
  };
  document.addEventListener("click", onClick, true);
  document.addEventListener("auxclick", onClick, true);
}

function send(events) {
  chrome.runtime.sendMessage({ kind: "events", events }).catch(() => {});
}
