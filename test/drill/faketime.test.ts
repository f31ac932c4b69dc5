// The drill's clock points (issue 47 item 4): a controller process runs under libfaketime, its wall clock moved at the
// point while it runs, its monotonic clock untouched; without Debian's faketime package no clock point is planned.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drillFaultKinds, drillFaults } from "../../src/api/faults.ts";
import { FaketimeClock, faketimeLibrary, faketimeSpec } from "../../src/drill/faketime.ts";
import { PointFeed, pointLabel, withoutFaketimeLine } from "../../src/drill/drill.ts";
import { drillUsage } from "../../src/cli/drill.ts";
import type { DrillTarget } from "../../src/drill/target.ts";

test("offsets are written as libfaketime reads them: signed whole seconds", () => {
  assert.equal(faketimeSpec(30_000), "+30");
  assert.equal(faketimeSpec(-30_000), "-30");
  assert.equal(faketimeSpec(0), "+0");
  assert.throws(() => faketimeSpec(1500), /whole seconds/);
  assert.equal(pointLabel({ afterWrite: 3, fault: "clock-ahead" }), "clock-ahead (clock-skew +30s) after write 3");
  assert.equal(pointLabel({ afterWrite: 2, fault: "clock-behind" }), "clock-behind (clock-skew -30s) after write 2");
  assert.equal(pointLabel({ afterWrite: 2, fault: "kill" }), "kill after write 2");
});

test("--faults plans the clock points exactly where libfaketime is installed", () => {
  const target = { defaults: {} } as unknown as DrillTarget;
  const feed = new PointFeed({ faults: true }, target);
  feed.finish(1);
  const clocks = drillFaultKinds.filter((k) => k.startsWith("clock-"));
  assert.deepEqual(clocks, ["clock-ahead", "clock-behind"]);
  const installed = faketimeLibrary() !== undefined;
  assert.deepEqual(feed.withoutFaketime, installed ? [] : clocks);
  const plain = drillFaultKinds.filter((k) => !drillFaults[k].perResource && (installed || !k.startsWith("clock-")));
  assert.equal(feed.planned, plain.length, "one point per fault that aims at no resource (the reference watched none)");
});

/** Runs a node process under the clock's environment that prints its wall and monotonic readings twice, 400 ms apart. */
function readClocks(clock: FaketimeClock, between: () => void): Promise<number[]> {
  const script = `
    const a = [Date.now(), performance.now()];
    process.stdout.write("ready\\n");
    setTimeout(() => { const b = [Date.now(), performance.now()]; console.log(JSON.stringify([b[0] - a[0], Math.round(b[1] - a[1])])); }, 400);`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script], { env: { ...process.env, ...clock.env(undefined) }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out === "ready\n") between();
    });
    child.on("error", reject);
    child.on("exit", () => resolve(JSON.parse(out.split("\n")[1]!) as number[]));
  });
}

test("a running process under the run's libfaketime sees its wall clock jump at set(), and its monotonic clock keep the true rate", async () => {
  assert.ok(faketimeLibrary() !== undefined, "Debian's faketime package is installed (scripts/system-deps.sh installs it)");
  const dir = mkdtempSync(join(tmpdir(), "settle-faketime-"));
  try {
    const clock = new FaketimeClock(dir, faketimeLibrary()!);
    const [wall, monotonic] = await readClocks(clock, () => clock.set(30_000));
    assert.ok(monotonic! >= 400 && monotonic! < 5000, `monotonic ${monotonic} ms`);
    assert.ok(wall! - monotonic! > 29_000 && wall! - monotonic! < 31_000, `the wall clock jumped 30 s (${wall} ms wall against ${monotonic} ms monotonic)`);
    const [back] = await readClocks(clock, () => clock.set(-30_000));
    assert.ok(back! < -59_000, `from +30 s to -30 s: ${back} ms`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a drill asked for clock faults where libfaketime is missing says which it did not drill and what to install", () => {
  const line = withoutFaketimeLine(["clock-ahead", "clock-behind"]);
  assert.match(line, /^not drilled: clock-ahead, clock-behind, /);
  assert.match(line, /apt-get install faketime/);
});

test("settle drill --help explains the clock points and what they need", () => {
  assert.match(drillUsage, /clock-ahead and clock-behind/);
  assert.match(drillUsage, /faketime package/);
});
