// Which engine a result page is on, and the engine's coarse market: a short code a report
// or the SRM check can be split by, never the URL (schemas/events.py, `market`).
//
// Google: the last label of the search domain, its country-code TLD: www.google.de -> "de",
// www.google.co.uk -> "uk", www.google.com.br -> "br"; www.google.com -> "com" (the
// worldwide domain, localized by Google from where the volunteer is, so not "us");
// www.google.cat -> "cat". Every domain of google_domains.txt gets its own code.
// Bing (one host for every market): the page's `mkt` (or `setmkt`) parameter lowercased,
// "de-de"; else its `cc` parameter, "de"; else "" (Bing chose the market from its cookie or
// the volunteer's address, which the page's URL does not say). `setlang` is the interface
// language, sent as ui_lang, not a market.

export const MARKET = /^([a-z]{2,3}(-[a-z]{2})?)?$/; // schemas.events.Market, the same pattern

const GOOGLE_HOST = /^www\.google\.(?:[a-z]{2,3}\.)?([a-z]{2,3})$/;
const BING_HOST = /^(www|cn)\.bing\.com$/;

// "google", "bing" or null, from a Location (or URL).
export function engineOf(location) {
  if (GOOGLE_HOST.test(location.hostname)) return "google";
  if (BING_HOST.test(location.hostname)) return "bing";
  return null;
}

// The market of a result page of `engine`: a code matching MARKET, "" when unknown.
export function marketOf(location, engine) {
  let market = "";
  if (engine === "google") {
    const m = GOOGLE_HOST.exec(location.hostname);
    market = m ? m[1] : "";
  } else if (engine === "bing") {
    const params = new URLSearchParams(location.search);
    const mkt = (params.get("mkt") || params.get("setmkt") || "").toLowerCase();
    const cc = (params.get("cc") || "").toLowerCase();
    if (/^[a-z]{2}-[a-z]{2}$/.test(mkt)) market = mkt;
    else if (/^[a-z]{2}$/.test(cc)) market = cc;
  }
  return MARKET.test(market) ? market : "";
}
