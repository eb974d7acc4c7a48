// The events the extension sends (docs/method.md, "Events and page context"), built from an allow-list of fields: no
// query, URL, title or page text can reach one, whatever the page holds.

export const SCHEMA_VERSION = 1;
const CONTEXT = [
  "experiment_id", "arm", "engine", "install_id", "install_day", "extension_version", "page_index",
  "n_organic", "ads_top_count", "box", "ssr_positions", "n_candidates", "identified", "ui_lang", "market",
];
const CLICK = ["element_type", "original_rank", "display_rank"];
const PROFILE = [
  "install_id", "install_day", "extension_version", "experiment_id", "consent", "age_band",
  "search_languages", "country", "search_frequency", "erasure_key_sha256",
];

function pick(source, keys) {
  const out = {};
  for (const k of keys) if (source[k] !== undefined) out[k] = source[k];
  return out;
}

function envelope(type, now) {
  return { type, schema_version: SCHEMA_VERSION, event_id: crypto.randomUUID(), sent_at: now.toISOString() };
}

export function serpView(context, now = new Date()) {
  return { ...envelope("serp_view", now), ...pick(context, CONTEXT) };
}

export function click(context, target, now = new Date()) {
  const fields = pick(target, CLICK);
  if (fields.element_type !== "organic") {
    delete fields.original_rank;
    delete fields.display_rank;
  }
  return { ...envelope("click", now), ...pick(context, CONTEXT), ...fields };
}

export function installProfile(answers, now = new Date()) {
  const event = { ...envelope("install_profile", now), ...pick(answers, PROFILE) };
  if (event.consent === "declined") {
    for (const k of ["age_band", "country", "search_frequency"]) delete event[k];
    event.search_languages = [];
  }
  return event;
}

// A coarse interface language: "de-DE" -> "de" (the model allows ll or ll-CC; we send ll).
export function coarseLanguage(tag) {
  const primary = String(tag || "").split(/[-_]/)[0].toLowerCase();
  return /^[a-z]{2,3}$/.test(primary) ? primary : "und";
}

export function utcDay(date = new Date()) {
  return date.toISOString().slice(0, 10);
}
