import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { findExampleDirs, hasScenario, loadScenario, resolveScenarioPath } from "../explore/load.ts";
import { ScenarioError } from "../explore/run.ts";
import type { Params } from "../explore/scenario.ts";
import { parse, UsageError } from "./args.ts";
import { variantCommand, yamlVariantRunners, type Runner } from "../explore/example-commands.ts";

export const listExamplesUsage = `Usage: settle list-examples [dir] [--json]

Lists the example scenarios under dir (default: ./examples, as in a clone of settle): each folder right under it
that holds a scenario file or a scenario.yaml, and those one level further down in a folder of examples (as
examples/frameworks and examples/zoo). For each, its variants, workloads and params; for a scenario.yaml, also
which variants settle explore runs (those that give a program: a Node.js module or a Go package) and which only
settle drill runs (those that give only a command), with the command that runs each. --json gives each variant's
run (the command to reach for) and commands (every command that runs it, with what it is expected to find: the
variant's expect, or under settle drill its drillExpect).
`;

interface VariantRow {
  expect: "finding" | "ok";
  description?: string;
  /** The commands that run it, the first the one to reach for. */
  runsIn: Runner[];
  /** How to run it, as a command line: the first of `commands`. */
  run: string;
  /** Every command line that runs it, one per runner of `runsIn`, in that order, with what it finds. */
  commands: VariantCommand[];
}

interface VariantCommand {
  runner: Runner;
  run: string;
  /** What the command finds: the variant's `expect`, or under settle drill its `drillExpect` when it has one. */
  expect: "finding" | "ok";
}

interface Row {
  /** The example's folder, relative to the working directory. */
  path: string;
  /** Its scenario file, relative to the working directory. */
  scenario: string;
  kind: "code" | "yaml";
  name: string;
  description: string;
  variants: Record<string, VariantRow>;
  workloads: string[];
  params: Params;
}

/** Folders of examples within `dir`: those right under it and, in a subfolder holding no scenario, those under that. */
function exampleDirs(dir: string): string[] {
  const found = findExampleDirs(dir, { yaml: true });
  for (const name of readdirSync(dir)) {
    const sub = join(dir, name);
    if (!statSync(sub).isDirectory() || hasScenario(sub)) continue;
    found.push(...findExampleDirs(sub, { yaml: true }));
  }
  return found.sort();
}

async function codeRow(exampleDir: string, scenarioPath: string): Promise<Row> {
  const s = await loadScenario(scenarioPath);
  const shown = relative(process.cwd(), scenarioPath);
  const variants: Record<string, VariantRow> = {};
  for (const [name, info] of Object.entries(s.variants)) {
    const run = variantCommand("explore", shown, name);
    variants[name] = { ...info, runsIn: ["explore"], run, commands: [{ runner: "explore", run, expect: info.expect }] };
  }
  return { path: relative(process.cwd(), exampleDir), scenario: shown, kind: "code", name: s.name, description: s.description ?? "", variants, workloads: Object.keys(s.workloads), params: s.params };
}

/** A scenario.yaml, read without running anything: its modules are not loaded (settle explore checks them). */
async function yamlRow(exampleDir: string, scenarioPath: string): Promise<Row> {
  const { loadYamlScenario, ScenarioYamlError } = await import("../scenario-yaml/load.ts");
  let yaml;
  try {
    yaml = loadYamlScenario(scenarioPath);
  } catch (error) {
    if (error instanceof ScenarioYamlError) throw new ScenarioError(error.message);
    throw error;
  }
  const shown = relative(process.cwd(), scenarioPath);
  const variants: Record<string, VariantRow> = {};
  for (const [name, variant] of Object.entries(yaml.variants)) {
    // A module runs in the simulator, and under settle drill as `node MODULE ARGS...` when no command is given.
    const runsIn = yamlVariantRunners(variant);
    const expect = variant.expect ?? "ok";
    const commands = runsIn.map((runner) => ({ runner, run: variantCommand(runner, shown, name), expect: runner === "drill" ? (variant.drillExpect ?? expect) : expect }));
    variants[name] = {
      expect,
      ...(variant.description === undefined ? {} : { description: variant.description }),
      runsIn,
      run: commands[0]!.run,
      commands,
    };
  }
  // The explorable form of a scenario.yaml has one workload, its steps, and no params.
  return { path: relative(process.cwd(), exampleDir), scenario: shown, kind: "yaml", name: yaml.name, description: yaml.description ?? "", variants, workloads: ["steps"], params: {} };
}

export async function listExamplesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  const dir = positionals[0] ?? "examples";
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    // The bundled examples live in settle's repository; an installed package has none.
    const hint = positionals[0] === undefined ? " (the bundled examples are in settle's source repository, not in the npm package; give the folder of your own scenarios)" : "";
    throw new UsageError(`${dir}: no such directory${hint}`);
  }
  const rows: Row[] = [];
  for (const exampleDir of exampleDirs(dir)) {
    const scenarioPath = resolveScenarioPath(exampleDir);
    rows.push(/\.ya?ml$/i.test(scenarioPath) ? await yamlRow(exampleDir, scenarioPath) : await codeRow(exampleDir, scenarioPath));
  }
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  }
  if (rows.length === 0) process.stderr.write(`no example scenarios under ${dir}\n`);
  for (const row of rows) writeRow(row);
  return 0;
}

function writeRow(row: Row): void {
  process.stdout.write(`${row.path}  (${row.name}) ${row.description}\n`);
  const variants = Object.entries(row.variants);
  const width = Math.max(10, ...variants.map(([name]) => name.length));
  for (const [variant, info] of variants) {
    const where = row.kind === "code" ? "" : (info.runsIn.includes("explore") ? "explore+drill" : "drill only").padEnd(15);
    // An expectation of settle drill's own (a drillExpect) is said after the description.
    const drill = info.commands.find((c) => c.runner === "drill" && c.expect !== info.expect);
    const drillNote = drill === undefined ? "" : ` (settle drill expects ${drill.expect === "finding" ? "a finding" : "none"})`;
    process.stdout.write(`  --variant ${variant.padEnd(width)} expect ${info.expect.padEnd(8)} ${where}${info.description ?? ""}${drillNote}\n`);
  }
  if (row.kind === "code") {
    process.stdout.write(`  workloads: ${row.workloads.join(", ")}\n`);
    const params = Object.entries(row.params).map(([k, v]) => `${k}=${String(v)}`);
    if (params.length > 0) process.stdout.write(`  params: ${params.join(" ")}\n`);
  }
  // How to run them: the command for the variants of each kind, with V for the variant's name.
  const explored = variants.filter(([, info]) => info.runsIn.includes("explore")).map(([name]) => name);
  if (explored.length > 0) {
    const which = row.kind === "yaml" && explored.length < variants.length ? ` (V: ${explored.join(", ")})` : "";
    process.stdout.write(`  explore: ${variantCommand("explore", row.scenario, "V")}${which}\n`);
  }
  if (row.kind === "yaml") {
    const modules = explored.length > 0 ? " (a module runs as node MODULE ARGS)" : "";
    process.stdout.write(`  drill:   ${variantCommand("drill", row.scenario, "V")}${modules}\n`);
  }
}
