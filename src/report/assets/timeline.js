// The interactive part of a settle HTML report: actor swimlanes and object rows drawn on one canvas,
// aggregated to one mark per pixel column per row so that a run of many thousand steps draws in one pass.
// Plain browser JavaScript, inlined into the page; the page must work offline, so nothing is fetched.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("settle-data").textContent);
  var records = data.records;
  var n = records.length;
  var epoch = data.epochMs;

  var COLORS = {
    request: "#2563eb", response: "#0d9488", watch: "#9333ea", timer: "#9ca3af", external: "#ea580c",
    fault: "#dc2626", start: "#16a34a", gc: "#92400e", log: "#9ca3af",
  };
  var PRIORITY = { log: 0, timer: 1, response: 2, request: 3, gc: 3, watch: 4, external: 5, start: 8, fault: 9 };
  var LABEL_W = 190, AXIS_H = 34, LANE_H = 28, REV_H = 44, GAP_H = 18, OBJ_H = 18, PAD_R = 12;
  var OBJ_ROWS_MAX = 400;

  // ---- derived model -------------------------------------------------------------------------------
  var laneNames = [];
  var laneIndex = {};
  records.forEach(function (r) { if (!(r.actor in laneIndex)) { laneIndex[r.actor] = -1; laneNames.push(r.actor); } });
  // The simulator's own lanes go last: people look for their actors first.
  laneNames.sort(function (a, b) { return rank(a) - rank(b); });
  function rank(name) { return name === "gc" ? 2 : name === "sim" ? 3 : 1; }
  laneNames.forEach(function (name, i) { laneIndex[name] = i; });
  var laneRecords = laneNames.map(function () { return []; });
  records.forEach(function (r, i) { laneRecords[laneIndex[r.actor]].push(i); });

  var changesAt = {};
  data.changes.forEach(function (entry) { changesAt[entry[0]] = entry[1]; });
  var objKeys = [];
  var objIndex = {};
  var objMarks = [];
  var versionsByKey = {};
  data.initial.forEach(function (v) { versionsByKey[data.versions[v].key] = [[-1, v]]; });
  data.changes.forEach(function (entry) {
    entry[1].forEach(function (c) {
      var key = c[0];
      if (!(key in objIndex)) { objIndex[key] = objKeys.length; objKeys.push(key); objMarks.push([]); }
      objMarks[objIndex[key]].push({ i: entry[0], before: c[1], after: c[2] });
      (versionsByKey[key] = versionsByKey[key] || []).push([entry[0], c[2]]);
    });
  });
  var objShown = Math.min(objKeys.length, OBJ_ROWS_MAX);

  var minRev = Infinity, maxRev = -Infinity;
  records.forEach(function (r) { minRev = Math.min(minRev, r.revisionBefore, r.revisionAfter); maxRev = Math.max(maxRev, r.revisionAfter); });

  // What a record is, from its typed facts (the model carries them; labels and results are for people).
  function faultKind(r) { return r.kind === "fault" && r.fault ? r.fault.kind : null; }
  function isCrash(r) { return faultKind(r) === "crash"; }
  /** A wall-clock offset in words, as the text report says it: "replica-b's clock 12 s ahead". */
  function clockWords(actor, offsetMs) {
    if (offsetMs === 0) return actor + "'s clock true";
    return actor + "'s clock " + Math.abs(offsetMs) / 1000 + " s " + (offsetMs > 0 ? "ahead" : "behind");
  }
  function isRestart(r) { return r.kind === "start" && r.restart === true; }
  /** The mark a record gets: its kind, but a crash is a cross and a restart an upward triangle. */
  function markOf(r) {
    if (isCrash(r)) return "crash";
    if (isRestart(r)) return "restart";
    return r.kind;
  }

  // Each actor's wall-clock offset at the end of the run, where a clock fault left it off: its lane says so.
  var clockOffsets = {};
  records.forEach(function (r) { if (r.fault && r.fault.applied && r.fault.clockOffsetMs !== undefined) clockOffsets[r.fault.target] = r.fault.clockOffsetMs; });
  function laneLabel(l) {
    var offset = clockOffsets[laneNames[l]];
    if (!offset) return laneNames[l];
    return laneNames[l] + " (clock " + (offset > 0 ? "+" : "-") + Math.abs(offset) / 1000 + " s)";
  }
  // Periods an actor was down (crash .. restart) or paused, as record index ranges.
  var downs = [];
  records.forEach(function (r, i) {
    if (r.kind !== "fault" || !r.fault || !r.fault.applied) return;
    if (isCrash(r)) {
      var end = n - 1;
      for (var j = i + 1; j < n; j++) if (records[j].actor === r.actor && records[j].kind === "start") { end = j; break; }
      downs.push({ lane: laneIndex[r.actor], from: i, to: end, what: "down" });
    } else if (faultKind(r) === "pause") {
      var until = r.timeMs + (r.fault.pauseMs || 0);
      var stop = n - 1;
      for (var k = i + 1; k < n; k++) if (records[k].timeMs >= until) { stop = k; break; }
      downs.push({ lane: laneIndex[r.actor], from: i, to: stop, what: "paused" });
    }
  });

  // ---- positions and view --------------------------------------------------------------------------
  var mode = "steps";
  var pos = new Float64Array(n);
  var full = { lo: 0, hi: 1 };
  var view = { lo: 0, hi: 1 };
  function setMode(next) {
    mode = next;
    for (var i = 0; i < n; i++) pos[i] = mode === "steps" ? i : records[i].timeMs - epoch;
    var last = n > 0 ? pos[n - 1] : 1;
    full = mode === "steps" ? { lo: -0.5, hi: Math.max(n - 0.5, 1) } : { lo: -Math.max(last, 1000) * 0.01, hi: Math.max(last, 1000) * 1.01 };
    view = { lo: full.lo, hi: full.hi };
    document.getElementById("mode-steps").setAttribute("aria-pressed", String(mode === "steps"));
    document.getElementById("mode-time").setAttribute("aria-pressed", String(mode === "time"));
  }

  var canvas = document.getElementById("lanes");
  var wrap = document.getElementById("canvas-wrap");
  var hover = document.getElementById("hover");
  var ctx = canvas.getContext("2d");
  var plotW = 100;
  var selected = -1;
  var drawn = 0;

  function xPx(p) { return LABEL_W + ((p - view.lo) / (view.hi - view.lo)) * plotW; }
  function pxToPos(x) { return view.lo + ((x - LABEL_W) / plotW) * (view.hi - view.lo); }
  function laneTop(l) { return AXIS_H + l * LANE_H; }
  function revTop() { return AXIS_H + laneNames.length * LANE_H; }
  function objTop(o) { return revTop() + REV_H + GAP_H + o * OBJ_H; }
  function totalHeight() { return objTop(objShown) + (objKeys.length > objShown ? OBJ_H : 0) + 8; }

  /** The first index in `list` (record indexes sorted by position) whose position is >= p. */
  function lowerBound(list, p, at) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (at(list[mid]) < p) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function posOf(i) { return pos[i]; }
  function priority(r) {
    var p = PRIORITY[r.kind] || 0;
    if (r.kind === "request" && r.write && r.revisionAfter !== r.revisionBefore) p = 7;
    if (r.kind === "response" && r.result !== "ok") p = 6;
    return p;
  }

  // ---- drawing -------------------------------------------------------------------------------------
  function draw() {
    var width = Math.max(wrap.clientWidth, 400);
    var height = totalHeight();
    var dpr = window.devicePixelRatio || 1;
    plotW = width - LABEL_W - PAD_R;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    drawn = 0;
    drawRows(width);
    drawAxis();
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, 0, plotW, height);
    ctx.clip();
    drawDowns();
    for (var l = 0; l < laneNames.length; l++) drawLane(l);
    drawRevisions();
    for (var o = 0; o < objShown; o++) drawObject(o);
    drawSelection(height);
    ctx.restore();
  }

  function drawRows(width) {
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (var l = 0; l < laneNames.length; l++) {
      ctx.fillStyle = l % 2 ? "#f9fafb" : "#ffffff";
      ctx.fillRect(0, laneTop(l), width, LANE_H);
      ctx.fillStyle = "#111827";
      ctx.fillText(clip(laneLabel(l), LABEL_W - 12), 8, laneTop(l) + LANE_H / 2);
    }
    ctx.fillStyle = "#f3f4f6";
    ctx.fillRect(0, revTop(), width, REV_H);
    ctx.fillStyle = "#6b7280";
    ctx.fillText("store revision", 8, revTop() + REV_H / 2 - 7);
    ctx.fillText(minRev + " .. " + maxRev, 8, revTop() + REV_H / 2 + 8);
    ctx.fillStyle = "#6b7280";
    ctx.fillText("objects (" + objKeys.length + " changed)", 8, revTop() + REV_H + GAP_H / 2);
    ctx.font = "11px ui-monospace, monospace";
    for (var o = 0; o < objShown; o++) {
      ctx.fillStyle = o % 2 ? "#f9fafb" : "#ffffff";
      ctx.fillRect(0, objTop(o), width, OBJ_H);
      ctx.fillStyle = "#374151";
      ctx.fillText(clip(objKeys[o], LABEL_W - 12), 8, objTop(o) + OBJ_H / 2);
    }
    if (objKeys.length > objShown) {
      ctx.fillStyle = "#6b7280";
      ctx.fillText((objKeys.length - objShown) + " more objects not drawn", 8, objTop(objShown) + OBJ_H / 2);
    }
    ctx.strokeStyle = "#d1d5db";
    ctx.beginPath();
    ctx.moveTo(LABEL_W - 0.5, AXIS_H);
    ctx.lineTo(LABEL_W - 0.5, totalHeight());
    ctx.stroke();
  }

  function clip(text, widthPx) {
    if (ctx.measureText(text).width <= widthPx) return text;
    var s = text;
    while (s.length > 1 && ctx.measureText("…" + s).width > widthPx) s = s.slice(1);
    return "…" + s;
  }

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
    var f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  function seconds(ms) { return "+" + (ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 3) + "s"; }

  function drawAxis() {
    var step = niceStep(((view.hi - view.lo) * 110) / plotW);
    if (mode === "steps") step = Math.max(1, Math.round(step));
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "top";
    ctx.fillStyle = "#6b7280";
    ctx.fillText(mode === "steps" ? "step / virtual time" : "virtual time", 8, 4);
    for (var v = Math.ceil(view.lo / step) * step; v <= view.hi; v += step) {
      var x = xPx(v);
      if (x < LABEL_W) continue;
      ctx.strokeStyle = "#e5e7eb";
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, AXIS_H - 6);
      ctx.lineTo(Math.round(x) + 0.5, revTop() + REV_H);
      ctx.stroke();
      ctx.fillStyle = "#374151";
      if (mode === "steps") {
        var r = records[Math.min(n - 1, Math.max(0, Math.round(v)))];
        if (!r) continue;
        ctx.fillText("#" + r.step, x + 2, 4);
        ctx.fillStyle = "#6b7280";
        ctx.fillText(seconds(r.timeMs - epoch), x + 2, 17);
      } else {
        ctx.fillText(seconds(v), x + 2, 10);
      }
    }
  }

  function drawDowns() {
    downs.forEach(function (d) {
      var x0 = xPx(pos[d.from]), x1 = Math.max(xPx(pos[d.to]), x0 + 2);
      var top = laneTop(d.lane);
      ctx.fillStyle = d.what === "down" ? "rgba(220,38,38,0.12)" : "rgba(234,88,12,0.12)";
      ctx.fillRect(x0, top + 2, x1 - x0, LANE_H - 4);
      ctx.strokeStyle = d.what === "down" ? "rgba(220,38,38,0.5)" : "rgba(234,88,12,0.5)";
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(x0, top + LANE_H / 2);
      ctx.lineTo(x1, top + LANE_H / 2);
      ctx.stroke();
      ctx.setLineDash([]);
      if (x1 - x0 > 40) {
        ctx.fillStyle = "#991b1b";
        ctx.font = "10px system-ui, sans-serif";
        ctx.textBaseline = "top";
        ctx.fillText(d.what, x0 + 10, top + 2);
      }
    });
  }

  function drawLane(l) {
    var list = laneRecords[l];
    var cy = laneTop(l) + LANE_H / 2;
    var start = lowerBound(list, view.lo, posOf);
    var best = -1, bestPx = -1e9;
    for (var k = start; k < list.length; k++) {
      var i = list[k];
      if (pos[i] > view.hi) break;
      var px = Math.round(xPx(pos[i]));
      if (px !== bestPx) {
        if (best >= 0) drawMark(best, bestPx, cy);
        best = i; bestPx = px;
      } else if (priority(records[i]) > priority(records[best])) {
        best = i;
      }
    }
    if (best >= 0) drawMark(best, bestPx, cy);
  }

  function drawMark(i, x, cy) {
    var r = records[i];
    var c = COLORS[r.kind] || "#6b7280";
    drawn++;
    ctx.fillStyle = c;
    ctx.strokeStyle = c;
    switch (markOf(r)) {
      case "crash":
        ctx.lineWidth = 3;
        ctx.beginPath();
        ctx.moveTo(x - 7, cy - 7); ctx.lineTo(x + 7, cy + 7);
        ctx.moveTo(x + 7, cy - 7); ctx.lineTo(x - 7, cy + 7);
        ctx.stroke();
        ctx.lineWidth = 1;
        break;
      case "fault":
        triangle(x, cy, 7, true);
        break;
      case "restart":
        triangle(x, cy, 7, false);
        break;
      case "start":
        ctx.beginPath(); ctx.arc(x, cy, 4.5, 0, 2 * Math.PI); ctx.fill();
        break;
      case "request":
        ctx.fillStyle = r.write ? "#1d4ed8" : "#93c5fd";
        ctx.fillRect(x - 2, cy - (r.write ? 8 : 5), 4, r.write ? 16 : 10);
        break;
      case "response":
        ctx.fillRect(x - 1.5, cy - 4, 3, 8);
        if (r.result !== "ok") { ctx.strokeStyle = "#dc2626"; ctx.lineWidth = 2; ctx.strokeRect(x - 3, cy - 6, 6, 12); ctx.lineWidth = 1; }
        break;
      case "watch":
        ctx.beginPath(); ctx.arc(x, cy, 3.5, 0, 2 * Math.PI); ctx.fill();
        break;
      case "timer":
        ctx.fillRect(x - 0.5, cy - 4, 1.5, 8);
        break;
      case "external":
        ctx.beginPath(); ctx.moveTo(x, cy - 5); ctx.lineTo(x + 5, cy); ctx.lineTo(x, cy + 5); ctx.lineTo(x - 5, cy); ctx.fill();
        break;
      case "gc":
        ctx.fillRect(x - 3, cy - 3, 6, 6);
        break;
      default:
        ctx.fillRect(x - 1, cy + 6, 2, 2);
    }
  }

  function triangle(x, cy, s, down) {
    ctx.beginPath();
    if (down) { ctx.moveTo(x - s, cy - s); ctx.lineTo(x + s, cy - s); ctx.lineTo(x, cy + s); }
    else { ctx.moveTo(x - s, cy + s); ctx.lineTo(x + s, cy + s); ctx.lineTo(x, cy - s); }
    ctx.closePath();
    ctx.fill();
  }

  function revY(rev) {
    var span = Math.max(maxRev - minRev, 1);
    return revTop() + REV_H - 6 - ((rev - minRev) / span) * (REV_H - 12);
  }

  function drawRevisions() {
    if (n === 0) return;
    var start = Math.max(0, lowerBound(allIndexes(), view.lo, posOf) - 1);
    ctx.strokeStyle = "#4b5563";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    var first = true;
    for (var i = start; i < n; i++) {
      var x = xPx(pos[i]);
      var y = revY(records[i].revisionAfter);
      if (first) { ctx.moveTo(x, revY(records[i].revisionBefore)); first = false; }
      ctx.lineTo(x, revY(records[i].revisionBefore));
      ctx.lineTo(x, y);
      if (pos[i] > view.hi) break;
    }
    ctx.stroke();
    ctx.lineWidth = 1;
  }

  function drawObject(o) {
    var marks = objMarks[o];
    var cy = objTop(o) + OBJ_H / 2;
    var start = lowerBound(marks, view.lo, function (m) { return pos[m.i]; });
    var lastLabel = -1e9, lastPx = -1e9;
    ctx.font = "10px ui-monospace, monospace";
    ctx.textBaseline = "middle";
    for (var k = start; k < marks.length; k++) {
      var m = marks[k];
      if (pos[m.i] > view.hi) break;
      var x = Math.round(xPx(pos[m.i]));
      if (x === lastPx) continue;
      lastPx = x;
      var after = data.versions[m.after];
      ctx.fillStyle = m.before < 0 ? "#16a34a" : after.object === null ? "#dc2626" : "#2563eb";
      ctx.fillRect(x - 3, cy - 5, 6, 10);
      drawn++;
      if (x - lastLabel > 46 && after.revision !== null) {
        ctx.fillStyle = "#374151";
        ctx.fillText(after.object === null ? "deleted" : "rv " + after.revision, x + 5, cy);
        lastLabel = x;
      }
    }
  }

  function drawSelection(height) {
    if (selected < 0) return;
    var x = Math.round(xPx(pos[selected])) + 0.5;
    ctx.strokeStyle = "rgba(79,70,229,0.8)";
    ctx.setLineDash([3, 3]);
    ctx.beginPath();
    ctx.moveTo(x, AXIS_H);
    ctx.lineTo(x, height);
    ctx.stroke();
    ctx.setLineDash([]);
    var cy = laneTop(laneIndex[records[selected].actor]) + LANE_H / 2;
    ctx.strokeStyle = "#4f46e5";
    ctx.lineWidth = 2;
    ctx.strokeRect(x - 9, cy - 11, 18, 22);
    ctx.lineWidth = 1;
  }

  // ---- hit testing and interaction -----------------------------------------------------------------
  function hitTest(x, y) {
    if (x < LABEL_W || n === 0) return -1;
    var p = pxToPos(x);
    if (y >= AXIS_H && y < revTop()) {
      var lane = Math.floor((y - AXIS_H) / LANE_H);
      return nearest(laneRecords[lane], p, x, function (i) { return i; });
    }
    if (y >= revTop() && y < revTop() + REV_H) return nearest(allIndexes(), p, x, function (i) { return i; });
    var o = Math.floor((y - objTop(0)) / OBJ_H);
    if (o >= 0 && o < objShown) return nearest(objMarks[o], p, x, function (m) { return m.i; });
    return -1;
  }

  var indexes = null;
  function allIndexes() {
    if (indexes === null) { indexes = []; for (var i = 0; i < n; i++) indexes.push(i); }
    return indexes;
  }

  /** Among items within 8 px of x, the most important one, then the closest. */
  function nearest(list, p, x, indexOf) {
    if (!list || list.length === 0) return -1;
    var at = lowerBound(list, p, function (item) { return pos[indexOf(item)]; });
    var best = -1, bestScore = -Infinity;
    for (var dir = -1; dir <= 1; dir += 2) {
      for (var k = dir < 0 ? at - 1 : at, seen = 0; k >= 0 && k < list.length && seen < 400; k += dir, seen++) {
        var i = indexOf(list[k]);
        var d = Math.abs(xPx(pos[i]) - x);
        if (d > 8) break;
        var score = priority(records[i]) * 100 - d;
        if (score > bestScore) { bestScore = score; best = i; }
      }
    }
    return best;
  }

  var drag = null;
  canvas.addEventListener("mousedown", function (e) { drag = { x: e.clientX, lo: view.lo, hi: view.hi, moved: false }; });
  window.addEventListener("mouseup", function (e) {
    if (drag && !drag.moved) {
      var rect = canvas.getBoundingClientRect();
      var i = hitTest(e.clientX - rect.left, e.clientY - rect.top);
      if (i >= 0) select(i, false);
    }
    drag = null;
  });
  window.addEventListener("mousemove", function (e) {
    if (drag) {
      var dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        var shift = (dx / plotW) * (drag.hi - drag.lo);
        setView(drag.lo - shift, drag.hi - shift);
      }
      return;
    }
    var rect = canvas.getBoundingClientRect();
    var x = e.clientX - rect.left, y = e.clientY - rect.top;
    var inside = x >= 0 && y >= 0 && x <= rect.width && y <= rect.height;
    var i = inside ? hitTest(x, y) : -1;
    if (i < 0) { hover.style.display = "none"; return; }
    var r = records[i];
    hover.textContent = "#" + r.step + " " + seconds(r.timeMs - epoch) + "  " + r.actor + " " + r.kind + ": " + r.label + " → " + r.result;
    hover.style.left = e.clientX + 14 + "px";
    hover.style.top = e.clientY + 14 + "px";
    hover.style.display = "block";
  });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    var rect = canvas.getBoundingClientRect();
    var anchor = pxToPos(Math.max(LABEL_W, e.clientX - rect.left));
    var factor = Math.exp(e.deltaY * 0.0015);
    setView(anchor - (anchor - view.lo) * factor, anchor + (view.hi - anchor) * factor);
  }, { passive: false });

  function setView(lo, hi) {
    var minSpan = mode === "steps" ? 8 : 20;
    var span = Math.min(Math.max(hi - lo, minSpan), full.hi - full.lo);
    var mid = (lo + hi) / 2;
    lo = mid - span / 2; hi = mid + span / 2;
    if (lo < full.lo) { hi += full.lo - lo; lo = full.lo; }
    if (hi > full.hi) { lo -= hi - full.hi; hi = full.hi; }
    view = { lo: lo, hi: hi };
    draw();
  }
  function zoom(factor) { var mid = (view.lo + view.hi) / 2; setView(mid - ((view.hi - view.lo) * factor) / 2, mid + ((view.hi - view.lo) * factor) / 2); }

  document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom(2); });
  document.getElementById("zoom-fit").addEventListener("click", function () { setView(full.lo, full.hi); });
  document.getElementById("mode-steps").addEventListener("click", function () { setMode("steps"); draw(); });
  document.getElementById("mode-time").addEventListener("click", function () { setMode("time"); draw(); });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    if (n === 0) return;
    e.preventDefault();
    select(Math.min(n - 1, Math.max(0, (selected < 0 ? 0 : selected) + (e.key === "ArrowLeft" ? -1 : 1))), true);
  });
  window.addEventListener("resize", draw);

  function select(i, reveal) {
    selected = i;
    if (reveal && (pos[i] < view.lo || pos[i] > view.hi)) {
      var span = view.hi - view.lo;
      setView(pos[i] - span / 2, pos[i] + span / 2);
    } else {
      draw();
    }
    showDetail(i);
    var rows = document.querySelectorAll("#key-steps tr");
    for (var k = 0; k < rows.length; k++) rows[k].classList.toggle("selected", Number(rows[k].dataset.index) === i);
    var row = document.querySelector('#key-steps tr[data-index="' + i + '"]');
    if (row) row.scrollIntoView({ block: "nearest" });
  }

  // ---- the detail panel ----------------------------------------------------------------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    for (var key in attrs || {}) node.setAttribute(key, attrs[key]);
    (children || []).forEach(function (c) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }

  function showDetail(i) {
    var r = records[i];
    var panel = document.getElementById("detail");
    panel.textContent = "";
    panel.dataset.index = String(i);
    panel.dataset.kind = r.kind;
    panel.appendChild(el("h3", {}, ["#" + r.step + " " + r.kind + " · " + r.actor]));
    var rows = [["label", r.label], ["result", r.result], ["virtual time", seconds(r.timeMs - epoch) + " (" + r.timeMs + " ms)"],
      ["revision", r.revisionBefore === r.revisionAfter ? String(r.revisionAfter) : r.revisionBefore + " → " + r.revisionAfter]];
    if (r.ref !== undefined) rows.push(["object", r.ref]);
    if (r.write !== undefined) rows.push(["write", String(r.write)]);
    if (isCrash(r)) rows.push(["what it means", "SIGKILL: the actor's memory and pending requests are gone; writes already applied stay"]);
    if (r.fault && r.fault.clockOffsetMs !== undefined) rows.push(["what it means", clockWords(r.fault.target, r.fault.clockOffsetMs) + " from here on: its Date and clock.now() read that, its timers and the API server's clock keep the true time"]);
    var dl = el("dl");
    rows.forEach(function (row) { dl.appendChild(el("dt", {}, [row[0]])); dl.appendChild(el("dd", {}, [row[1]])); });
    panel.appendChild(dl);
    var changes = changesAt[i] || [];
    if (changes.length > 0) {
      panel.appendChild(el("h2", {}, ["objects changed by this step"]));
      changes.forEach(function (c) { panel.appendChild(changeView(c[0], c[1], c[2])); });
    } else {
      panel.appendChild(el("p", { class: "muted" }, ["This step changed no object."]));
      var key = r.ref && versionsByKey[r.ref] ? r.ref : null;
      if (key) {
        var v = versionAt(key, i);
        if (v >= 0) panel.appendChild(el("details", {}, [el("summary", {}, [key + " at this step"]), el("pre", {}, [pretty(data.versions[v].object)])]));
      }
    }
    panel.appendChild(el("details", {}, [el("summary", {}, ["trace record"]), el("pre", {}, [JSON.stringify(r, null, 2)])]));
  }

  function versionAt(key, i) {
    var list = versionsByKey[key] || [];
    var found = -1;
    for (var k = 0; k < list.length && list[k][0] <= i; k++) found = list[k][1];
    return found;
  }

  function changeView(key, before, after) {
    var b = before >= 0 ? data.versions[before] : null;
    var a = data.versions[after];
    var what = b === null || b.object === null ? "created" : a.object === null ? "deleted" : "modified";
    var revs = (b && b.revision !== null ? "rv " + b.revision : "—") + " → " + (a.revision !== null && a.object !== null ? "rv " + a.revision : "—");
    var box = el("div", { class: "change" }, [el("strong", {}, [key]), " ", el("span", { class: "muted" }, [what + ", " + revs])]);
    var table = el("table", { class: "diff" });
    var diff = diffObjects(b ? b.object : null, a.object);
    diff.slice(0, 300).forEach(function (d) {
      table.appendChild(el("tr", {}, [el("td", {}, [d.path]), el("td", { class: "del" }, [d.old === undefined ? "" : "− " + d.old]), el("td", { class: "add" }, [d.now === undefined ? "" : "+ " + d.now])]));
    });
    if (diff.length > 300) table.appendChild(el("tr", {}, [el("td", { colspan: "3" }, [diff.length - 300 + " more fields"])]));
    box.appendChild(table);
    box.appendChild(el("details", {}, [el("summary", {}, ["before"]), el("pre", {}, [b && b.object !== null ? pretty(b.object) : "(absent)"])]));
    box.appendChild(el("details", {}, [el("summary", {}, ["after"]), el("pre", {}, [a.object !== null ? pretty(a.object) : "(absent)"])]));
    return box;
  }

  function pretty(value) { return JSON.stringify(value, null, 2); }

  function flatten(value, prefix, out) {
    if (value !== null && typeof value === "object" && Object.keys(value).length > 0) {
      Object.keys(value).forEach(function (k) {
        flatten(value[k], prefix === "" ? k : Array.isArray(value) ? prefix + "[" + k + "]" : prefix + "." + k, out);
      });
    } else if (prefix !== "") {
      out[prefix] = JSON.stringify(value);
    }
    return out;
  }

  function diffObjects(before, after) {
    var b = before === null ? {} : flatten(before, "", {});
    var a = after === null ? {} : flatten(after, "", {});
    var keys = Object.keys(b).concat(Object.keys(a).filter(function (k) { return !(k in b); })).sort();
    var out = [];
    keys.forEach(function (k) { if (b[k] !== a[k]) out.push({ path: k, old: b[k], now: a[k] }); });
    return out;
  }

  // ---- key steps list ------------------------------------------------------------------------------
  function keySteps() {
    var body = document.querySelector("#key-steps tbody");
    var rows = 0, more = 0;
    for (var i = 0; i < n; i++) {
      var r = records[i];
      var key = r.kind === "fault" || r.kind === "start" || (changesAt[i] && changesAt[i].length > 0) || (r.kind === "response" && r.result !== "ok");
      if (!key) continue;
      if (rows >= 2000) { more++; continue; }
      rows++;
      var swatch = el("span", { class: "swatch", style: "background:" + (COLORS[r.kind] || "#6b7280") });
      var tr = el("tr", { "data-index": String(i), title: r.label + " → " + r.result }, [
        el("td", {}, [swatch, "#" + r.step]), el("td", {}, [seconds(r.timeMs - epoch)]), el("td", {}, [r.actor]), el("td", {}, [r.label]), el("td", {}, [r.result]),
      ]);
      tr.addEventListener("click", (function (index) { return function () { select(index, true); }; })(i));
      body.appendChild(tr);
    }
    if (more > 0) body.appendChild(el("tr", {}, [el("td", { colspan: "5", class: "muted" }, [more + " more key steps: use the timeline"])]));
  }

  // For tests and for people poking at the page from the console.
  window.settleTimeline = {
    lanes: function () { return laneNames.slice(); },
    objectRows: function () { return objKeys.slice(0, objShown); },
    drawnMarks: function () { return drawn; },
    records: function () { return records.length; },
    find: function (kind, labelPrefix) {
      for (var i = 0; i < n; i++) if (records[i].kind === kind && records[i].label.indexOf(labelPrefix) === 0) return i;
      return -1;
    },
    mark: function (i) { return markOf(records[i]); },
    downs: function () {
      return downs.map(function (d) { return { actor: laneNames[d.lane], from: d.from, to: d.to, what: d.what }; });
    },
    markCenter: function (i) {
      var rect = canvas.getBoundingClientRect();
      return { x: rect.left + xPx(pos[i]), y: rect.top + laneTop(laneIndex[records[i].actor]) + LANE_H / 2 };
    },
    select: function (i) { select(i, true); },
    selected: function () { return selected; },
    setMode: function (m) { setMode(m); draw(); },
  };

  setMode("steps");
  keySteps();
  draw();
  document.body.dataset.ready = "true";
})();
