// The module loader takes every form Node runs (issue 44): each fixture module under fixtures/forms is run twice, by
// `node FILE` and as a simulator actor, and must log the same line: `form: <json>` of what it sees (its paths, its
// packages' exports conditions, its JSON, its argv). TypeScript forms, which node 20 does not run, are checked
// against what Node would give. A form settle cannot run is refused before any run, naming the file, the line and
// the form, and saying what to write instead. The fixture tree is copied to a temporary project outside the
// repository with `packages/` renamed `node_modules/`, so its packages resolve as installed dependencies do.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, realpathSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, fifoStrategy } from "../../src/sim/index.ts";
import { checkModule, moduleActor } from "../../src/module/actor.ts";
import { ModuleLoadError } from "../../src/module/loader.ts";

const project = realpathSync(mkdtempSync(join(tmpdir(), "settle-forms-")));
cpSync(fileURLToPath(new URL("fixtures/forms", import.meta.url)), project, { recursive: true });
renameSync(join(project, "packages"), join(project, "node_modules"));

const FORM = /^form: (.*)$/;

/** What the module logs as an actor: its `form:` line, parsed. */
async function formInSettle(module: string): Promise<unknown> {
  const sim = createSimulation({ seed: 1 });
  sim.addActor(moduleActor({ name: "op", module: join(project, module) }));
  const result = await sim.run({ strategy: fifoStrategy(), maxSteps: 200, untilMs: sim.clock.now() + 500 });
  const logs = result.trace.filter((r) => r.kind === "log" && r.actor === "op").map((r) => r.label);
  const lines = logs.filter((label) => FORM.test(label));
  assert.ok(lines.length > 0, `${module} logged its form (status ${result.status}: ${result.message ?? ""})\n${logs.join("\n")}`);
  assert.ok(logs.includes("exit op: process.exit(0)"), `${module} exited with 0:\n${logs.join("\n")}`);
  return merged(lines);
}

/** The `form:` lines of one module as one object. */
function merged(lines: readonly string[]): unknown {
  return Object.assign({}, ...lines.map((line) => JSON.parse(FORM.exec(line)![1]!) as object)) as unknown;
}

/** What `node FILE` prints as its `form:` line, parsed. */
function formInNode(module: string): unknown {
  const run = spawnSync(process.execPath, [join(project, module)], { cwd: project, encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  const lines = run.stdout.split("\n").filter((line) => FORM.test(line));
  assert.ok(lines.length > 0, run.stdout);
  return merged(lines);
}

for (const [module, what] of [
  ["shebang.mjs", "a `#!/usr/bin/env node` first line"],
  ["create-require.mjs", "createRequire(import.meta.url) with require of a CommonJS package and JSON, require.resolve, a JSON import with { type: \"json\" }, import.meta.url/filename/dirname, process.argv[1]"],
  ["esm/entry.js", "`.js` under \"type\": \"module\": an ESM-only package, the node/import and default exports conditions, dynamic import() of a relative path and of packages, top-level await"],
  ["cjs/entry.js", "`.js` under \"type\": \"commonjs\": __dirname/__filename of the file and of a helper, the node/require condition, require of JSON, require.main, import() from CommonJS"],
  ["entry.cjs", "`.cjs`: a CommonJS-only package (its `main`, not its `module` field)"],
  ["app", "an entry point given as a package directory (its package.json `main`)"],
] as const) {
  test(`the loader runs ${what} as node does (${module})`, async () => {
    assert.deepEqual(await formInSettle(module), formInNode(module));
  });
}

test("the loader runs .ts, .mts and .cts modules: types stripped, top-level await kept, their own paths", async () => {
  assert.deepEqual(await formInSettle("entry.ts"), { ts: "esm-only", filename: join(project, "entry.ts") });
  assert.deepEqual(await formInSettle("entry.mts"), { mts: "esm-only", answer: 42 });
  assert.deepEqual(await formInSettle("entry.cts"), { cts: "cjs-only", dirname: project });
});

test("a form settle cannot run is refused before any run: the file, the line, the form, and what to write instead", () => {
  const refusal = (module: string): string => {
    try {
      checkModule({ module: join(project, module) });
    } catch (error) {
      assert.ok(error instanceof ModuleLoadError, String(error));
      return error.message;
    }
    assert.fail(`${module} was not refused`);
  };
  const computedImport = refusal("refused/computed-import.mjs");
  assert.match(computedImport, /refused\/computed-import\.mjs:3\)/, "the file and the line");
  assert.match(computedImport, /import\(\.\.\.\) with an argument that is not a string literal/, "the form");
  assert.match(computedImport, /write its argument as a string literal \(a relative path such as "\.\/file\.mjs", or a package name\)/, "what to write instead");
});
