// The HTML report in a real browser: Debian's chromium driven by playwright-core (never a downloaded
// browser). The page must draw the lanes of a known finding, show a crash's details on click, log no
// console errors, fetch nothing, and stay usable at 10,000 steps. Screenshots go to the artifacts folder.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { writeHtmlReport } from "../../src/report/html.ts";
import { reportDataFromReplayFile, type ReportData } from "../../src/report/model.ts";
import type { TraceRecord } from "../../src/sim/trace.ts";
import type { Change, ObjectVersion } from "../../src/report/capture.ts";
import { journalPauseMs, writeJournalReplay } from "./journal-replay.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const fixture = join(repo, "test", "report", "fixtures", "ensemble-delta.json");
const artifacts = process.env.SETTLE_TEST_ARTIFACTS ?? join(repo, ".settle", "test-artifacts");
const dir = mkdtempSync(join(tmpdir(), "settle-html-"));
let browser: BrowserContext;
let ensembleUrl: string;
let largeUrl: string;
let journal: ReportData;
let journalUrl: string;
let rewordedUrl: string;

interface Opened {
  page: Page;
  errors: string[];
  requests: string[];
}

/** A run of `count` records over five actors, with a crash and restart every 1000 records and a write every 7th. */
function largeReport(count: number): ReportData {
  const actors = ["operator", "kubelet", "user", "<b>odd & name</b>", "gc"];
  const kinds = ["request", "response", "watch", "timer", "external"] as const;
  const records: TraceRecord[] = [];
  const versions: ObjectVersion[] = [];
  const changes: Array<[number, Change[]]> = [];
  let revision = 100;
  for (let i = 0; i < count; i++) {
    const actor = actors[i % actors.length]!;
    const timeMs = 1_000_000 + Math.floor(i / 3) * 250;
    if (i % 1000 === 500) {
      records.push({ step: i, timeMs, actor: "operator", kind: "fault", label: "crash operator", revisionBefore: revision, revisionAfter: revision, result: "crashed, restart in 2000ms", fault: { kind: "crash", target: "operator", applied: true } });
      continue;
    }
    if (i % 1000 === 520) {
      records.push({ step: i, timeMs, actor: "operator", kind: "start", label: "restart operator", revisionBefore: revision, revisionAfter: revision, result: "fired", restart: true });
      continue;
    }
    if (i % 7 === 0) {
      const key = `ConfigMap ns/cm-${i % 50}`;
      const before = versions.findLastIndex((v) => v.key === key);
      versions.push({ key, revision: revision + 1, object: { kind: "ConfigMap", metadata: { name: `cm-${i % 50}`, resourceVersion: String(revision + 1) }, data: { n: String(i) } } });
      changes.push([i, [[key, before, versions.length - 1]]]);
      records.push({ step: i, timeMs, actor, kind: "request", label: `update ${key}`, ref: key, write: true, revisionBefore: revision, revisionAfter: ++revision, result: "ok" });
      continue;
    }
    const kind = kinds[i % kinds.length]!;
    records.push({ step: i, timeMs, actor, kind, label: `${kind} thing ${i}`, revisionBefore: revision, revisionAfter: revision, result: i % 97 === 0 ? "409 Conflict" : "ok" });
  }
  return {
    format: 1,
    scenario: "synthetic",
    scenarioPath: "test/synthetic/scenario.ts",
    variant: "big",
    workload: "w",
    params: {},
    seed: 1,
    verdict: { kind: "no-convergence", step: count, elapsedMs: 5000, detail: "a </script><script>alert(1)</script> detail" },
    counters: [{ name: "p </script>", kind: "eventually", evaluations: 1, failures: 1, everHeld: false }],
    replayPath: "x.json",
    replayCommand: "npx settle replay x.json",
    reproduced: true,
    recorded: { verdict: "no-convergence", property: null },
    faults: [],
    choices: 0,
    epochMs: 1_000_000,
    records,
    changes,
    versions,
    initial: [],
  };
}

