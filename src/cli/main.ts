// Entry point of the `settle` command. Exit codes: 0 no finding, 1 a finding, 2 usage or input error,
// 3 a replay that diverged (nondeterminism).
import { readFileSync } from "node:fs";
import { UsageError } from "./args.ts";

const usage = `settle — find, reproduce and explain controllers that go quiet while the world is wrong

Usage: settle <command> [options]

Commands:
  explore <scenario-or-dir>   run many seeded schedules with faults; report and shrink what fails
  replay <file>               re-run a finding from its replay file, byte for byte
  merge <dirs...>             combine the findings of shards (settle explore --shard i/n)
  list-examples [dir]         list the example scenarios (code and scenario.yaml), their variants and how to run each
  serve                       a Kubernetes-compatible API server over a store, for kubectl, helm, any client
  envtest-assets              print a KUBEBUILDER_ASSETS directory whose kube-apiserver and etcd are settle's
  report <file>               render a finding as an HTML timeline or JUnit XML
  drill <scenario> -- <cmd>   kill a real controller process after each of its writes and check it converges
  init [--crd FILE]           scaffold a scenario and a test for your controller (from a CRD if given)
  job --shards N --image IMG -- <explore args>   print a Kubernetes Indexed Job that explores in N shards
  help [command]              show help for a command

Options:
  -h, --help        show help
  -V, --version     print the version

Exit codes: 0 no finding, 1 a finding, 2 usage or input error, 3 a replay diverged, 141 the reader of the
output stopped early (settle ... | head).
`;

interface Command {
  usage: string;
  run(argv: string[]): Promise<number>;
}

// Each command's module is imported only when that command runs, so a start pays only for what it uses
// (`settle --version` loads no simulator, and only `drill` loads @kubernetes/client-node).
const commands: Record<string, () => Promise<Command>> = {
  explore: async () => import("./explore.ts").then((m) => ({ usage: m.exploreUsage, run: m.exploreCommand })),
  replay: async () => import("./replay.ts").then((m) => ({ usage: m.replayUsage, run: m.replayCommand })),
  merge: async () => import("./merge.ts").then((m) => ({ usage: m.mergeUsage, run: m.mergeCommand })),
  "list-examples": async () => import("./list-examples.ts").then((m) => ({ usage: m.listExamplesUsage, run: m.listExamplesCommand })),
  serve: async () => import("./serve.ts").then((m) => ({ usage: m.serveUsage, run: m.serveCommand })),
  "envtest-assets": async () => import("./envtest-assets.ts").then((m) => ({ usage: m.envtestAssetsUsage, run: m.envtestAssetsCommand })),
  report: async () => import("./report.ts").then((m) => ({ usage: m.reportUsage, run: m.reportCommand })),
  drill: async () => import("./drill.ts").then((m) => ({ usage: m.drillUsage, run: m.drillCommand })),
  init: async () => import("./init.ts").then((m) => ({ usage: m.initUsage, run: m.initCommand })),
  job: async () => import("./job.ts").then((m) => ({ usage: m.jobUsage, run: m.jobCommand })),
};

/** The error, when it is an input error a command reports with exit code 2 (its module is loaded by then). */
async function inputError(error: unknown): Promise<Error | undefined> {
  const [{ ScenarioError }, { ReplayFileError }, { GoBuildError }] = await Promise.all([import("../explore/run.ts"), import("../explore/findings.ts"), import("../go/build.ts")]);
  return error instanceof ScenarioError || error instanceof ReplayFileError || error instanceof GoBuildError ? error : undefined;
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(usage);
    return 2;
  }
  if (name === "-h" || name === "--help") {
    process.stdout.write(usage);
    return 0;
  }
  if (name === "help") {
    const topic = rest[0] === undefined ? undefined : commands[rest[0]];
    process.stdout.write(topic === undefined ? usage : (await topic()).usage);
    return 0;
  }
  if (name === "-V" || name === "--version" || name === "version") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const load = commands[name];
  if (load === undefined) {
    process.stderr.write(`settle: unknown command "${name}"\nRun "settle --help" for the list of commands.\n`);
    return 2;
  }
  const command = await load();
  const ownArgs = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (ownArgs.includes("-h") || ownArgs.includes("--help")) {
    process.stdout.write(command.usage);
    return 0;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`settle ${name}: ${error.message}\nRun "settle ${name} --help" for usage.\n`);
      return 2;
    }
    const input = await inputError(error);
    if (input !== undefined) {
      process.stderr.write(`settle ${name}: ${input.message}\n`);
      return 2;
    }
    // Not 1: scripts read 1 as "a finding". An error settle did not expect is reported with its stack.
    const stack = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
    process.stderr.write(`settle ${name}: unexpected error (a bug in settle, or input it does not check yet):\n${stack}\n`);
    return 2;
  }
}
