// countersign: small progressive touches. Every page works without this file
// (and without htmx); nothing here is required.
(function () {
  "use strict";

  // Forms marked data-confirm ask first (cancel a run, disable a user).
  document.addEventListener("submit", function (e) {
    var form = e.target;
    var msg = form instanceof HTMLFormElement && form.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
      e.stopPropagation();
    }
  }, true);

  // Ctrl+Enter or Cmd+Enter in a textarea submits its form, unless the form
  // has a choice of buttons (approve or deny): that choice stays a click.
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && t instanceof HTMLTextAreaElement && t.form &&
        !t.form.querySelector("button[name]")) {
      e.preventDefault();
      t.form.requestSubmit();
    }
  });

  // Polling appends steps to #steps out of band. Drop any step already on the
  // page, so a poll that overlaps an earlier one never shows a step twice; and
  // if the reader was at the bottom, keep them there.
  var follow = false;
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var d = e.detail;
    if (!d || !d.target || d.target.id !== "steps" || !d.fragment) return;
    Array.prototype.slice.call(d.fragment.children).forEach(function (el) {
      if (el.id && document.getElementById(el.id)) el.remove();
    });
    follow = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (follow) {
      follow = false;
      window.scrollTo({ top: document.documentElement.scrollHeight });
    }
  });
})();
