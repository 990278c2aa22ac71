"""Inline CSS and JS of report.html (no external resources)."""

CSS = r"""
:root { --fg:#1d2330; --muted:#5b6474; --line:#e2e5ea; --ok:#2e7d32; --bad:#c62828; --warn:#b26a00;
        --accent:#4e79a7; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--fg);
       background:#f6f7f9; }
header { background:#1d2330; color:#fff; padding:18px 28px 12px; }
header h1 { margin:0 0 4px; font-size:21px; }
header .sub { color:#c7cdd8; font-size:13px; }
nav { position:sticky; top:0; z-index:5; background:#fff; border-bottom:1px solid var(--line);
      padding:6px 28px; font-size:13px; }
nav a { margin-right:16px; color:var(--accent); text-decoration:none; }
main { padding:8px 28px 60px; max-width:1400px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:14px 18px; margin:16px 0; }
section h2 { margin:0 0 8px; font-size:17px; }
.note { color:var(--muted); font-size:12.5px; margin:4px 0 10px; }
.scroll { overflow-x:auto; }
table { border-collapse:collapse; font-size:13px; }
th, td { padding:4px 10px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
th { background:#f0f2f5; font-weight:600; white-space:nowrap; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
td.cid { font-family:ui-monospace,monospace; font-size:12px; white-space:nowrap; }
tr.group td { background:#fafbfc; font-weight:600; color:var(--muted); }
table.sortable th { cursor:pointer; }
table.sortable th:hover { background:#e4e8ee; }
.ci-text { color:var(--muted); font-size:11.5px; text-transform:none; letter-spacing:0; }
.meta { display:grid; grid-template-columns:max-content 1fr; gap:3px 14px; font-size:13px; }
.meta dt { color:var(--muted); }
.meta dd { margin:0; word-break:break-word; }
.chip { display:inline-block; background:#eef1f6; border-radius:10px; padding:0 8px; margin:1px 3px 1px 0;
        font-size:12px; }
.badge { display:inline-block; border-radius:4px; padding:0 6px; font-size:11.5px; font-weight:600;
         color:#fff; margin-right:4px; white-space:nowrap; }
.badge.ok { background:var(--ok); } .badge.fail { background:var(--bad); } .badge.warn { background:var(--warn); }
.badge.info { background:#6b7587; }
.sig-up { color:var(--ok); font-weight:700; } .sig-down { color:var(--bad); font-weight:700; }
.figs { display:flex; flex-wrap:wrap; gap:18px; align-items:flex-start; }
.switch-row { margin:2px 0 8px; font-size:13px; }
select, input[type=search] { font:inherit; padding:2px 6px; }
.controls { display:flex; flex-wrap:wrap; gap:14px; align-items:center; margin-bottom:10px;
            padding:8px 10px; background:#f3f5f8; border-radius:6px; }
#case-count { font-weight:600; }
details.case { border:1px solid var(--line); border-radius:6px; margin:6px 0; background:#fff; }
details.case[data-fail="1"] { border-left:4px solid var(--bad); }
details.case[data-fail="0"] { border-left:4px solid var(--ok); }
details.case > summary { cursor:pointer; padding:6px 10px; list-style-position:inside; }
details.case > summary .qid { font-family:ui-monospace,monospace; color:var(--muted); margin-right:6px; }
details.case > summary .qtype { color:var(--muted); margin-right:6px; font-size:12px; }
.case-body { padding:4px 14px 12px; }
.case-body h4 { margin:10px 0 4px; font-size:13px; color:var(--muted); text-transform:uppercase;
                letter-spacing:.03em; }
.answer { background:#f7f9fc; border-radius:4px; padding:6px 10px; white-space:pre-wrap; }
ol.hits { list-style:none; padding:0; margin:0; }
ol.hits li { border-left:4px solid #ccc; padding:4px 10px; margin:4px 0; background:#fbfbfc; }
ol.hits li.rel { border-left-color:var(--ok); background:#f1f8f1; }
ol.hits .hit-head { font-size:12px; color:var(--muted); }
ol.hits .mark { font-weight:700; margin-right:6px; }
ol.hits li.rel .mark { color:var(--ok); } ol.hits li.irr .mark { color:#999; }
.chunk { white-space:pre-wrap; font-size:12.5px; margin-top:2px; }
.mgrid { display:flex; flex-wrap:wrap; gap:4px; }
.mgrid span { background:#eef1f6; border-radius:4px; padding:0 6px; font-size:12px;
              font-variant-numeric:tabular-nums; }
[hidden] { display:none !important; }
"""

