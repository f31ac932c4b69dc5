// envtest figures (`npm run bench -- envtest`): controller-runtime's envtest Start() to Stop() on settle's assets
// (`settle envtest-assets`: its etcd and kube-apiserver processes, certificates, health checks, the CRD installed
// and waited for), and the kubebuilder example's whole `go test` (build cached), each against the same steps on
// `settle serve` started directly (envtest with an existing cluster). The suite's AddUser spec needs envtest's own
// control plane, so both suite runs skip it. Needs Go (on PATH or /usr/local/go).
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawn } from "node:child_process";

const repo = fileURLToPath(new URL("../", import.meta.url));
const example = join(repo, "examples", "go", "kubebuilder-greeter");
const settle = join(repo, "bin", "settle.js");
const rounds = Number(process.env.SETTLE_BENCH_ROUNDS ?? 5);

function goCommand(): string {
  if (spawnSync("go", ["version"]).status === 0) return "go";
  return "/usr/local/go/bin/go";
}

function assets(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "settle-bench-envtest-")), "assets");
  const made = spawnSync(process.execPath, [settle, "envtest-assets"], { env: { ...process.env, SETTLE_ENVTEST_ASSETS_DIR: dir }, encoding: "utf8" });
  if (made.status !== 0) throw new Error(`settle envtest-assets: ${made.stderr}`);
  return made.stdout.trim();
}

function go(args: string[], env: NodeJS.ProcessEnv): { stdout: string; wallMs: number } {
  const start = performance.now();
  const ran = spawnSync(goCommand(), args, { cwd: example, env: { ...process.env, GOFLAGS: "-mod=readonly", ...env }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const wallMs = performance.now() - start;
  if (ran.status !== 0) throw new Error(`go ${args.join(" ")}: exit ${ran.status}\n${ran.stdout.slice(-4000)}\n${ran.stderr.slice(-4000)}`);
  return { stdout: ran.stdout, wallMs };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function startStopMs(env: NodeJS.ProcessEnv): number {
  const { stdout } = go(["test", "-count=1", "-tags", "settlebench", "-run", "^TestEnvtestStartStop$", "-v", "./internal/controller"], { SETTLE_BENCH_ROUNDS: String(rounds), ...env });
  const times = [...stdout.matchAll(/^startstop (\d+)$/gm)].map((m) => Number(m[1]) / 1e6);
  if (times.length !== rounds) throw new Error(`expected ${rounds} rounds, got ${times.length}:\n${stdout.slice(-2000)}`);
  return median(times);
}

/** The suite's wall time against a `settle serve` started here and stopped after. */
async function suiteOnServeMs(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), "settle-bench-envtest-serve-"));
  const kubeconfig = join(dir, "kubeconfig");
  const start = performance.now();
  const server = spawn(process.execPath, [settle, "serve", "--port", "0", "--kubeconfig-out", kubeconfig], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve) => server.stdout!.once("data", () => resolve()));
  try {
    go(["test", "-count=1", "./internal/controller", "-args", "-ginkgo.skip=AddUser"], { USE_EXISTING_CLUSTER: "true", KUBECONFIG: kubeconfig });
  } finally {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
  }
  return performance.now() - start;
}

export async function benchEnvtest(): Promise<Record<string, string | number>> {
  const dir = assets();
  // Build once so neither measured run pays the compile.
  go(["test", "-count=1", "-run", "^$", "./internal/controller"], {});
  go(["test", "-count=1", "-tags", "settlebench", "-run", "^$", "./internal/controller"], {});
  const onAssets = startStopMs({ KUBEBUILDER_ASSETS: dir });
  const onServe = startStopMs({ SETTLE_BENCH_SERVE: `${process.execPath} ${settle}` });
  const suiteAssets = go(["test", "-count=1", "./internal/controller", "-args", "-ginkgo.skip=AddUser"], { KUBEBUILDER_ASSETS: dir }).wallMs;
  const suiteServe = await suiteOnServeMs();
  return {
    [`envtest Start() to Stop() on settle envtest-assets, median of ${rounds}: ms`]: onAssets.toFixed(0),
    [`the same steps on settle serve started directly (existing cluster): ms`]: onServe.toFixed(0),
    "ratio, assets / serve": (onAssets / onServe).toFixed(2),
    "examples/go/kubebuilder-greeter go test on the assets (AddUser spec skipped): ms": suiteAssets.toFixed(0),
    "the same suite on settle serve started directly: ms": suiteServe.toFixed(0),
    "suite ratio, assets / serve": (suiteAssets / suiteServe).toFixed(2),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchEnvtest());
