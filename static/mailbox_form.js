// The mailbox form: the fields of one way of logging in (data-login="password" | "oauth2") are hidden while the
// other is chosen, those of an SMTP login (data-smtp-login) while "No login to send" is ticked, and a fieldset
// none of whose fields shows is hidden with them. Without this script every field shows and the form works the
// same: the server ignores the fields of the way not chosen.
(function () {
  "use strict";
  var form = document.getElementById("mailbox-form");
  var auth = form && form.elements.namedItem("auth");
  if (!auth) { return; }
  function show() {
    var noLogin = form.elements.namedItem("smtp_no_login");
    form.querySelectorAll(".field[data-login], .field[data-smtp-login]").forEach(function (field) {
      field.hidden = (field.dataset.login !== undefined && field.dataset.login !== auth.value)
        || (field.dataset.smtpLogin !== undefined && noLogin !== null && noLogin.checked);
    });
    form.querySelectorAll("fieldset").forEach(function (set) {
      var fields = set.querySelectorAll(":scope > .field");
      set.hidden = fields.length > 0 && Array.prototype.every.call(fields, function (f) { return f.hidden; });
    });
  }
  auth.addEventListener("change", show);
  if (form.elements.namedItem("smtp_no_login")) { form.elements.namedItem("smtp_no_login").addEventListener("change", show); }
  show();
})();
