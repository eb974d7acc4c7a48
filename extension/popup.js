// The toolbar popup: enrollment, queued and sent counts, the last error; pause, resume,
// send now, or leave the study (leaving discards what is queued and sends nothing more).

const STATES = { pending: "not joined yet", enrolled: "taking part", declined: "declined", left: "left the study" };

async function render() {
  const s = await chrome.runtime.sendMessage({ kind: "status" });
  const rows = [
    ["Study", s.experiment_id],
    ["You are", STATES[s.enrollment.status] + (s.enrollment.paused ? " (paused)" : "")],
    ["Waiting to send", String(s.queued)],
    ["Sent", String(s.sent)],
    ["Last problem", s.last_error || "none"],
  ];
  if (s.retry_at > Date.now()) rows.push(["Next try", new Date(s.retry_at).toLocaleTimeString()]);
  const list = document.getElementById("status");
  list.replaceChildren();
  for (const [k, v] of rows) {
    list.append(Object.assign(document.createElement("dt"), { textContent: k }));
    list.append(Object.assign(document.createElement("dd"), { textContent: v }));
  }
  const enrolled = s.enrollment.status === "enrolled";
  document.getElementById("join").hidden = enrolled || s.enrollment.status === "left";
  document.getElementById("pause").hidden = !enrolled || s.enrollment.paused;
  document.getElementById("resume").hidden = !enrolled || !s.enrollment.paused;
  document.getElementById("send").hidden = !enrolled || s.queued === 0;
  document.getElementById("leave").hidden = !enrolled;
}

for (const [id, kind] of [["pause", "pause"], ["resume", "resume"], ["send", "send_now"]]) {
  document.getElementById(id).addEventListener("click", async () => {
    await chrome.runtime.sendMessage({ kind });
    render();
  });
}
document.getElementById("leave").addEventListener("click", async () => {
  if (!confirm("Leave the study? Nothing more will be recorded or sent.")) return;
  await chrome.runtime.sendMessage({ kind: "leave" });
  render();
});
document.getElementById("join").addEventListener("click", () => {
  chrome.tabs.create({ url: chrome.runtime.getURL("onboarding.html") });
});
render();
