// auditstream live board, the page's entry module: polls /v1/board/* with the key from the
// URL fragment, sent only as an Authorization: Bearer header (api.js), and draws every
// panel as HTML tables and inline SVG. No third-party code; text is set with textContent
// only (suggestions, queries and ids are data, never markup). This module wires the page:
// what each panel shows is decided by the pure modules it imports (README.md lists them).

import { getJSON, getText, isAuth, paths } from "./api.js";
import { fillSelect, panelError, setPanel, setStatus } from "./dom.js";
import { EXPERIMENT_PANELS, emptyExperiment, experimentViews } from "./experiment.js";
import { statusLine } from "./format.js";
import { figureList, figuresPanel, selectionKey } from "./figures.js";
import { formatFragment, parseFragment } from "./fragment.js";
import { alertsPanel } from "./panel-alerts.js";
import { autocompleteViews } from "./panel-autocomplete.js";
import { NO_STUDY, personalizationViews } from "./panel-personalization.js";
import { Poller } from "./poll.js";
import { choose } from "./selection.js";

const $ = (id) => document.getElementById(id);

// What is shown (fragment.js) and the loop that refreshes it.
const state = parseFragment("");
const poller = new Poller(refresh, () => state.every);

const get = (path) => getJSON(path, state.key);

// Title and panels ({title, panels}) drawn into the page.
function draw(titleId, views) {
  $(titleId).textContent = views.title;
  for (const [id, p] of Object.entries(views.panels)) setPanel(document, id, p);
}

function applyIndex(index) {
  const chosen = choose(index, state);
  Object.assign(state, { experiment: chosen.experiment, engine: chosen.engine, ac: chosen.ac, ps: chosen.ps });
  fillSelect(document, $("sel-experiment"), chosen.options.experiment, state.experiment);
  fillSelect(document, $("sel-engine"), chosen.options.engine, state.engine);
  fillSelect(document, $("sel-ac"), chosen.options.ac, state.ac);
  fillSelect(document, $("sel-ps"), chosen.options.ps, state.ps);
  $("sel-correction").value = state.correction;
  $("sel-vr").value = state.vr ? "1" : "0";
}

// A panel group's load; its failure (but a refused key) marks its panels, keeping what they show.
async function guarded(ids, load) {
  try {
    await load();
  } catch (err) {
    if (isAuth(err)) throw err;
    panelError(document, ids, err.message);
    return false;
  }
  return true;
}

async function loadExperiment() {
  const { experiment, engine, correction, vr } = state;
  if (!experiment) {
    draw("exp-title", emptyExperiment("No arrangement experiment has data yet."));
    return;
  }
  const answer = await get(paths.experiment(experiment, engine, { correction, vr }));
  const same = experiment === state.experiment && engine === state.engine && correction === state.correction && vr === state.vr;
  if (same) draw("exp-title", experimentViews(answer));
}

async function loadAutocomplete() {
  const study = state.ac || "";
  const answer = await get(paths.autocomplete(study));
  if (study === (state.ac || "")) draw("ac-title", autocompleteViews(answer));
}

async function loadPersonalization() {
  const study = state.ps;
  if (!study) {
    draw("ps-title", personalizationViews(NO_STUDY));
    return;
  }
  const answer = await get(paths.personalization(study));
  if (study === state.ps) draw("ps-title", personalizationViews(answer));
}

async function loadAlerts() {
  setPanel(document, "panel-alerts", alertsPanel(await get(paths.alerts())));
}

// The figures are drawn once per selection (each is several reports), in the background,
// one at a time, so the panels' refresh never waits on them.
const figures = { shown: "", drawing: "" };

async function loadFigures() {
  const key = selectionKey(state);
  if (key === figures.shown || key === figures.drawing) return;
  figures.drawing = key;
  const drawn = [];
  for (const item of figureList(state)) {
    try {
      drawn.push([item, { svg: await getText(item.path, state.key) }]);
    } catch (err) {
      if (isAuth(err)) throw err;
      drawn.push([item, { error: err.message }]);
    }
  }
  if (figures.drawing !== key) return; // the selection changed meanwhile: that one draws
  setPanel(document, "panel-figures", figuresPanel(drawn));
  figures.shown = drawn.every(([, got]) => !got.error) ? key : "";
  figures.drawing = "";
}

async function refresh() {
  try {
    applyIndex(await get(paths.index()));
    const results = await Promise.all([
      guarded(Object.keys(EXPERIMENT_PANELS), loadExperiment),
      guarded(["panel-churn", "panel-nmi"], loadAutocomplete),
      guarded(["panel-pers"], loadPersonalization),
      guarded(["panel-alerts"], loadAlerts),
    ]);
    guarded(["panel-figures"], loadFigures).catch(() => {}); // a refused key shows on the next refresh
    const ok = results.every(Boolean);
    setStatus(document, ok ? "live" : "waiting", statusLine(ok, new Date(), state.every));
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  } catch (err) {
    if (isAuth(err)) {
      poller.stop();
      showPrompt(`The key was refused: ${err.message}`);
      return;
    }
    setStatus(document, "error", `cannot reach the service: ${err.message}; retrying`);
  }
}

function readFragment() {
  Object.assign(state, parseFragment(location.hash));
}

function writeFragment() {
  history.replaceState(null, "", `${location.pathname}#${formatFragment(state)}`);
}

function showPrompt(message) {
  $("board").hidden = true;
  $("prompt").hidden = false;
  const err = $("prompt-error");
  err.hidden = !message;
  err.textContent = message || "";
  setStatus(document, "idle", "no API key");
  $("key-input").focus();
}

function start() {
  $("prompt").hidden = true;
  $("board").hidden = false;
  setStatus(document, "waiting", "loading…");
  poller.start();
}

function onSelect(field, select) {
  select.addEventListener("change", () => {
    state[field] = select.value;
    if (field === "experiment") state.engine = "";
    writeFragment();
    poller.tick();
  });
}

function init() {
  readFragment();
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key-input").value.trim();
    if (!key) return;
    state.key = key;
    $("key-input").value = "";
    writeFragment();
    start();
  });
  onSelect("experiment", $("sel-experiment"));
  onSelect("engine", $("sel-engine"));
  onSelect("ac", $("sel-ac"));
  onSelect("ps", $("sel-ps"));
  // the experiment panel's options, kept in the fragment like the selection
  $("sel-correction").addEventListener("change", () => {
    state.correction = $("sel-correction").value;
    writeFragment();
    poller.tick();
  });
  $("sel-vr").addEventListener("change", () => {
    state.vr = $("sel-vr").value === "1";
    writeFragment();
    poller.tick();
  });
  window.addEventListener("hashchange", () => {
    readFragment();
    if (!state.key) {
      poller.stop();
      showPrompt("");
    } else if (poller.stopped) start();
    else poller.tick();
  });
  if (state.key) start();
  else showPrompt("");
}

init();
