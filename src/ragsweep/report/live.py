"""A watched run's report.html follows the watch while `ragsweep watch --serve` serves it.

The page carries a small script (only a watch's pages do: `ragsweep eval`'s report.html is unchanged). Loaded
over http(s) from a server whose ``live.json`` answers with a generation, it polls that about once a second;
when the generation moves on, it fetches the page again and puts the new header, navigation and sections in
place of the old ones (no reload: the scroll position, the open cases and the chosen metrics stay), then runs
the page's own script over them. Opened as a file, or where ``live.json`` does not answer, it does nothing and
the page is the static report.
"""

from __future__ import annotations

from pathlib import Path

from ragsweep.report.history import read_history

LIVE_JSON = "live.json"
LIVE_CSP = "; connect-src 'self'"  # the live page fetches live.json and itself from where it was served

LIVE_JS = r"""
(function () {
  "use strict";
  var me = document.currentScript, shown = +me.dataset.generation, updated = new Date(), badge = null;
  var failures = 0, added = [];
  if (!/^https?:$/.test(location.protocol) || !window.fetch || !window.DOMParser) return;
  function hhmmss(d) { return d.toTimeString().slice(0, 8); }
  function mark(state) {  // "live", "stopped" (no server), "waiting" (no evaluation of the folder as it stands)
    if (!badge) {
      badge = document.createElement("div");
      badge.id = "live-badge";
      badge.setAttribute("role", "status");
      badge.style.cssText = "position:fixed;top:8px;right:8px;z-index:10;padding:2px 8px;border-radius:10px;" +
        "font:12px system-ui,sans-serif;color:#fff;background:#2e7d32;opacity:.9";
      document.body.appendChild(badge);
    }
    badge.dataset.generation = String(shown);
    badge.dataset.state = state;
    badge.style.background = {live: "#2e7d32", stopped: "#757575", waiting: "#e65100"}[state];
    badge.textContent = {live: "live", stopped: "not live (the watch stopped)",
      waiting: "not current (the documents folder is gone, or its evaluation failed)"}[state] +
      " \u00b7 evaluation " + shown + " \u00b7 updated " + hhmmss(updated);
    document.documentElement.dataset.liveGeneration = String(shown);
  }
  function rerun(code) {  // the page's own script over the new content; its window listeners replace the last ones
    added.forEach(function (a) { window.removeEventListener(a[0], a[1], a[2]); });
    added = [];
    var add = window.addEventListener, s = document.createElement("script");
    window.addEventListener = function (type, fn, opts) { added.push([type, fn, opts]); add.call(window, type, fn, opts); };
    s.textContent = code;
    try { document.body.appendChild(s); } finally { window.addEventListener = add; s.remove(); }
  }
  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html"), x = window.scrollX, y = window.scrollY;
    var next = doc.getElementById("live");
    if (!next || !doc.querySelector("body > main")) return;
    var open = {}, chosen = {};
    document.querySelectorAll("details.case[open]").forEach(function (d) { open[d.dataset.id] = true; });
    document.querySelectorAll("select.switch").forEach(function (s) { chosen[s.dataset.target] = s.value; });
    ["header", "nav", "main"].forEach(function (tag) {
      var old = document.querySelector("body > " + tag), now = doc.querySelector("body > " + tag);
      if (old && now) old.replaceWith(document.adoptNode(now));
    });
    document.title = doc.title;
    document.querySelectorAll("select.switch").forEach(function (s) {
      if (chosen[s.dataset.target] !== undefined && s.querySelector('option[value="' + CSS.escape(chosen[s.dataset.target]) + '"]'))
        s.value = chosen[s.dataset.target];
    });
    var code = doc.querySelector("body > script:not([id]):not([type])");
    if (code) rerun(code.textContent);
    document.querySelectorAll("details.case").forEach(function (d) { if (open[d.dataset.id]) d.open = true; });
    window.scrollTo(x, y);
    shown = +next.dataset.generation;
    updated = new Date();
  }
  function get(url, as) {
    return fetch(url, {cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error(url + ": " + r.status);
      return as === "json" ? r.json() : r.text();
    });
  }
  function poll() {
    get("live.json", "json").then(function (state) {
      if (state.generation === null && badge) { failures = 0; return "waiting"; }  // the watch is on, no current
      if (typeof state.generation !== "number") throw new Error("live.json: no generation");
      failures = 0;
      if (state.generation === shown) return "live";
      return get(location.pathname, "text").then(swap).then(function () { return "live"; });
    }).then(function (now) {
      mark(now);
      setTimeout(poll, 1000);
    }, function () {
      failures += 1;
      if (!badge) return;  // never live here (a file, or a server without live.json): the static page
      if (failures > 1) mark("stopped");
      setTimeout(poll, failures < 5 ? 1000 : 5000);
    });
  }
  poll();
})();
"""


def live_script(run_dir: Path) -> str:
    """The script, with the generation of ``run_dir`` (its line in the watch folder's history)."""
    generation = next((u.generation for u in reversed(read_history(run_dir.parent)) if u.run == run_dir.name), 0)
    return f'<script id="live" data-generation="{generation}">{LIVE_JS}</script>'
