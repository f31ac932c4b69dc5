// Declarative scenarios for any-language controllers: `scenario.yaml` files (world, workload steps, CEL
// properties, fault budget), validated against a JSON Schema and run by `settle drill` and `settle serve --setup`.
export { createWorld, isScenarioText, isYamlScenarioPath, loadYamlScenario, ScenarioYamlError } from "./load.ts";
export type { WorkloadStep, YamlScenario, YamlVariant } from "./load.ts";
export { scenarioSchema } from "./schema.ts";
export { compileWorldExpression, kindTable } from "./world.ts";
