// A `scenario.yaml` as an explorable scenario: its world as the setup, its workload steps as the workload actor,
// its CEL properties, the default fault budget, and each variant's `module:` run by `moduleActor` or `go:` run by
// `goActor` (built for js/wasm once, before any run). A variant with only a `command:` runs a process, which only
// `settle drill` can run.
import { dirname, relative, resolve } from "node:path";
import { createStore } from "../store/index.ts";
import { kernelAccess } from "../sim/access.ts";
import { createSimulation } from "../sim/simulation.ts";
import type { WorldView } from "../sim/types.ts";
import { scenario, type Scenario, type VariantInfo, type WorkloadContext } from "./scenario.ts";
import { ScenarioError } from "./run.ts";
import { createWorld, type YamlScenario } from "../scenario-yaml/load.ts";
import { runWorkload } from "../scenario-yaml/workload.ts";
import { checkModule, moduleActor } from "../module/actor.ts";
import { ModuleLoadError, notePreflight, preflightKey, preflightPassed } from "../module/loader.ts";
import { cloneJson } from "../api/json.ts";
import { goActor } from "../go/actor.ts";
import { buildGoProgram, GoBuildError } from "../go/build.ts";
import { variantCommand } from "./example-commands.ts";

/** The actor name of a YAML scenario's module. */
export const MODULE_ACTOR = "controller";

/** Builds the explorable scenario; throws `ScenarioError` (exit 2) for variants without a module or modules that do not load. */
export function yamlExploreScenario(yaml: YamlScenario): Scenario {
  const shown = relative(process.cwd(), yaml.path) || yaml.path;
  const modules = Object.entries(yaml.variants).filter(([, v]) => v.module !== undefined);
  const programs = Object.entries(yaml.variants).filter(([, v]) => v.go !== undefined);
  if (modules.length === 0 && programs.length === 0) {
    const first = Object.keys(yaml.variants)[0] ?? "V";
    throw new ScenarioError(`${shown}: no variant gives a module: or go: (its controllers are commands, which run as processes): settle explore runs Node.js modules and Go programs in the simulator; use ${variantCommand("drill", shown, first)}`);
  }
  const dir = dirname(yaml.path);
  for (const [name, variant] of programs) {
    try {
      buildGoProgram(variant.go!, (toolchain) => {
        process.stderr.write(`settle explore: building ${shown}: variants.${name}.go: ${relative(process.cwd(), variant.go!) || "."} for js/wasm with ${toolchain.version} (cached after this; a first build of controller-runtime or client-go takes minutes)\n`);
      });
    } catch (error) {
      if (error instanceof GoBuildError) throw new ScenarioError(`${shown}: variant ${name}: ${error.message}`);
      throw error;
    }
  }
  for (const [name, variant] of modules) {
    try {
      checkModule({ module: resolve(dir, variant.module!) });
      preflight(resolve(dir, variant.module!), variant.args ?? [], variant.env ?? {});
    } catch (error) {
      if (error instanceof ModuleLoadError) throw new ScenarioError(`${shown}: variant ${name}: ${error.message}`);
      throw error;
    }
  }
  const variants: Record<string, VariantInfo> = {};
  for (const [name, variant] of Object.entries(yaml.variants)) {
    const info: VariantInfo = { expect: variant.expect ?? "ok" };
    if (variant.description !== undefined) info.description = variant.description;
    variants[name] = info;
  }
  // Which kinds are namespaced, from a scratch store holding the world (its CRDs included).
  const scratch = createStore({ now: () => 0 });
  createWorld(scratch, yaml.world);
  return scenario({
    name: yaml.name,
    ...(yaml.description === undefined ? {} : { description: yaml.description }),
    variants,
    setup(_ctx, world) {
      const uids = new Map<string, string>();
      for (const source of yaml.world) {
        const object = cloneJson(source);
        const resource = scratch.resourceFor(object);
        if (object.metadata.namespace === undefined && resource.namespaced) object.metadata.namespace = "default";
        for (const ref of object.metadata.ownerReferences ?? []) {
          if (ref.uid === undefined || ref.uid === "") ref.uid = uids.get(`${ref.kind}/${object.metadata.namespace ?? ""}/${ref.name}`) ?? uids.get(`${ref.kind}//${ref.name}`) ?? "";
        }
        const status = object.status;
        const created = world.create(object);
        uids.set(`${created.kind}/${created.metadata.namespace ?? ""}/${created.metadata.name ?? ""}`, created.metadata.uid ?? "");
        if (status !== undefined && resource.statusSubresource) world.updateStatus({ ...created, status });
      }
    },
    actors(ctx) {
      const variant = yaml.variants[ctx.variant]!;
      if (variant.go !== undefined) {
        const options = { name: MODULE_ACTOR, dir: variant.go, args: variant.args ?? [], env: variant.env ?? {} };
        return goActor(variant.replicas === undefined ? options : { ...options, replicas: variant.replicas });
      }
      if (variant.module === undefined) {
        throw new ScenarioError(`${shown}: variant ${ctx.variant} gives a command, not a module or a Go program: use ${variantCommand("drill", shown, ctx.variant)}`);
      }
      return [moduleActor({ name: MODULE_ACTOR, module: resolve(dir, variant.module), args: variant.args ?? [], env: variant.env ?? {} })];
    },
    workloads: { steps: (wctx) => runSteps(yaml, wctx) },
    properties: () => yaml.properties,
  });
}

