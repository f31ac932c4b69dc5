#!/usr/bin/env node
// Builds the published package: `tsc -p tsconfig.build.json` compiles src/ to dist/ (JavaScript with `.js`
// import specifiers, and `.d.ts` declarations), then the files tsc does not emit are copied beside it (the
// HTML report's assets). The new tree replaces the old one whole, so a deleted source file cannot linger.
// `prepare` runs this after `npm ci`/`npm install` in a clone, `prepack` before `npm pack`/`npm publish`.
import { cpSync, existsSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { spawnSync } from "node:child_process";

const root = new URL("..", import.meta.url).pathname;
const dist = join(root, "dist");

// A production install of a tarball has no TypeScript and needs no build: its dist/ is in the tarball.
let tsc;
try {
  tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
} catch {
  if (existsSync(join(dist, "cli", "main.js"))) process.exit(0);
  console.error("settle build: typescript is not installed (run npm ci) and there is no dist/ to use");
  process.exit(1);
}

// Built beside dist/ and swapped in by two renames, so a CLI that runs while another build is under way (tests
// in a shared checkout) finds a complete dist/, the old or the new one, almost always.
const next = join(root, `dist.next-${process.pid}`);
const old = join(root, `dist.old-${process.pid}`);
rmSync(next, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", next], { stdio: "inherit" });
if (result.error !== undefined || result.status !== 0) {
  rmSync(next, { recursive: true, force: true });
  console.error("settle build: tsc failed; dist/ is unchanged");
  process.exit(1);
}
cpSync(join(root, "src", "report", "assets"), join(next, "report", "assets"), { recursive: true });
// The Go overlay's sources (src/go/overlay): given to `go build -overlay` of a go: program, found beside dist/go.
cpSync(join(root, "src", "go", "overlay"), join(next, "go", "overlay"), { recursive: true });
// The scenario.yaml JSON Schema for editors, exported as `settle/scenario.schema.json`: written from the
// compiled schema module, so it is the object the loader validates with.
const { scenarioSchema } = await import(pathToFileURL(join(next, "scenario-yaml", "schema.js")).href);
writeFileSync(join(next, "scenario.schema.json"), `${JSON.stringify(scenarioSchema, null, 2)}\n`);
if (existsSync(dist)) renameSync(dist, old);
renameSync(next, dist);
rmSync(old, { recursive: true, force: true });
