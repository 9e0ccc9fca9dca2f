/* atlas-files site: what a static page cannot know at build time is computed here, in
 * the reader's browser, from the reader's clock: lease countdowns, ages and staleness.
 * It also filters the decisions table. Every value read here comes from data-* attributes
 * that the generator escaped; nothing is ever written back as HTML (textContent only). */
(function () {
  "use strict";

  function span(seconds) {
    var s = Math.max(0, Math.floor(seconds));
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    var m = Math.floor((s % 3600) / 60), r = s % 60;
    function two(n) { return (n < 10 ? "0" : "") + n; }
    if (d > 0) { return d + "d " + h + "h"; }
    if (h > 0) { return h + "h " + two(m) + "m " + two(r) + "s"; }
    if (m > 0) { return m + "m " + two(r) + "s"; }
    return r + "s";
  }

  function age(seconds) {
    var s = Math.abs(seconds), future = seconds < 0, units = [
      ["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];
    if (s < 10) { return "just now"; }
    for (var i = 0; i < units.length; i++) {
      if (s >= units[i][1]) {
        var n = Math.floor(s / units[i][1]);
        var words = n + " " + units[i][0] + (n === 1 ? "" : "s");
        return future ? "in " + words : words + " ago";
      }
    }
    return "just now";
  }

  function leases(now) {
    var rows = document.querySelectorAll("[data-atlas-expires]");
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i], t = Date.parse(row.getAttribute("data-atlas-expires"));
      if (isNaN(t)) { continue; }
      var left = (t - now) / 1000;
      var countdown = row.querySelector(".atlas-countdown");
      var state = row.querySelector(".atlas-state");
      if (left > 0) {
        if (countdown) { countdown.textContent = "expires in " + span(left); }
        row.classList.remove("atlas-expired");
      } else {
        if (countdown) { countdown.textContent = "expired " + span(-left) + " ago"; }
        if (state) {
          state.textContent = row.getAttribute("data-atlas-expired-state") || "free (expired)";
        }
        row.classList.add("atlas-expired");
      }
    }
  }

  function ages(now) {
    /* Pages carry times, never ages: an age written at the build would be wrong a minute
     * later, and would make every page differ from the last build's. */
    var els = document.querySelectorAll("time[data-atlas-age]");
    for (var i = 0; i < els.length; i++) {
      var t = Date.parse(els[i].getAttribute("datetime"));
      if (isNaN(t)) { continue; }
      var words = age((now - t) / 1000);
      els[i].textContent = els[i].getAttribute("data-atlas-age") === "aside"
        ? " (" + words + ")" : words;
    }
    var rows = document.querySelectorAll("[data-atlas-observed]");
    for (var j = 0; j < rows.length; j++) {
      var row = rows[j], seen = Date.parse(row.getAttribute("data-atlas-observed"));
      var limit = parseFloat(row.getAttribute("data-atlas-stale-after"));
      var badge = row.querySelector(".atlas-freshness");
      if (isNaN(seen) || isNaN(limit) || !badge) { continue; }
      var stale = (now - seen) / 1000 > limit;
      badge.textContent = stale ? "stale" : "fresh";
      row.classList.toggle("atlas-stale", stale);
    }
  }

  /* The build's time comes from assets/atlas-build.js, the one file that changes with
   * every build, so that the pages themselves stay the same between builds. */
  function built() {
    var info = window.atlasBuild, el = document.querySelector(".atlas-built-at");
    if (!info || !el) { return; }
    var t = Date.parse(info.builtAt);
    el.textContent = "on " + info.builtAtText +
      (isNaN(t) ? "" : " (" + age((Date.now() - t) / 1000) + ")");
  }

  function tick() {
    var now = Date.now();
    built();
    leases(now);
    ages(now);
  }

  function filters() {
    var boxes = document.querySelectorAll("[data-atlas-filter-for]");
    for (var i = 0; i < boxes.length; i++) { wire(boxes[i]); }
  }

  function wire(box) {
    var table = document.getElementById(box.getAttribute("data-atlas-filter-for"));
    if (!table) { return; }
    var controls = box.querySelectorAll("[data-atlas-key]");
    var count = box.querySelector(".atlas-filter-count");
    var rows = table.querySelectorAll("tbody tr");

    function apply() {
      var shown = 0;
      for (var r = 0; r < rows.length; r++) {
        var ok = true;
        for (var c = 0; c < controls.length; c++) {
          var key = controls[c].getAttribute("data-atlas-key");
          var want = controls[c].value.trim().toLowerCase();
          var have = (rows[r].getAttribute("data-" + key) || "").toLowerCase();
          if (!want) { continue; }
          if (controls[c].tagName === "SELECT" ? have !== want : have.indexOf(want) < 0) {
            ok = false;
          }
        }
        rows[r].hidden = !ok;
        if (ok) { shown++; }
      }
      if (count) { count.textContent = shown + " of " + rows.length + " shown"; }
    }

    function reveal() {
      /* A link to one row (a correction pointing at its decision) must show that row. */
      var id = location.hash.slice(1);
      try { id = decodeURIComponent(id); } catch (e) { /* a malformed hash: use it as is */ }
      var target = id && document.getElementById(id);
      if (target && table.contains(target) && target.hidden) {
        for (var c = 0; c < controls.length; c++) { controls[c].value = ""; }
        apply();
        target.scrollIntoView();
      }
    }

    for (var c = 0; c < controls.length; c++) {
      controls[c].addEventListener("input", apply);
      controls[c].addEventListener("change", apply);
    }
    window.addEventListener("hashchange", reveal);
    apply();
    reveal();
  }

  /* Opened from a file, the engines cannot load their search index (a browser refuses
   * file:// fetches and workers), and their search box is hidden or dead: say how to get
   * search instead of leaving the reader to wonder where it went. */
  function searchNote() {
    if (location.protocol !== "file:") { return; }
    var inner = document.querySelector(".md-content__inner") ||
      document.querySelector(".md-content");
    if (!inner || inner.querySelector(".atlas-nosearch")) { return; }
    var note = document.createElement("p");
    note.className = "atlas-nosearch";
    note.textContent = "Search works when the site is served, not opened as a file: run " +
      "`atlas site serve` beside the record (or `python3 -m http.server` in this site " +
      "folder) and open the address it prints.";
    inner.insertBefore(note, inner.firstChild);
  }

  function start() {
    searchNote();
    tick();
    window.setInterval(tick, 1000);
    filters();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