JS = r"""
(function () {
  "use strict";
  // metric switchers: <select class="switch" data-target="ID"> shows one [data-panel] of #ID
  document.querySelectorAll("select.switch").forEach(function (sel) {
    var fig = document.getElementById(sel.dataset.target);
    function apply() {
      fig.querySelectorAll("[data-panel]").forEach(function (p) { p.hidden = p.dataset.panel !== sel.value; });
    }
    sel.addEventListener("change", apply);
    apply();
  });

  // sortable tables: click a header; cells sort by data-v (numeric when possible) or text
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var dir = th.dataset.dir === "asc" ? "desc" : "asc";
        table.querySelectorAll("thead th").forEach(function (h) { delete h.dataset.dir; });
        th.dataset.dir = dir;
        function key(r) {
          var c = r.cells[col]; var v = c ? (c.dataset.v !== undefined ? c.dataset.v : c.textContent) : "";
          var n = parseFloat(v); return isNaN(n) ? v : n;
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b), r = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0)
                                                                   : (typeof x === "number" ? -1 : 1);
          return dir === "asc" ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  // case drilldown filters; the URL hash (#failures, #retrieval-miss, ...) picks the filter
  var cases = Array.prototype.slice.call(document.querySelectorAll("details.case"));
  var show = document.getElementById("case-show"), onlyFail = document.getElementById("only-failures");
  var type = document.getElementById("case-type"), search = document.getElementById("case-search");
  var count = document.getElementById("case-count"), box = document.getElementById("cases");
  function applyFilter() {
    if (!box) return;
    var s = show.value, t = type ? type.value : "", q = search ? search.value.trim().toLowerCase() : "";
    if (onlyFail.checked && s === "all") s = "failures";
    var n = 0;
    cases.forEach(function (c) {
      var ok = s === "all" || (s === "failures" ? c.dataset.fail === "1"
                                                : (" " + c.dataset.kinds + " ").indexOf(" " + s + " ") >= 0);
      if (ok && t && c.dataset.type !== t) ok = false;
      if (ok && q && c.textContent.toLowerCase().indexOf(q) < 0) ok = false;
      c.hidden = !ok;
      if (ok) n++;
    });
    count.textContent = n + " of " + cases.length + " cases shown";
    box.dataset.visible = String(n);
    box.dataset.filter = s;
  }
  function fromHash() {
    if (!box) return;
    var h = decodeURIComponent(location.hash.replace(/^#/, ""));
    if (h.indexOf("case=") === 0) {  // #case=<id>: open that case
      var id = h.slice(5);
      show.value = "all"; onlyFail.checked = false; applyFilter();
      cases.forEach(function (c) {
        if (c.dataset.id === id) {
          c.open = true;
          var r = c.getBoundingClientRect();
          if (r.top < 0 || r.bottom > window.innerHeight) c.scrollIntoView();
        }
      });
      return;
    }
    var opts = Array.prototype.map.call(show.options, function (o) { return o.value; });
    if (opts.indexOf(h) < 0) return;
    show.value = h;
    onlyFail.checked = h !== "all";
    applyFilter();
  }
  if (box) {
    [show, type].forEach(function (el) { if (el) el.addEventListener("change", applyFilter); });
    onlyFail.addEventListener("change", function () {
      show.value = onlyFail.checked ? "failures" : "all"; applyFilter();
    });
    if (search) search.addEventListener("input", applyFilter);
    window.addEventListener("hashchange", fromHash);
    applyFilter();
    fromHash();
  }

  // record that the browser laid the plots out (tests read these from the DOM)
  var drawn = 0, plots = document.querySelectorAll("svg.plot");
  plots.forEach(function (svg) {
    var r = svg.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && svg.querySelectorAll("rect,circle,path").length > 0) {
      drawn++; svg.dataset.drawn = "1";
    }
  });
  document.body.dataset.plotsDrawn = String(drawn);
  document.body.dataset.js = "ready";
})();
"""
