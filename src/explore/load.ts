// Finding and loading scenario files. Scenario files are TypeScript; the CLI runs under tsx, and so do
// its worker threads.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { isScenario, type Scenario } from "./scenario.ts";
import { ScenarioError } from "./run.ts";

const scenarioFiles = ["scenario.ts", "scenario.mts", "scenario.js", "scenario.mjs"];

/** A scenario file, or an example folder holding one, to the absolute path of the file. */
export function resolveScenarioPath(target: string): string {
  const path = resolve(target);
  if (!existsSync(path)) throw new ScenarioError(`${target}: no such file or directory`);
  if (!statSync(path).isDirectory()) return path;
  for (const name of scenarioFiles) {
    if (existsSync(join(path, name))) return join(path, name);
  }
  throw new ScenarioError(`${target}: a directory without a scenario file (expected one of ${scenarioFiles.join(", ")})`);
}

/** True for a scenario file, or a folder that holds one directly. */
export function hasScenario(target: string): boolean {
  const path = resolve(target);
  if (!existsSync(path)) return false;
  if (!statSync(path).isDirectory()) return true;
  return scenarioFiles.some((name) => existsSync(join(path, name)));
}

/** The example folders (holding a scenario file) directly under `dir`, sorted by name. */
export function findExampleDirs(dir: string): string[] {
  const path = resolve(dir);
  if (!existsSync(path) || !statSync(path).isDirectory()) return [];
  return readdirSync(path)
    .sort()
    .map((name) => join(path, name))
    .filter((sub) => statSync(sub).isDirectory() && scenarioFiles.some((f) => existsSync(join(sub, f))));
}

export async function loadScenario(path: string): Promise<Scenario> {
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(path).href)) as { default?: unknown };
  } catch (error) {
    throw new ScenarioError(`${path}: could not load: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isScenario(module.default)) {
    throw new ScenarioError(`${path}: the default export is not a scenario (export default scenario({ ... }) from "settle/sim")`);
  }
  return module.default;
}