/**
 * Evaluates the module once in a scratch simulation, for as long as its top level runs without a server answer
 * it waits for: a module that throws while loading is bad input, named before any exploration starts.
 */
function preflight(path: string, args: readonly string[], env: Readonly<Record<string, string>>): void {
  // Deferred: the check runs in `loadYamlExplore`, which awaits it (see there).
  pendingPreflights.push({ path, args, env });
}

const pendingPreflights: Array<{ path: string; args: readonly string[]; env: Readonly<Record<string, string>> }> = [];

/** Loads a YAML scenario for explore, with every module variant evaluated once (bad input is a `ScenarioError`). */
export async function loadYamlExplore(yaml: YamlScenario): Promise<Scenario> {
  pendingPreflights.length = 0;
  const built = yamlExploreScenario(yaml);
  const shown = relative(process.cwd(), yaml.path) || yaml.path;
  for (const { path, args, env } of pendingPreflights.splice(0)) {
    // Passed before in this thread, or in the main thread that started this worker (src/explore/worker.ts).
    const key = preflightKey(path, args, env);
    if (preflightPassed(key)) continue;
    const sim = createSimulation({ seed: 0, traceMode: "hash-only" });
    sim.addActor(moduleActor({ name: MODULE_ACTOR, module: path, args, env }));
    const result = await sim.run({ maxSteps: 1 });
    const threw = result.status === "actor-error" && result.message !== undefined && result.message.includes("threw while loading");
    notePreflight(key, !threw);
    if (threw) throw new ScenarioError(`${shown}: ${result.message!.replace(/^actor \S+ failed: /, "")}`);
  }
  return built;
}

/** How often a `waitFor` looks at the world again, in virtual ms (each look is a timer step of the workload). */
const WAIT_POLL_MS = 250;

/** The workload actor: the shared interpreter on the simulation's clock, reading the world between its own steps. */
async function runSteps(yaml: YamlScenario, ctx: WorkloadContext): Promise<void> {
  await runWorkload(yaml, {
    client: ctx.client,
    now: () => ctx.clock.now(),
    sleep: (ms) => ctx.clock.sleep(ms),
    view: storeView(ctx),
    nextCheck: () => ctx.clock.sleep(WAIT_POLL_MS),
    note: (line) => ctx.log(line),
  });
}

function storeView(ctx: WorkloadContext): WorldView {
  const { kernel } = kernelAccess(ctx);
  const store = kernel.store;
  return {
    get revision() {
      return store.revision;
    },
    now: () => kernel.clock.now(),
    get: (ref) => {
      try {
        return store.get(ref);
      } catch {
        return undefined;
      }
    },
    list: (options) => store.list(options).items,
    external: () => {
      throw new Error("a YAML scenario has no external state");
    },
  };
}
