// The onboarding page: the study's consent text and the optional, binned questionnaire.
// Answers become one install_profile event; declining is recorded with no answers.

const LANGUAGES = ["en", "de", "fr", "es", "it", "pt", "nl", "pl", "sv", "tr", "ar", "ru", "uk", "zh", "ja", "ko", "hi"];
const COUNTRIES = ["AT", "AU", "BE", "BR", "CA", "CH", "DE", "DK", "ES", "FI", "FR", "GB", "IE", "IN", "IT", "JP",
  "KR", "MX", "NL", "NO", "NZ", "PL", "PT", "SE", "TR", "UA", "US", "ZA"];

const config = await (await fetch(chrome.runtime.getURL("config.json"))).json();
document.getElementById("title").textContent = config.study_name || "Join the search study";
const consent = document.getElementById("consent");
for (const paragraph of String(config.consent_text || "").split(/\n{2,}/)) {
  const p = document.createElement("p");
  p.textContent = paragraph; // text, never HTML
  consent.append(p);
}
const names = new Intl.DisplayNames([navigator.language, "en"], { type: "language" });
const regions = new Intl.DisplayNames([navigator.language, "en"], { type: "region" });
const box = document.getElementById("languages");
for (const code of LANGUAGES) {
  const label = document.createElement("label");
  const input = Object.assign(document.createElement("input"), { type: "checkbox", name: "search_languages", value: code });
  label.append(input, ` ${names.of(code)}`);
  box.append(label);
}
const country = document.getElementById("country");
for (const code of COUNTRIES) country.append(new Option(regions.of(code), code));

async function finish(message, consentGiven) {
  const form = new FormData(document.getElementById("form"));
  const answers = {
    age_band: form.get("age_band") || undefined,
    search_languages: form.getAll("search_languages").slice(0, 5),
    country: form.get("country") || undefined,
    search_frequency: form.get("search_frequency") || undefined,
  };
  const reply = await chrome.runtime.sendMessage({ kind: "onboarding", consent: consentGiven ? "given" : "declined", answers });
  document.getElementById("form").hidden = true;
  const done = document.getElementById("done");
  done.hidden = false;
  done.textContent = reply && reply.ok ? message : `Something went wrong: ${reply && reply.error}`;
}

document.getElementById("form").addEventListener("submit", (event) => {
  event.preventDefault();
  finish("Thank you: you have joined the study. You can pause or leave it from the toolbar button.", true);
});
document.getElementById("decline").addEventListener("click", () => {
  finish("You have not joined the study. Nothing about your searches will be recorded.", false);
});
