#!/usr/bin/env node
// Builds the published package: `tsc -p tsconfig.build.json` compiles src/ to dist/ (JavaScript with `.js`
// import specifiers, and `.d.ts` declarations), then the files tsc does not emit are copied beside it (the
// HTML report's assets). A stale dist/ is removed first so a deleted source file cannot linger in the package.
// `prepare` runs this after `npm ci`/`npm install` in a clone, `prepack` before `npm pack`/`npm publish`.
import { cpSync, existsSync, rmSync } from "node:fs";
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

rmSync(dist, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });
if (result.error !== undefined || result.status !== 0) {
  console.error("settle build: tsc failed, dist/ is incomplete");
  process.exit(1);
}
cpSync(join(root, "src", "report", "assets"), join(dist, "report", "assets"), { recursive: true });
