// `settle report` end to end, spawned as a user runs it, from a temporary working directory.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseXml } from "./xml.ts";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(repo, "bin", "settle.js");
const root = mkdtempSync(join(tmpdir(), "settle-report-cli-"));
after(() => rmSync(root, { recursive: true, force: true }));

// The fixture names its scenario relative to the repository; here the working directory is elsewhere.
const replay = join(root, "delta-559e2e44d0.json");
const fixture = JSON.parse(readFileSync(join(repo, "test", "report", "fixtures", "ensemble-delta.json"), "utf8")) as { scenario: string };
writeFileSync(replay, JSON.stringify({ ...fixture, scenario: join(repo, fixture.scenario) }));

function settle(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    if (env.GITHUB_ACTIONS === undefined) delete childEnv.GITHUB_ACTIONS;
    const child = spawn(process.execPath, [bin, ...args], { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

test("settle report --html DIR/ --junit FILE creates the folders and writes both, exiting 1 for a finding", async () => {
  const ran = await settle(["report", "delta-559e2e44d0.json", "--html", "out/html/", "--junit", "out/ci/junit.xml"]);
  assert.equal(ran.code, 1, ran.stderr);
  const html = join(root, "out", "html", "ensemble-delta-559e2e44d0.html");
  assert.ok(existsSync(html), ran.stderr);
  const page = readFileSync(html, "utf8");
  assert.match(page, /FINDING silent-divergence: children == spec\.voices/);
  assert.match(page, /npx settle replay delta-559e2e44d0\.json/);
  assert.doesNotMatch(page, /<(link|img|script)[^>]+(src|href)=/i, "nothing is loaded from elsewhere");
  const junit = parseXml(readFileSync(join(root, "out", "ci", "junit.xml"), "utf8"));
  const testcase = junit.children[0]!.children[0]!;
  assert.deepEqual([testcase.attributes.classname, testcase.attributes.name], ["settle.ensemble", "delta"]);
  assert.equal(testcase.children[0]!.attributes.type, "silent-divergence");
  assert.equal(ran.stdout, "", "no annotations outside GitHub Actions");
});

test("settle report --html FILE writes that file; without options it prints the text report", async () => {
  const ran = await settle(["report", "delta-559e2e44d0.json", "--html", "single/report.html"]);
  assert.equal(ran.code, 1, ran.stderr);
  assert.ok(existsSync(join(root, "single", "report.html")));
  const text = await settle(["report", "delta-559e2e44d0.json"]);
  assert.equal(text.code, 1, text.stderr);
  assert.match(text.stdout, /^FINDING silent-divergence: children == spec\.voices/);
  assert.match(text.stdout, /replay: npx settle replay delta-559e2e44d0\.json/);
});

test("under GitHub Actions settle report prints an ::error annotation", async () => {
  const ran = await settle(["report", "delta-559e2e44d0.json", "--junit", "gh.xml"], { GITHUB_ACTIONS: "true" });
  assert.equal(ran.code, 1, ran.stderr);
  assert.match(ran.stdout, /^::error file=[^,]*scenario\.ts,title=settle ensemble\/delta%3A silent-divergence::silent-divergence: children == spec\.voices/m);
});

test("settle report exits 2 on a missing file, a missing argument or an unknown option", async () => {
  assert.equal((await settle(["report", "nope.json"])).code, 2);
  assert.equal((await settle(["report"])).code, 2);
  assert.equal((await settle(["report", "delta-559e2e44d0.json", "--pdf", "x"])).code, 2);
});
