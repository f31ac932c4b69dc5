// `settle envtest-assets`: prints the directory for KUBEBUILDER_ASSETS, making it first if needed.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { assetsDirectory, ensureAssets } from "../envtest/assets.ts";
import { parse, UsageError } from "./args.ts";

export const envtestAssetsUsage = `Usage: settle envtest-assets

Prints a directory holding the executables kube-apiserver and etcd that controller-runtime's envtest starts, so an
existing envtest suite runs against settle unchanged:

  KUBEBUILDER_ASSETS=$(npx settle envtest-assets) go test ./...

The directory is made on first use under the user's cache directory ($XDG_CACHE_HOME or ~/.cache, then
settle/envtest-assets; $SETTLE_ENVTEST_ASSETS_DIR overrides it) and made again when another settle version or
install made it. Its kube-apiserver is settle serve taking kube-apiserver's flags (\`kube-apiserver --help\` lists
them); its etcd only answers envtest's health probe. SETTLE_FAULTS=FILE (the \`settle serve --faults\` format) arms
faults in the kube-apiserver for the suite's run.

Exit codes: 0 printed, 2 usage error or settle not built.
`;

export async function envtestAssetsCommand(argv: string[]): Promise<number> {
  const { positionals } = parse(argv, {});
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  // From src/cli and dist/cli alike, the package root is two folders up; the scripts run the compiled entry.
  const root = new URL("../../", import.meta.url);
  const entry = fileURLToPath(new URL("dist/envtest/main.js", root));
  if (!existsSync(entry)) {
    process.stderr.write(`settle envtest-assets: ${entry} is missing; build settle with \`npm run build\`\n`);
    return 2;
  }
  const { version } = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { version: string };
  const dir = assetsDirectory(process.env);
  ensureAssets(dir, { version, entry, node: process.execPath });
  process.stdout.write(`${dir}\n`);
  return 0;
}
