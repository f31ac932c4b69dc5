// The assets directory `KUBEBUILDER_ASSETS` names: executables `kube-apiserver` and `etcd` (small shell scripts
// that run this package's compiled entry point with this Node.js), and a stamp saying which settle made them. It
// lives outside the user's tree (a cache directory), is made on first use, and is made again when the stamp names
// another settle version or install: scripts pointing into an older or moved install would run the wrong server.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** The file in an assets directory that names the settle that made it. */
export const stampName = "settle-envtest-assets";

export interface AssetsSource {
  /** settle's version (package.json). */
  version: string;
  /** The compiled entry point the scripts run (`dist/envtest/main.js`). */
  entry: string;
  /** The Node.js executable the scripts run it with. */
  node: string;
}

/** Where the assets go: `$SETTLE_ENVTEST_ASSETS_DIR`, else `settle/envtest-assets` under the user's cache directory. */
export function assetsDirectory(env: NodeJS.ProcessEnv): string {
  if (env.SETTLE_ENVTEST_ASSETS_DIR !== undefined && env.SETTLE_ENVTEST_ASSETS_DIR !== "") return env.SETTLE_ENVTEST_ASSETS_DIR;
  const cache = env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== "" ? env.XDG_CACHE_HOME : join(homedir(), ".cache");
  return join(cache, "settle", "envtest-assets");
}

function stampText(source: AssetsSource): string {
  return `settle ${source.version}\nentry ${source.entry}\nnode ${source.node}\n`;
}

function script(source: AssetsSource, binary: string): string {
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  return `#!/bin/sh\n# ${binary} for controller-runtime's envtest, served by settle ${source.version} (made by \`settle envtest-assets\`).\nexec ${quote(source.node)} ${quote(source.entry)} ${binary} "$@"\n`;
}

/**
 * Makes `dir` hold the assets of `source` unless it already does; returns whether it (re)made them. The new files
 * are written beside the directory and renamed into place, so a suite starting meanwhile sees old or new, whole.
 */
export function ensureAssets(dir: string, source: AssetsSource): boolean {
  const stamp = join(dir, stampName);
  const wanted = stampText(source);
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === wanted && existsSync(join(dir, "kube-apiserver")) && existsSync(join(dir, "etcd"))) return false;
  mkdirSync(dir, { recursive: true });
  for (const binary of ["kube-apiserver", "etcd"]) {
    const next = join(dir, `.${binary}.${process.pid}`);
    writeFileSync(next, script(source, binary), { mode: 0o755 });
    chmodSync(next, 0o755);
    renameSync(next, join(dir, binary));
  }
  // A kubectl is not needed: envtest only names its path for users who ask for one.
  rmSync(join(dir, `.${stampName}.${process.pid}`), { force: true });
  writeFileSync(join(dir, `.${stampName}.${process.pid}`), wanted);
  renameSync(join(dir, `.${stampName}.${process.pid}`), stamp);
  return true;
}
