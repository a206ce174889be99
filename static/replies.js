// Keyboard shortcuts of the Replies pages (listed on each page). Never while typing in a field.
(function () {
  "use strict";
  function typing(e) {
    var t = e.target;
    return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
  }
  function go(id) { var a = document.getElementById(id); if (a) { window.location.href = a.href; } }
  var cards = Array.prototype.slice.call(document.querySelectorAll("#reply-cards .reply-open"));
  var at = -1;
  function select(i) {
    if (!cards.length) { return; }
    at = Math.max(0, Math.min(cards.length - 1, i));
    cards[at].focus();
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e)) { return; }
    var k = e.key;
    if (cards.length) {  // the list
      if (k === "j") { select(at + 1); } else if (k === "k") { select(at - 1); } else { return; }
      e.preventDefault();
      return;
    }
    if (k === "j") { go("nav-older"); } else if (k === "k") { go("nav-newer"); }
    else if (k === "r") {
      var box = document.getElementById("answer-body");
      if (!box) { return; }
      box.focus();
      box.setSelectionRange(0, 0);
    } else if (k === "e") {
      var form = document.getElementById("handled-form");
      if (!form) { return; }
      form.requestSubmit();
    } else if (/^[1-7]$/.test(k)) {
      var button = document.querySelector('#category-form button[data-key="' + k + '"]');
      if (!button) { return; }
      button.form.requestSubmit(button);
    } else { return; }
    e.preventDefault();
  });
})();
