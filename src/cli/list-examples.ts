import { existsSync, statSync } from "node:fs";
import { relative } from "node:path";
import { findExampleDirs, loadScenario, resolveScenarioPath } from "../explore/load.ts";
import { parse, UsageError } from "./args.ts";

export const listExamplesUsage = `Usage: settle list-examples [dir] [--json]

Lists the example scenarios under dir (default: ./examples, as in a clone of settle), with their variants,
workloads and params.
`;

export async function listExamplesCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  const dir = positionals[0] ?? "examples";
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    // The bundled examples live in settle's repository; an installed package has none.
    const hint = positionals[0] === undefined ? " (the bundled examples are in settle's source repository, not in the npm package; give the folder of your own scenarios)" : "";
    throw new UsageError(`${dir}: no such directory${hint}`);
  }
  const rows = [];
  for (const exampleDir of findExampleDirs(dir)) {
    const s = await loadScenario(resolveScenarioPath(exampleDir));
    rows.push({ path: relative(process.cwd(), exampleDir), name: s.name, description: s.description ?? "", variants: s.variants, workloads: Object.keys(s.workloads), params: s.params });
  }
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  }
  if (rows.length === 0) process.stderr.write(`no example scenarios under ${dir}\n`);
  for (const row of rows) {
    process.stdout.write(`${row.path}  (${row.name}) ${row.description}\n`);
    for (const [variant, info] of Object.entries(row.variants)) {
      process.stdout.write(`  --variant ${variant.padEnd(10)} expect ${info.expect.padEnd(8)} ${info.description ?? ""}\n`);
    }
    process.stdout.write(`  workloads: ${row.workloads.join(", ")}\n`);
    const params = Object.entries(row.params).map(([k, v]) => `${k}=${String(v)}`);
    if (params.length > 0) process.stdout.write(`  params: ${params.join(" ")}\n`);
  }
  return 0;
}
