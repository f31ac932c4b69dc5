// Per-run set-up paid once per worker: a scenario's setup objects go through the store's whole write path (CRD
// checks and schema compilation, validation, defaults, admission) in the first run of a (scenario, variant,
// workload, params); later runs in the same worker commit the same writes again from a snapshot. The trace and
// the world are the same either way: the snapshot holds the very objects, revisions, uids and names.
//
// What this relies on, as `Scenario.setup`'s doc says: setup is a function of its context whose only effect is
// the objects it writes (it is not called again for a snapshot), and admission is a function of the write.
import type { Store } from "../store/types.ts";
import { MemoryStore, type StoreSnapshot } from "../store/store.ts";
import type { Scenario, ScenarioContext } from "./scenario.ts";

/** Per scenario, per context (as JSON): its setup's snapshot, or null when its store could not take one. */
const snapshots = new WeakMap<Scenario, Map<string, StoreSnapshot | null>>();
/** Contexts remembered per scenario: a bound for explorations that sweep parameters. */
const contextsPerScenarioMax = 64;

/** Builds the setup of `scenario` for `ctx` into `store`: from this worker's snapshot if it has one, else by `setup`. */
export function setupOnce(scenario: Scenario, ctx: ScenarioContext, store: Store, setup: () => void): void {
  if (!(store instanceof MemoryStore)) return setup();
  let byContext = snapshots.get(scenario);
  if (byContext === undefined) snapshots.set(scenario, (byContext = new Map()));
  const key = JSON.stringify([ctx.variant, ctx.workload, ctx.params]);
  const known = byContext.get(key);
  if (known !== undefined && known !== null && store.restore(known)) return;
  const mark = store.mark();
  setup();
  if (known === undefined && byContext.size < contextsPerScenarioMax) byContext.set(key, store.snapshot(mark) ?? null);
}
