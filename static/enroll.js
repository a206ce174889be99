// The progress bar of a background enrollment: poll the status endpoint, reload when the job is done.
(function () {
  "use strict";
  var bar = document.getElementById("progress");
  var text = document.getElementById("progress-text");
  if (!bar || !bar.dataset.statusUrl) { return; }
  function poll() {
    fetch(bar.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        bar.max = s.total || 1;
        bar.value = s.done;
        if (text) { text.textContent = s.done + " of " + s.total + " rows enrolled so far" + (s.status === "queued" ? " — waiting for a worker." : "."); }
        if (s.finished || s.failed) { window.location.reload(); } else { window.setTimeout(poll, 1000); }
      })
      .catch(function () { window.setTimeout(poll, 3000); });
  }
  window.setTimeout(poll, 500);
})();
