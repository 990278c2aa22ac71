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
.scroll.wide { border:1px solid var(--line); border-radius:6px; padding:4px; scrollbar-width:thin;
               scrollbar-color:#aab3c2 #eef1f6; }  /* a figure wider than the page scrolls in its own box */
.scroll.wide::-webkit-scrollbar { height:10px; }  /* drawn, not an overlay that hides until scrolled */
.scroll.wide::-webkit-scrollbar-thumb { background:#aab3c2; border-radius:5px; }
.scroll.wide::-webkit-scrollbar-track { background:#eef1f6; }
.scroll-hint { color:var(--muted); font-size:12px; margin:2px 0 4px; }
.chip .chance { color:var(--muted); font-size:11px; margin-left:3px; }
table { border-collapse:collapse; font-size:13px; }
th, td { padding:4px 10px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
th { background:#f0f2f5; font-weight:600; white-space:nowrap; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
td.cid { font-family:ui-monospace,monospace; font-size:12px; white-space:nowrap; }
th.main-k { background:#dde6f3; }  /* the depth the pipeline serves */
p.headline .ci-text { margin-left:6px; }
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
tr.uninformative td { color:var(--muted); } tr.uninformative .badge { color:#fff; }
.sig-up { color:var(--ok); font-weight:700; } .sig-down { color:var(--bad); font-weight:700; }
.figs { display:flex; flex-wrap:wrap; gap:18px; align-items:flex-start; }
.switch-row { margin:2px 0 8px; font-size:13px; }
select, input[type=search] { font:inherit; padding:2px 6px; }
.controls { display:flex; flex-wrap:wrap; gap:14px; align-items:center; margin-bottom:10px;
            padding:8px 10px; background:#f3f5f8; border-radius:6px; }
#case-count { font-weight:600; }
details.case { border:1px solid var(--line); border-radius:6px; margin:6px 0; background:#fff;
               content-visibility:auto; contain-intrinsic-size:auto 36px; }  /* 20,000 cases lay out fast */
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
section h3 { margin:14px 0 6px; font-size:14.5px; }
p.warning { background:#fff4e0; border-left:4px solid var(--warn); padding:6px 10px; margin:4px 0 10px; }
table.confusion th { background:#f0f2f5; }
#case-more button { font:inherit; padding:1px 8px; cursor:pointer; }
[hidden] { display:none !important; }
"""

JS = r"""
(function () {
  "use strict";
  var slice = function (list) { return Array.prototype.slice.call(list); };

  // gzip + base64 data blocks (<script type="application/x-gzip-base64">), opened by the browser
  function inflate(el) {
    return Promise.resolve().then(function () {
      var bin = atob(el.textContent.trim()), bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
    });
  }
  var NO_INFLATE = "this browser cannot open the compressed part of the page (it needs DecompressionStream: " +
                   "Chrome or Edge 80+, Firefox 113+, Safari 16.4+)";

  // large figures are stored compressed: put each in place
  var figures = slice(document.querySelectorAll("script[data-fragment]")).map(function (el) {
    return inflate(el).then(function (html) { el.insertAdjacentHTML("afterend", html); el.remove(); },
      function () { el.insertAdjacentHTML("afterend", '<p class="note">This figure is not shown: ' + NO_INFLATE + ".</p>"); });
  });

  // a wide figure scrolls inside its own box (.scroll.wide): its hint is shown while it does not fit
  function markOverflow() {
    document.querySelectorAll(".scroll.wide").forEach(function (fig) {
      var over = fig.scrollWidth > fig.clientWidth + 1;
      fig.dataset.overflow = over ? "1" : "0";
      var hint = document.querySelector('.scroll-hint[data-for="' + fig.id + '"]');
      if (hint) hint.hidden = !over;
    });
  }
  window.addEventListener("resize", markOverflow);

  // metric switchers: <select class="switch" data-target="ID"> shows one [data-panel] of #ID
  document.querySelectorAll("select.switch").forEach(function (sel) {
    var fig = document.getElementById(sel.dataset.target);
    function apply() {
      fig.querySelectorAll("[data-panel]").forEach(function (p) { p.hidden = p.dataset.panel !== sel.value; });
      markOverflow();
    }
    sel.addEventListener("change", apply);
    apply();
  });

  // sortable tables: click a header; cells sort by data-v (numeric when possible) or text
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0], rows = slice(body.rows);
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

  // ---- the case drilldown (report/drilldown.py). The page embeds some cases as HTML; #case-data
  // holds every case, loaded on demand and rendered here as drilldown.case_html renders them.
  var box = document.getElementById("cases"), packed = document.getElementById("case-data");
  var show = document.getElementById("case-show"), onlyFail = document.getElementById("only-failures");
  var type = document.getElementById("case-type"), search = document.getElementById("case-search");
  var lost = document.getElementById("case-lost");  // the funnel's stage filter: "<k>:<stage>"
  var count = document.getElementById("case-count"), more = document.getElementById("case-more");
  var cases = box ? slice(box.querySelectorAll("details.case")) : [];
  var data = null, loading = null, haystacks = [], chunkText = [];

  var ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"};
  // svg.esc's unseen characters (control characters, bidirectional marks), named as it names them: <U+202E>
  var UNSEEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function codePoint(ch) { return "<U+" + ("000" + ch.charCodeAt(0).toString(16).toUpperCase()).slice(-4) + ">"; }
  function esc(v) {
    return String(v === null || v === undefined ? "" : v).replace(UNSEEN, codePoint).replace(/[&<>"']/g, function (ch) { return ESC[ch]; });
  }
  function fmt(v) { return v === null || v === undefined ? "\u2013" : Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3); }
  function cut(s, n, tail) { var a = Array.from(s); return a.length <= n ? s : a.slice(0, n).join("") + tail; }
  function short(s, n) { var a = Array.from(s); return a.length <= n ? s : a.slice(0, n - 1).join("") + "\u2026"; }
  // data.cases and data.chunks hold a list per field (drilldown.page_data); a case, as a row:
  // [id, type, question, docs, unanswerable, reference, answer, judge, kinds, values, hits, lost_at, lost], its answer
  // [text, answerer, abstained, error, cited], a hit [chunk, rank, score, relevant, grade];
  // a chunk: [doc_id, start, end, text]
  var CASE = ["id", "type", "question", "docs", "unanswerable", "reference", "answer", "judge", "kinds", "values", "hits",
              "lost_at", "lost"];
  var CHUNK = ["doc_id", "start", "end", "text"];
  function row(columns, fields, i) { return fields.map(function (f) { return columns[f][i]; }); }
  function caseAt(i) { return row(data.cases, CASE, i); }
  function chunkAt(i) { return row(data.chunks, CHUNK, i); }
  function caseSummary(c, i) {
    var badges = c[8].map(function (k) { return '<span class="badge fail">' + esc(data.kinds[k]) + "</span>"; }).join("")
                 || '<span class="badge ok">pass</span>';
    if (c[4]) badges += '<span class="badge info">unanswerable</span>';
    if (c[11]) badges += '<span class="badge warn">lost at ' + esc(c[11]) + "</span>";
    return '<details class="case" data-i="' + i + '" data-id="' + esc(c[0]) + '" data-type="' + esc(c[1]) +
      '" data-fail="' + (c[8].length ? 1 : 0) + '" data-kinds="' + esc(c[8].join(" ")) + '" data-lost="' + esc(c[12]) +
      '"><summary>' + badges +
      '<span class="qid">' + esc(c[0]) + '</span><span class="qtype">' + esc(c[1]) + "</span>" +
      esc(short(c[2], 160)) + '</summary><div class="case-body"></div></details>';
  }
  function caseBody(c) {
    var meta = "<dt>documents</dt><dd>" + esc(c[3]) + "</dd>" + (c[5] ? "<dt>reference</dt><dd>" + esc(c[5]) + "</dd>" : "");
    var a = c[6], out = "<h4>Question</h4><div>" + esc(c[2]) + '</div><dl class="meta">' + meta + "</dl>";
    out += '<h4>Answer <span class="ci-text">' + esc(a[1]) + (a[4].length ? " \u00b7 cites " + esc(a[4].join(", ")) : "") +
      "</span></h4>" + (a[2] ? '<span class="badge warn">abstained</span>' : "") +
      (a[3] ? '<span class="badge fail">error</span> ' + esc(a[3]) : "") + '<div class="answer">' + esc(a[0]) + "</div>";
    if (c[7]) {
      var ok = c[7][0];
      out += "<h4>Verdict</h4>" + (ok ? '<span class="badge ok">judge: correct</span>' : ok !== null
        ? '<span class="badge fail">judge: incorrect</span>' : "") + " " + esc(c[7][1]);
    }
    var values = c[9].map(function (v, j) { return v === null ? "" : "<span>" + esc(data.metrics[j]) + " " + fmt(v) + "</span>"; }).join("");
    if (values) out += '<h4>Metrics</h4><div class="mgrid">' + values + "</div>";
    if (!c[10].length) return out + '<h4>Retrieved chunks</h4><p class="note">none</p>';
    return out + "<h4>Retrieved chunks (" + c[10].length + ')</h4><ol class="hits">' + c[10].map(function (h) {
      var ch = chunkAt(h[0]), rel = h[3];
      return '<li class="' + (rel ? "rel" : "irr") + '"><div class="hit-head"><span class="mark">' +
        (rel ? "\u2713 relevant" : "\u2717") + "</span>#" + esc(h[1]) + " \u00b7 score " + fmt(h[2]) + " \u00b7 " + esc(ch[0]) +
        (ch[1] !== null ? " [" + esc(ch[1]) + "\u2013" + esc(ch[2]) + "]" : "") +
        (h[4] !== null && h[4] !== 0 && h[4] !== 1 ? " \u00b7 grade " + esc(h[4]) : "") + '</div><div class="chunk">' +
        esc(cut(ch[3], rel ? data.limits[0] : data.limits[1], " \u2026")) + "</div></li>";
    }).join("") + "</ol>";
  }
  function fillBody(el) {
    var body = el.querySelector(".case-body");
    if (data && body && !body.firstChild) body.innerHTML = caseBody(caseAt(+el.dataset.i));
  }
  function loadCases() {
    if (!packed) return Promise.resolve();
    if (!loading) {
      if (more) more.textContent = "Loading every case\u2026";
      loading = inflate(packed).then(function (text) {
        data = JSON.parse(text);
        var open = {};
        cases.forEach(function (el) { if (el.open) open[el.dataset.id] = true; });
        box.innerHTML = data.cases.id.map(function (_, i) { return caseSummary(caseAt(i), i); }).join("");
        cases = slice(box.querySelectorAll("details.case"));
        cases.forEach(function (el) { if (open[el.dataset.id]) { fillBody(el); el.open = true; } });
        box.dataset.loaded = String(cases.length);
        if (more) more.hidden = true;
      }, function () {
        if (more) more.textContent = "The other cases are not shown: " + NO_INFLATE + ".";
        packed = null;  // keep the embedded cases
      });
    }
    return loading;
  }
  function hasText(i, q) {  // search a loaded case: what its summary and body show
    if (haystacks[i] === undefined) {
      var c = caseAt(i), a = c[6];
      haystacks[i] = [c[0], c[1], c[2], c[3], c[5], a[0], a[1], a[3], c[7] ? c[7][1] : "",
        c[8].map(function (k) { return data.kinds[k]; }).join(" "), c[8].length ? "" : "pass",
        c[4] ? "unanswerable" : "", a[2] ? "abstained" : ""].join("\n").toLowerCase();
    }
    if (haystacks[i].indexOf(q) >= 0) return true;
    return data.cases.hits[i].some(function (h) {
      if (chunkText[h[0]] === undefined) chunkText[h[0]] = (data.chunks.doc_id[h[0]] + "\n" + data.chunks.text[h[0]]).toLowerCase();
      return chunkText[h[0]].indexOf(q) >= 0;
    });
  }
  function applyFilter() {
    if (!box) return;
    var s = show.value, t = type ? type.value : "", q = search ? search.value.trim().toLowerCase() : "";
    var l = lost ? lost.value : "";
    if (onlyFail.checked && s === "all") s = "failures";
    var n = 0;
    cases.forEach(function (c) {
      var ok = s === "all" || (s === "failures" ? c.dataset.fail === "1"
                                                : (" " + c.dataset.kinds + " ").indexOf(" " + s + " ") >= 0);
      if (ok && t && c.dataset.type !== t) ok = false;
      if (ok && l && (" " + c.dataset.lost + " ").indexOf(" " + l + " ") < 0) ok = false;
      if (ok && q) ok = data ? hasText(+c.dataset.i, q) : c.textContent.toLowerCase().indexOf(q) >= 0;
      c.hidden = !ok;
      if (ok) n++;
    });
    count.textContent = n + " of " + box.dataset.total + " cases shown";
    box.dataset.visible = String(n);
    box.dataset.filter = s;
  }
  function withEveryCase(then) {  // a filter or a search is over every case: load them first
    return function () { return loadCases().then(then); };
  }
  function applyHash(h) {
    if (h.indexOf("lost=") === 0) {  // #lost=<k>:<stage>: the cases a funnel bar counts
      show.value = "all"; onlyFail.checked = false; lost.value = h.slice(5); applyFilter();
      box.scrollIntoView();
      return;
    }
    if (h.indexOf("case=") === 0) {  // #case=<id>: open that case
      var id = h.slice(5);
      show.value = "all"; onlyFail.checked = false; if (lost) lost.value = ""; applyFilter();
      cases.forEach(function (c) {
        if (c.dataset.id === id) {
          fillBody(c);
          c.open = true;
          var r = c.getBoundingClientRect();
          if (r.top < 0 || r.bottom > window.innerHeight) c.scrollIntoView();
        }
      });
      return;
    }
    show.value = h;
    onlyFail.checked = h !== "all";
    if (lost) lost.value = "";
    applyFilter();
  }
  function fromHash() {
    if (!box) return Promise.resolve();
    var h = decodeURIComponent(location.hash.replace(/^#/, ""));
    var opts = slice(show.options).map(function (o) { return o.value; });
    var stage = lost && h.indexOf("lost=") === 0 && slice(lost.options).some(function (o) { return "lost=" + o.value === h; });
    if (h.indexOf("case=") !== 0 && opts.indexOf(h) < 0 && !stage) return Promise.resolve();  // not about cases
    var embedded = !stage && cases.some(function (c) { return "case=" + c.dataset.id === h; });
    return (embedded ? Promise.resolve() : loadCases()).then(function () { applyHash(h); });
  }
  var shown = Promise.resolve();
  if (box) {
    [show, type, lost].forEach(function (el) { if (el) el.addEventListener("change", withEveryCase(applyFilter)); });
    onlyFail.addEventListener("change", withEveryCase(function () {
      show.value = onlyFail.checked ? "failures" : "all"; applyFilter();
    }));
    if (search) search.addEventListener("input", withEveryCase(applyFilter));
    var button = document.getElementById("load-cases");
    if (button) button.addEventListener("click", withEveryCase(applyFilter));
    box.addEventListener("toggle", function (e) { if (e.target.open) fillBody(e.target); }, true);
    window.addEventListener("hashchange", fromHash);
    applyFilter();
    shown = fromHash();
  }

  // once every figure is in place: record that the browser laid the plots out (tests read these from the DOM)
  Promise.all(figures.concat([shown])).then(function () {
    markOverflow();
    var drawn = 0;
    document.querySelectorAll("svg.plot").forEach(function (svg) {
      var r = svg.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && svg.querySelectorAll("rect,circle,path").length > 0) {
        drawn++; svg.dataset.drawn = "1";
      }
    });
    document.body.dataset.plotsDrawn = String(drawn);
    document.body.dataset.js = "ready";
  });
})();
"""
