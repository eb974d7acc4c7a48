// The toolbar popup: enrollment, queued and sent counts, the last error; pause, resume,
// send now, leave the study (leaving discards what is queued and sends nothing more), or
// leave and have what was sent erased (the receipt is shown); and what was sent, as the
// JSON that left the browser.

const STATES = { pending: "not joined yet", enrolled: "taking part", declined: "declined", left: "left the study" };

function entry(json, status, at) {
  const item = document.createElement("li");
  const head = document.createElement("div");
  head.className = "sent-status";
  head.textContent = at ? `${status}, ${new Date(at).toLocaleString()}` : status;
  const pre = Object.assign(document.createElement("pre"), { className: "sent-event", textContent: json });
  item.append(head, pre);
  return item;
}

function erasureText(erasure) {
  if (erasure.status === "done") {
    const r = erasure.receipt;
    return `Erased: ${r.total_rows_removed} records removed on ${new Date(r.finished_at).toLocaleString()} (receipt ${r.erasure_id}).`;
  }
  if (erasure.status === "refused") return `Erasure refused: ${erasure.error}`;
  return `Erasure requested; trying again (${erasure.error || "waiting for the study's server"}).`;
}

async function render() {
  const s = await chrome.runtime.sendMessage({ kind: "status" });
  document.querySelector("h1").textContent = s.study_name;
  const rows = [
    ["You are", STATES[s.enrollment.status] + (s.enrollment.paused ? " (paused)" : "")],
    ["Waiting to send", String(s.queued)],
    ["Sent", String(s.sent)],
    ["Last problem", s.last_error || "none"],
    ["Your install id", s.install_id || "none yet"],
  ];
  if (s.retry_at > Date.now()) rows.push(["Next try", new Date(s.retry_at).toLocaleTimeString()]);
  const list = document.getElementById("status");
  list.replaceChildren();
  for (const [k, v] of rows) {
    list.append(Object.assign(document.createElement("dt"), { textContent: k }));
    list.append(Object.assign(document.createElement("dd"), { textContent: v }));
  }
  const enrolled = s.enrollment.status === "enrolled";
  const erasing = s.erasure && s.erasure.status !== "refused";
  document.getElementById("join").hidden = enrolled || s.enrollment.status === "left";
  document.getElementById("pause").hidden = !enrolled || s.enrollment.paused;
  document.getElementById("resume").hidden = !enrolled || !s.enrollment.paused;
  document.getElementById("send").hidden = !enrolled || s.queued === 0;
  document.getElementById("leave").hidden = !enrolled;
  document.getElementById("erase").hidden = Boolean(erasing) || !["enrolled", "left", "declined"].includes(s.enrollment.status);
  const erasure = document.getElementById("erasure");
  erasure.hidden = !s.erasure;
  if (s.erasure) erasure.textContent = erasureText(s.erasure);
  const sent = document.getElementById("sent-list");
  sent.replaceChildren(
    ...s.waiting.map((json) => entry(json, "waiting to be sent")),
    ...[...s.sent_log].reverse().map((e) => entry(e.json, e.status, e.at)),
  );
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
document.getElementById("erase").addEventListener("click", async () => {
  if (!confirm("Leave the study and erase everything this browser sent? This cannot be undone.")) return;
  document.getElementById("erase").disabled = true;
  await chrome.runtime.sendMessage({ kind: "leave_and_erase" });
  render();
});
document.getElementById("join").addEventListener("click", () => {
  chrome.tabs.create({ url: chrome.runtime.getURL("onboarding.html") });
});
render();
