// Prints the trace hash of runs of a Go fixture's scenario.yaml, one line per seed: `<variant> <seed> <hash>`, with
// faults drawn from the default budget as `settle explore` draws them. Two processes given the same arguments must
// print the same lines (test/go/clientgo.test.ts runs one of them beside a CPU burner).
//   node --conditions=settle-source --import tsx test/go/hashes-entry.ts SCENARIO_YAML FIRST_SEED COUNT
import { runScenario } from "../../src/explore/run.ts";
import { loadYamlExplore } from "../../src/explore/yaml.ts";
import { loadYamlScenario } from "../../src/scenario-yaml/load.ts";

const [path = "", firstText = "1", countText = "1"] = process.argv.slice(2);
const first = Number(firstText);
const count = Number(countText);
if (path === "" || !Number.isInteger(first) || !Number.isInteger(count) || count < 1) {
  process.stderr.write("usage: hashes-entry.ts SCENARIO_YAML FIRST_SEED COUNT\n");
  process.exit(2);
}
const scenario = await loadYamlExplore(loadYamlScenario(path));
const workload = Object.keys(scenario.workloads)[0]!;
for (let seed = first; seed < first + count; seed++) {
  for (const variant of Object.keys(scenario.variants)) {
    const outcome = await runScenario(scenario, { variant, workload, params: {}, seed, drawFaults: true });
    process.stdout.write(`${variant} ${seed} ${outcome.traceHash} ${outcome.verdict.kind}\n`);
  }
}
