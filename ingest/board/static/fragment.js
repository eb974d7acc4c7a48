// What the board shows, kept in the page's address fragment (#key=...&experiment=...),
// which browsers never send to the server. Pure: strings in, settings out, and back.

export const DEFAULT_EVERY_MS = 3000;
/** The experiment panel's correction of its family's tests unless chosen (the route's default). */
export const DEFAULT_CORRECTION = "holm";
export const CORRECTIONS = ["holm", "bh", "bonferroni", "none"];

// {key, experiment, engine, ac, ps, every, correction, vr}: `ac` is a crawl id prefix ("" =
// every crawl, null = the newest study); `every` the refresh interval in ms (at least 1 s);
// `correction` how the experiment's family of tests is corrected, `vr` whether its
// variance-reduced estimates are shown (the experiment endpoint's correction and
// variance_reduction).
export function parseFragment(hash) {
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  const every = Number(p.get("every"));
  return {
    key: p.get("key") || "",
    experiment: p.get("experiment") || "",
    engine: p.get("engine") || "",
    ac: p.has("ac") ? p.get("ac") : null,
    ps: p.get("ps") || "",
    every: Number.isFinite(every) && every >= 1 ? Math.max(1000, every * 1000) : DEFAULT_EVERY_MS,
    correction: CORRECTIONS.includes(p.get("correction")) ? p.get("correction") : DEFAULT_CORRECTION,
    vr: p.get("vr") === "1",
  };
}

// The fragment (without "#") of settings as parseFragment returns them; defaults left out.
export function formatFragment(state) {
  const p = new URLSearchParams();
  if (state.key) p.set("key", state.key);
  if (state.experiment) p.set("experiment", state.experiment);
  if (state.engine) p.set("engine", state.engine);
  if (state.ac !== null) p.set("ac", state.ac);
  if (state.ps) p.set("ps", state.ps);
  if (state.every !== DEFAULT_EVERY_MS) p.set("every", String(state.every / 1000));
  if (state.correction && state.correction !== DEFAULT_CORRECTION) p.set("correction", state.correction);
  if (state.vr) p.set("vr", "1");
  return p.toString();
}
