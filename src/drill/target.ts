// What a drill needs of a scenario, whatever it is written in: the world at the start, the properties, the
// workload (run against the API server with a real client) and, optionally, a summary line and the controller
// command. A TypeScript scenario and a YAML scenario both become a `DrillTarget`.
import { realClock } from "../api/clock.ts";
import type { Client } from "../api/client.ts";
import type { KubeObject } from "../api/object.ts";
import { cloneJson } from "../api/json.ts";
import type { Property } from "../check/properties.ts";
import { describeThrown, thrownLine } from "../check/thrown.ts";
import type { ThrownError } from "../check/verdict.ts";
import { scenarioCall } from "../explore/run.ts";
import { workloadContext, type Scenario, type ScenarioContext } from "../explore/scenario.ts";
import { createStore } from "../store/index.ts";
import { Rng } from "../sim/rng.ts";
import type { ActorContext, WorldView } from "../sim/types.ts";
import type { Store } from "../store/types.ts";

export interface DrillTarget {
  /** The scenario's name, for reports and artifact paths. */
  name: string;
  variant: string;
  workload: string;
  /** Creates the objects present at the start in a fresh store. */
  setup(store: Store): void;
  properties: readonly Property[];
  /**
   * Applies the workload through `client` (the API server, as an admin); `view` reads the store directly, and
   * `events` says when it changes (so a wait for a condition needs no polling).
   */
  runWorkload(client: Client, view: WorldView, events: WorkloadEvents): Promise<void>;
  /** One line describing the world once quiet, if the scenario has one. */
  summary?(view: WorldView): string;
  /** Named external state the properties may read (a drill sees only the API server, so usually none). */
  externals?: Record<string, unknown>;
  /**
   * The controller command the variant declares (YAML scenarios: its `command`, else `node MODULE ARGS...` for a
   * `module:` variant); a command after `--` overrides it.
   */
  command?: readonly string[];
  /** The controller's working directory (YAML scenarios: the scenario's folder). Default: the drill's. */
  cwd?: string;
  /** Extra environment variables for the controller. */
  env?: Record<string, string>;
  /** The verdict the variant expects of a drill: `finding` (buggy) or `ok` (fixed). */
  expect?: "finding" | "ok";
  /** The scenario's own drill settings, used where the drill's options say nothing. */
  defaults?: { quietMs?: number; timeoutMs?: number; faultKinds?: readonly string[]; afterWrites?: readonly number[]; coldStart?: boolean };
  /** How to run this target again, for the replay line of a report (without the controller command). */
  rerun: string;
}

/** What a workload learns of the world as it changes. */
export interface WorkloadEvents {
  /** Resolves on the store's next write (by anyone). */
  nextChange(): Promise<void>;
  /** A line for the run's report (a `waitFor` that timed out and ended the workload). */
  note?(line: string): void;
}

/**
 * The scenario's own code threw (a TypeScript workload): the run ends in a scenario error (exit code 2), never a
 * finding about the controller. Carries the exception as reports show it.
 */
export class ScenarioThrew extends Error {
  override name = "ScenarioThrew";
  constructor(readonly thrown: ThrownError) {
    super(thrownLine(thrown));
  }
}

/** A TypeScript scenario (`scenario({...})`) for one variant and workload. */
export function targetFromScenario(scenario: Scenario, ctx: ScenarioContext, path = scenario.name): DrillTarget {
  const fn = scenario.workloads[ctx.workload];
  if (fn === undefined) throw new Error(`drill: unknown workload "${ctx.workload}"`);
  const target: DrillTarget = {
    name: scenario.name,
    variant: ctx.variant,
    workload: ctx.workload,
    setup: (store) => {
      const world = {
        create: <T extends KubeObject>(o: T) => cloneJson(store.create(cloneJson(o))) as T,
        updateStatus: <T extends KubeObject>(o: T) => cloneJson(store.updateStatus(cloneJson(o))) as T,
      };
      for (const object of scenario.setup?.(ctx, world) ?? []) world.create(object);
    },
    properties: scenarioCall(scenario, "properties", () => scenario.properties(ctx)),
    runWorkload: async (client) => {
      const actx: ActorContext = {
        name: "user",
        incarnation: 0,
        client,
        clock: realClock,
        rng: new Rng(1),
        log: () => {},
        external: () => {
          throw new Error("drill: workloads cannot use external state (a drill sees only the API server)");
        },
      };
      // A drill has no deadlines counted from marks (it judges after a quiet window), so a mark is only accepted.
      try {
        await fn(workloadContext(actx, scenario.timing, realClock.now(), () => {}), ctx);
      } catch (error) {
        // As in explore: what the workload's own code throws is the scenario's mistake, not the controller's.
        throw new ScenarioThrew(describeThrown(`workload "${ctx.workload}"`, error));
      }
    },
    externals: scenarioCall(scenario, "externals", () => scenario.externals?.(ctx) ?? {}),
    rerun: `settle drill ${path} --variant ${ctx.variant} --workload ${ctx.workload}`,
  };
  if (scenario.summary !== undefined) target.summary = scenario.summary;
  // The variant's expectation, so the drill's last line says whether its outcome was the expected one.
  const expect = scenario.variants[ctx.variant]?.expect;
  if (expect !== undefined) target.expect = expect;
  // The setup runs once here, into a scratch store, so that one that throws (or creates a bad object) stops the
  // drill before it starts, as a ScenarioError (exit code 2) with the user's file:line, as in explore.
  scenarioCall(scenario, "setup", () => target.setup(createStore({ now: () => realClock.now() })));
  return target;
}
