// Entry point of the `settle` command. Exit codes: 0 no finding, 1 a finding, 2 usage or input error,
// 3 a replay that diverged (nondeterminism).
import { readFileSync } from "node:fs";
import { UsageError } from "./args.ts";
import { exploreCommand, exploreUsage } from "./explore.ts";
import { replayCommand, replayUsage } from "./replay.ts";
import { mergeCommand, mergeUsage } from "./merge.ts";
import { listExamplesCommand, listExamplesUsage } from "./list-examples.ts";
import { serveCommand, serveUsage } from "./serve.ts";
import { reportCommand, reportUsage } from "./report.ts";
import { drillCommand, drillUsage } from "./drill.ts";
import { ScenarioError } from "../explore/run.ts";
import { ReplayFileError } from "../explore/findings.ts";

const usage = `settle — find, reproduce and explain controllers that go quiet while the world is wrong

Usage: settle <command> [options]

Commands:
  explore <scenario-or-dir>   run many seeded schedules with faults; report and shrink what fails
  replay <file>               re-run a finding from its replay file, byte for byte
  merge <dirs...>             combine the findings of shards (settle explore --shard i/n)
  list-examples [dir]         list the bundled example scenarios and their variants
  serve                       a Kubernetes-compatible API server over a store, for kubectl, helm, any client
  report <file>               render a finding as an HTML timeline or JUnit XML
  drill <scenario> -- <cmd>   kill a real controller process after each of its writes and check it converges
  help [command]              show help for a command

Options:
  -h, --help        show help
  -V, --version     print the version

Exit codes: 0 no finding, 1 a finding, 2 usage or input error, 3 a replay diverged.
`;

interface Command {
  usage: string;
  run(argv: string[]): Promise<number>;
}

const commands: Record<string, Command> = {
  explore: { usage: exploreUsage, run: exploreCommand },
  replay: { usage: replayUsage, run: replayCommand },
  merge: { usage: mergeUsage, run: mergeCommand },
  "list-examples": { usage: listExamplesUsage, run: listExamplesCommand },
  serve: { usage: serveUsage, run: serveCommand },
  report: { usage: reportUsage, run: reportCommand },
  drill: { usage: drillUsage, run: drillCommand },
};

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
    process.stdout.write(topic?.usage ?? usage);
    return 0;
  }
  if (name === "-V" || name === "--version" || name === "version") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  const command = commands[name];
  if (command === undefined) {
    process.stderr.write(`settle: unknown command "${name}"\nRun "settle --help" for the list of commands.\n`);
    return 2;
  }
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
    if (error instanceof ScenarioError || error instanceof ReplayFileError) {
      process.stderr.write(`settle ${name}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
