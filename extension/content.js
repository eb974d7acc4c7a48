// Loaded at document_start on result pages. Hides the results column until the module
// has identified and rearranged it (so the person never sees the control order flash),
// with a short failsafe: whatever happens, the page is shown.
(() => {
  const style = document.createElement("style");
  style.textContent = "#center_col, #rso, #b_content, #b_results { visibility: hidden !important; }";
  (document.head || document.documentElement).appendChild(style);
  const show = () => style.remove();
  const failsafe = setTimeout(show, 2000);
  import(chrome.runtime.getURL("lib/content_main.js"))
    .then((module) => module.run())
    .catch((error) => console.warn("auditstream:", error && error.message))
    .finally(() => {
      clearTimeout(failsafe);
      show();
    });
})();
