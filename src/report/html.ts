// The HTML report of a finding: one self-contained file (inline CSS, script and data; a CSP that forbids
// any fetch) with the verdict, the property counters and the replay command on top, the actor swimlanes and
// object rows of the minimal run below, and a detail panel for the step a person clicks.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { assert } from "../api/assert.ts";
import type { ReportData } from "./model.ts";
import { clockOffsetLines } from "./text.ts";

const assetsDir = new URL("./assets/", import.meta.url);
let assets: { css: string; js: string } | undefined;

function loadAssets(): { css: string; js: string } {
  assets ??= {
    css: readFileSync(new URL("timeline.css", assetsDir), "utf8"),
    js: readFileSync(new URL("timeline.js", assetsDir), "utf8"),
  };
  return assets;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** JSON that is safe inside a `<script>` element: no `<` (so no `</script>`), no line separators. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

const legend: Array<[string, string]> = [
  ["request", "#2563eb"],
  ["response", "#0d9488"],
  ["watch delivery", "#9333ea"],
  ["timer", "#9ca3af"],
  ["external state", "#ea580c"],
  ["fault (× crash)", "#dc2626"],
  ["start (▲ restart)", "#16a34a"],
  ["garbage collection", "#92400e"],
];

function header(data: ReportData): string {
  const v = data.verdict;
  const failing = v.kind !== "ok";
  const what = v.property ?? v.actor;
  const title = v.kind === "scenario-error" ? "SCENARIO ERROR (the scenario's own code threw; not a finding)" : `${failing ? "FINDING " : ""}${v.kind}${what ? `: ${what}` : ""}`;
  const stack = v.error === undefined || v.error.stack.length === 0 ? "" : `\n<pre class="stack" id="verdict-stack">${escapeHtml(v.error.stack.map((frame) => `at ${frame}`).join("\n"))}</pre>`;
  const warning = data.reproduced
    ? ""
    : `<div class="warning" id="not-reproduced">The re-run did not reproduce the recorded trace (recorded: ${escapeHtml(data.recorded.verdict)}${data.recorded.property ? `: ${escapeHtml(data.recorded.property)}` : ""}). The code or the scenario changed since the finding was written; the picture shows today's run.</div>`;
  const faults = data.faults.map((f) => `${f.kind} ${f.target} at step ${f.atStep}`).join(", ") || "none";
  const offsets = clockOffsetLines(data.records);
  // Only when a clock fault left a clock off: reports of runs without one stay as they were.
  const clocks = offsets.length === 0 ? "" : `\n<p class="meta" id="clock-offsets">wall clocks: ${escapeHtml(offsets.join("; "))} (timers and the API server's clock keep the true time)</p>`;
  return `<header>
<h1 class="${failing ? "finding" : "ok"}"><span class="verdict" id="verdict">${escapeHtml(title)}</span></h1>
<p class="meta">scenario <strong>${escapeHtml(data.scenario)}</strong> (${escapeHtml(data.scenarioPath)}) · variant <strong>${escapeHtml(data.variant)}</strong> · workload <strong>${escapeHtml(data.workload)}</strong> · seed ${data.seed}</p>
<p class="detail-line" id="verdict-detail">${escapeHtml(v.detail)} (at step ${v.step}, ${(v.elapsedMs / 1000).toFixed(3)} s of virtual time)</p>${stack}
<p class="meta">minimal run: ${data.records.length} trace records; faults: ${escapeHtml(faults)}; ${data.choices} non-default scheduling choice(s)</p>${clocks}
${finalWorldHtml(data)}
<div class="replay"><span>replay:</span> <code id="replay-command">${escapeHtml(data.replayCommand)}</code></div>
${warning}
</header>`;
}

/** The final world the finding ended in (the scenario's summary, or the objects the failing property read). */
function finalWorldHtml(data: ReportData): string {
  if (data.finalWorld === undefined || data.finalWorld.length === 0) return "";
  return `<div class="final-world"><span>final world:</span><pre id="final-world">${escapeHtml(data.finalWorld.join("\n"))}</pre></div>`;
}

function counters(data: ReportData): string {
  const rows = data.counters.map((c) => {
    const cls = [c.failures > 0 ? "failed" : "", c.name === data.verdict.property ? "culprit" : ""].filter(Boolean).join(" ");
    return `<tr class="${cls}"><td>${c.kind}</td><td>${escapeHtml(c.name)}</td><td>${c.evaluations}</td><td>${c.failures}</td><td>${c.everHeld ? "" : "never held"}</td></tr>`;
  });
  return `<section id="counters"><h2>properties</h2>
<table class="counters"><thead><tr><th>kind</th><th>property</th><th>evaluations</th><th>failures</th><th></th></tr></thead>
<tbody>${rows.join("")}</tbody></table></section>`;
}

function timeline(): string {
  const items = legend.map(([name, color]) => `<span style="--c:${color}">${escapeHtml(name)}</span>`).join("");
  return `<section id="timeline"><h2>timeline</h2>
<div class="toolbar">
<button id="mode-steps" aria-pressed="true" title="one column per trace record">steps</button>
<button id="mode-time" aria-pressed="false" title="x is virtual time">virtual time</button>
<button id="zoom-in" title="zoom in (or mouse wheel)">+</button><button id="zoom-out" title="zoom out">−</button><button id="zoom-fit">fit</button>
<span class="muted">drag to pan, wheel to zoom, ←/→ to step</span>
<div class="legend">${items}<span style="--c:rgba(220,38,38,0.3)">actor down / paused</span></div>
</div>
<div id="canvas-wrap"><canvas id="lanes" role="img" aria-label="actor swimlanes and object revisions"></canvas></div>
</section>`;
}

/** The whole page as one string. */
export function renderHtmlReport(data: ReportData): string {
  assert(Array.isArray(data.records), "report data has records");
  assert(data.changes.every(([index]) => index >= 0 && index < data.records.length), "report changes point at records");
  const { css, js } = loadAssets();
  const title = `settle: ${data.scenario}/${data.variant} ${data.verdict.kind}${data.verdict.property ? ` ${data.verdict.property}` : ""}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${css}</style>
</head>
<body>
${header(data)}
${counters(data)}
${timeline()}
<section class="bottom">
<div><h2>key steps</h2><div id="key-steps"><table><tbody></tbody></table></div></div>
<div><h2>step detail</h2><div id="detail"><p class="muted">Click a mark on the timeline or a key step to see its record and the objects before and after.</p></div></div>
</section>
<div id="hover"></div>
<script type="application/json" id="settle-data">${scriptJson(data)}</script>
<script>${js}</script>
</body>
</html>
`;
}

/** Writes the report atomically, creating the folder if it is missing; returns `path`. */
export function writeHtmlReport(path: string, data: ReportData): string {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, renderHtmlReport(data));
  renameSync(temp, path);
  return path;
}