/** The same run with every fault and start record's label and result in other words: the page must not care. */
function reworded(data: ReportData): ReportData {
  const records = data.records.map((r, i) => (r.kind === "fault" || r.kind === "start" ? { ...r, label: `event ${i} of ${r.actor}`, result: "(reworded)" } : r));
  return { ...data, records };
}

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  const ensemble = join(dir, "ensemble.html");
  writeHtmlReport(ensemble, await reportDataFromReplayFile(fixture, { cwd: repo }));
  const large = join(dir, "large.html");
  writeHtmlReport(large, largeReport(10_000));
  ensembleUrl = pathToFileURL(ensemble).href;
  largeUrl = pathToFileURL(large).href;
  journal = await reportDataFromReplayFile(await writeJournalReplay(dir), { cwd: repo });
  journalUrl = pathToFileURL(writeHtmlReport(join(dir, "journal.html"), journal)).href;
  rewordedUrl = pathToFileURL(writeHtmlReport(join(dir, "reworded.html"), reworded(journal))).href;
  browser = await chromium.launchPersistentContext(join(dir, "profile"), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Calls the page's test hook `window.settleTimeline[method](...args)` (the tests compile without the DOM library). */
function call<T = unknown>(page: Page, method: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(`window.settleTimeline.${method}(${args.map((a) => JSON.stringify(a)).join(", ")})`) as Promise<T>;
}

async function open(url: string): Promise<Opened> {
  const page = await browser.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  return { page, errors, requests };
}

test("the ensemble delta finding draws a lane per actor, its objects, the failing property and the replay command", async () => {
  const { page, errors, requests } = await open(ensembleUrl);
  try {
    assert.deepEqual(await call(page, "lanes"), ["operator", "user"]);
    const rows: string[] = await call(page, "objectRows");
    assert.ok(rows.includes("Ensemble academy-lab/alpha") && rows.includes("ConfigMap academy-lab/alpha-voice-3"), rows.join(", "));
    assert.ok((await call<number>(page, "drawnMarks")) >= 30, "every record of a 36-record run is drawn");
    assert.equal(await page.textContent("#verdict"), "FINDING silent-divergence: children == spec.voices");
    assert.equal(await page.textContent("#replay-command"), "npx settle replay test/report/fixtures/ensemble-delta.json");
    assert.match((await page.textContent("#counters tr.culprit")) ?? "", /children == spec\.voices\s*1\s*1\s*never held/);
    assert.equal(await page.locator("#not-reproduced").count(), 0);
    assert.deepEqual(errors, []);
    assert.deepEqual(requests, [ensembleUrl], "the page fetches nothing but itself");
  } finally {
    await page.close();
  }
});

test("clicking the crash mark shows the crash's record and what a SIGKILL means", async () => {
  const { page, errors } = await open(ensembleUrl);
  try {
    const crash: number = await call(page, "find", "fault", "crash ");
    assert.ok(crash >= 0, "the finding has a crash");
    const at: { x: number; y: number } = await call(page, "markCenter", crash);
    await page.mouse.move(at.x, at.y);
    assert.match((await page.textContent("#hover")) ?? "", /operator fault: crash operator → crashed/);
    await page.mouse.click(at.x, at.y);
    assert.equal(await page.getAttribute("#detail", "data-index"), String(crash));
    assert.equal(await page.getAttribute("#detail", "data-kind"), "fault");
    const detail = (await page.textContent("#detail")) ?? "";
    assert.match(detail, /crash operator/);
    assert.match(detail, /crashed, restart in 2000ms/);
    assert.match(detail, /SIGKILL/);
    assert.equal(await page.locator("#key-steps tr.selected").count(), 1, "the key step row is highlighted");
    await page.screenshot({ path: join(artifacts, "report-ensemble-delta-crash.png"), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test("clicking a write shows the object before and after as a field diff", async () => {
  const { page, errors } = await open(ensembleUrl);
  try {
    await page.locator("#key-steps tr", { hasText: "patch Ensemble academy-lab/alpha" }).first().click();
    const diff = page.locator("#detail table.diff");
    assert.equal(await diff.count(), 1);
    const voices = page.locator("#detail table.diff tr", { hasText: "spec.voices" });
    assert.equal(await voices.count(), 1);
    assert.match((await voices.textContent()) ?? "", /spec\.voices−\s*3\+\s*\d+/);
    assert.match((await page.textContent("#detail .change")) ?? "", /modified, rv \d+ → rv \d+/);
    await page.keyboard.press("ArrowRight");
    const next = Number(await page.getAttribute("#detail", "data-index"));
    assert.ok(next > 0, "the arrow key moves to the next record");
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test("a run of 10,000 steps draws aggregated marks, escapes its data, and stays clickable in both axis modes", async () => {
  const { page, errors, requests } = await open(largeUrl);
  try {
    assert.equal(await call(page, "records"), 10_000);
    const lanes: string[] = await call(page, "lanes");
    assert.deepEqual(lanes, ["operator", "kubelet", "user", "<b>odd & name</b>", "gc"]);
    const drawn: number = await call(page, "drawnMarks");
    assert.ok(drawn > 1000 && drawn < 10_000, `marks are aggregated per pixel column (drew ${drawn})`);
    assert.match((await page.textContent("#verdict-detail")) ?? "", /<\/script><script>alert\(1\)<\/script>/, "markup is shown as text");
    const crash: number = await call(page, "find", "fault", "crash ");
    const at: { x: number; y: number } = await call(page, "markCenter", crash);
    await page.mouse.click(at.x, at.y);
    assert.equal(await page.getAttribute("#detail", "data-kind"), "fault", "the crash wins its pixel column and the click");
    await page.click("#mode-time");
    assert.ok((await call<number>(page, "drawnMarks")) > 100);
    await page.click("#zoom-in");
    await page.mouse.move(at.x, at.y + 5);
    await page.mouse.wheel(0, -400);
    assert.ok((await call<number>(page, "drawnMarks")) > 0);
    await page.screenshot({ path: join(artifacts, "report-10000-steps.png") });
    assert.deepEqual(errors, []);
    assert.deepEqual(requests, [largeUrl]);
  } finally {
    await page.close();
  }
});

test("crash, restart, pause and skipped-fault marks follow the records' facts, whatever their wording", async () => {
  const records = journal.records;
  const at = (what: string, match: (r: TraceRecord) => boolean) => {
    const index = records.findIndex(match);
    assert.ok(index >= 0, `the journal run has ${what}`);
    return index;
  };
  const start = at("a first start", (r) => r.kind === "start" && r.actor === "scribe" && r.restart !== true);
  const crash = at("a crash", (r) => r.fault?.kind === "crash");
  const skipped = at("a skipped pause", (r) => r.fault?.kind === "pause" && !r.fault.applied);
  const pause = at("an applied pause", (r) => r.fault?.kind === "pause" && r.fault.applied);
  const restart = at("a restart", (r) => r.restart === true);
  const resumed = records.findIndex((r, k) => k > pause && r.timeMs >= records[pause]!.timeMs + journalPauseMs);
  assert.ok(resumed > pause, "the run goes on past the pause");
  for (const url of [journalUrl, rewordedUrl]) {
    const { page, errors } = await open(url);
    try {
      const marks = await Promise.all([start, crash, skipped, pause, restart].map((i) => call<string>(page, "mark", i)));
      assert.deepEqual(marks, ["start", "crash", "fault", "fault", "restart"], url);
      assert.deepEqual(
        await call(page, "downs"),
        [
          { actor: "scribe", from: crash, to: restart, what: "down" },
          { actor: "scribe", from: pause, to: resumed, what: "paused" },
        ],
        `${url}: down from the crash to the restart, paused for the pause's length, nothing for the skipped pause`,
      );
      const mark: { x: number; y: number } = await call(page, "markCenter", crash);
      await page.mouse.click(mark.x, mark.y);
      assert.match((await page.textContent("#detail")) ?? "", /SIGKILL/, "a crash's detail says what it means");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  }
});
