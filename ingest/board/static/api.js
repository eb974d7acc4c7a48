// The board's requests: GET /v1/board/* with the key as an Authorization: Bearer header
// (never in the URL). `fetch` is injected, so node tests drive this without a browser.

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "HttpError";
    this.status = status;
  }
}

export const authHeaders = (key) => ({ Authorization: `Bearer ${key}`, Accept: "application/json" });

// The key was refused (401) or lacks the read scope (403): ask for another.
export const isAuth = (err) => err instanceof HttpError && (err.status === 401 || err.status === 403);

// The answer's JSON; an HttpError with the answer's message (or "HTTP <status>") otherwise.
export async function getJSON(path, key, fetchFn = (...args) => globalThis.fetch(...args)) {
  const resp = await fetchFn(path, { headers: authHeaders(key), cache: "no-store" });
  let body = null;
  try {
    body = await resp.json();
  } catch (_) {
    body = null;
  }
  if (!resp.ok) throw new HttpError(resp.status, (body && body.message) || `HTTP ${resp.status}`);
  return body;
}

// An answer's text (a figure's SVG); an HttpError with the answer's message otherwise.
export async function getText(path, key, fetchFn = (...args) => globalThis.fetch(...args)) {
  const resp = await fetchFn(path, { headers: { ...authHeaders(key), Accept: "image/svg+xml" }, cache: "no-store" });
  if (resp.ok) return resp.text();
  let body = null;
  try {
    body = await resp.json();
  } catch (_) {
    body = null;
  }
  throw new HttpError(resp.status, (body && body.message) || `HTTP ${resp.status}`);
}

const q = encodeURIComponent;

// The board's endpoints (ingest/board/routes.py).
export const paths = {
  index: () => "/v1/board/index",
  // options: {correction, vr} as in fragment.js; the route's defaults (holm, off) are left out
  experiment: (experiment, engine, options = {}) =>
    `/v1/board/experiments/${q(experiment)}?engine=${q(engine)}` +
    (options.correction && options.correction !== "holm" ? `&correction=${q(options.correction)}` : "") +
    (options.vr ? "&variance_reduction=1" : ""),
  autocomplete: (study) => `/v1/board/autocomplete?study=${q(study)}`,
  personalization: (study) => `/v1/board/personalization/${q(study)}`,
  alerts: () => "/v1/board/alerts?limit=50",
};
