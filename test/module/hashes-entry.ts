// Prints the trace hash of framework-example runs, one line per run: `<example> <variant> <seed> <hash>`. Two
// processes given the same arguments must print the same lines (the determinism test in module.test.ts, and the
// bench's `module-determinism` section, which runs one of them beside a CPU burner). Each seed runs one variant,
// delta and level in turn, with faults drawn from the default budget as `settle explore` draws them.
//   node --conditions=settle-source --import tsx test/module/hashes-entry.ts EXAMPLE[,EXAMPLE...] FIRST_SEED COUNT
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runScenario } from "../../src/explore/run.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const [examples = "", firstText = "1", countText = "1"] = process.argv.slice(2);
const first = Number(firstText);
const count = Number(countText);
if (examples === "" || !Number.isInteger(first) || !Number.isInteger(count) || count < 1) {
  process.stderr.write("usage: hashes-entry.ts EXAMPLE[,EXAMPLE...] FIRST_SEED COUNT\n");
  process.exit(2);
}
// The examples log to stderr themselves; the parent reads stdout only.
for (const example of examples.split(",")) {
  const scenario = await loadYamlExplore(loadYamlScenario(join(repo, "examples/frameworks", example, "scenario.yaml")));
  const variants = ["delta", "level"].filter((v) => v in scenario.variants);
  const workload = Object.keys(scenario.workloads)[0]!;
  for (let seed = first; seed < first + count; seed++) {
    const variant = variants[seed % variants.length]!;
    const outcome = await runScenario(scenario, { variant, workload, params: {}, seed, drawFaults: true });
    // Line by line: a run that ends the process leaves the ones before it (and so names itself).
    process.stdout.write(`${example} ${variant} ${seed} ${outcome.traceHash}\n`);
  }
}
