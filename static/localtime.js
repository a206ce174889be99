// Times on list pages (<time class="local">, written by the `when` filter) to the minute in the browser's
// own time zone, named; the title keeps the exact database-clock value in UTC.
(function () {
  "use strict";
  var two = function (n) { return String(n).padStart(2, "0"); };
  var zoneName = function (d) {
    var part = new Intl.DateTimeFormat("en-GB", { timeZoneName: "short" }).formatToParts(d)
      .filter(function (p) { return p.type === "timeZoneName"; })[0];
    return part ? part.value : "";
  };
  document.querySelectorAll("time.local[datetime]").forEach(function (el) {
    var d = new Date(el.getAttribute("datetime"));
    if (isNaN(d.getTime())) { return; }
    el.textContent = d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " +
      two(d.getHours()) + ":" + two(d.getMinutes()) + " " + zoneName(d);
  });
})();
