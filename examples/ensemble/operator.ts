// The Ensemble operator: one Ensemble asks for `spec.voices` child ConfigMaps named `<name>-voice-<i>`.
//
// Two ways to write it, as in the drill this example comes from:
// - level (the fix): every reconcile reads `spec.voices` and the children that exist, and closes the gap.
//   Its input lives in the API server, so a restart loses nothing.
// - delta (the bug): the Update handler creates `new.spec.voices - old.spec.voices` children. Its input is the
//   event delivery itself, which lives only in process memory: kill the process mid-way and the rest of the
//   work is gone, while the operator sits healthy and idle.
import {
  Action,
  Informer,
  defineController,
  isAlreadyExists,
  isNotFound,
  runController,
  setControllerReference,
  type Client,
  type Clock,
  type KubeObject,
  type Log,
} from "settle";

export const ensembleKind = { apiVersion: "academy.settle.dev/v1", kind: "Ensemble" } as const;
export const configMapKind = { apiVersion: "v1", kind: "ConfigMap" } as const;

export interface Ensemble extends KubeObject {
  spec: { voices: number };
  status?: { readyVoices?: number; observedGeneration?: number };
}

export interface OperatorOptions {
  /** Sleep between one child create and the next: widens the window a kill can hit. */
  slowReconcileMs: number;
  /** The bug: act on `new - old` in the Update handler instead of reconciling to `spec.voices`. */
  deltaMode: boolean;
  /** Informer resync period (delivers `update(o, o)`). */
  resyncMs: number;
}

export interface OperatorContext {
  client: Client;
  clock: Clock;
  log: Log;
}

export function childName(ensemble: string, index: number): string {
  return `${ensemble}-voice-${index}`;
}

function childIndex(ensemble: string, name: string): number {
  const prefix = `${ensemble}-voice-`;
  return name.startsWith(prefix) ? Number(name.slice(prefix.length)) : Number.NaN;
}

function childOf(owner: Ensemble, index: number): KubeObject {
  const child: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: childName(owner.metadata.name!, index), namespace: owner.metadata.namespace, labels: { ensemble: owner.metadata.name! } },
    data: { voice: String(index) },
  };
  return setControllerReference(owner, child);
}

/** Creates a child; a create that finds it already there counts as done, since names are deterministic. */
async function createChild(client: Client, owner: Ensemble, index: number): Promise<void> {
  try {
    await client.create({ object: childOf(owner, index) });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}

async function deleteChild(client: Client, owner: Ensemble, index: number): Promise<void> {
  try {
    await client.delete({ ...configMapKind, namespace: owner.metadata.namespace!, name: childName(owner.metadata.name!, index) });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** The children that exist now, by index (a consistent list, not the cache). */
async function childIndexes(client: Client, owner: Ensemble): Promise<number[]> {
  const list = await client.list({ ...configMapKind, namespace: owner.metadata.namespace!, labelSelector: `ensemble=${owner.metadata.name}` });
  return list.items.map((cm) => childIndex(owner.metadata.name!, cm.metadata.name!)).filter(Number.isInteger).sort((a, b) => a - b);
}

async function writeStatus(client: Client, owner: Ensemble, readyVoices: number): Promise<void> {
  await client.patchStatus({
    ...ensembleKind,
    namespace: owner.metadata.namespace!,
    name: owner.metadata.name!,
    patchType: "merge",
    patch: { status: { readyVoices, observedGeneration: owner.metadata.generation } },
  });
}

/** The level-triggered operator: reconcile to `spec.voices`, whatever the trigger was. */
export async function runLevelOperator(ctx: OperatorContext, options: OperatorOptions): Promise<void> {
  const controller = defineController<Ensemble>({
    name: "ensemble",
    for: ensembleKind,
    owns: [configMapKind],
    resyncMs: options.resyncMs,
    async reconcile(ensemble, rctx) {
      const have = new Set(await childIndexes(rctx.client, ensemble));
      const voices = ensemble.spec.voices;
      for (let i = 0; i < voices; i++) {
        if (have.has(i)) continue;
        await createChild(rctx.client, ensemble, i);
        have.add(i);
        await rctx.clock.sleep(options.slowReconcileMs);
      }
      for (const i of [...have].filter((i) => i >= voices)) {
        await deleteChild(rctx.client, ensemble, i);
        have.delete(i);
      }
      await writeStatus(rctx.client, ensemble, have.size);
      return Action.awaitChange();
    },
  });
  const handle = runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log });
  await handle.done;
}

/** The delta-mode operator: the Update handler acts on `new - old`, inline, one event at a time. */
export async function runDeltaOperator(ctx: OperatorContext, options: OperatorOptions): Promise<void> {
  const informer = new Informer<Ensemble>({ client: ctx.client, clock: ctx.clock, kind: ensembleKind, resyncMs: options.resyncMs, log: ctx.log });
  let chain: Promise<void> = Promise.resolve();
  const onUpdate = async (oldObject: Ensemble, newObject: Ensemble): Promise<void> => {
    const from = oldObject.spec.voices;
    const to = newObject.spec.voices;
    for (let i = from; i < to; i++) {
      await createChild(ctx.client, newObject, i);
      await ctx.clock.sleep(options.slowReconcileMs);
    }
    for (let i = from - 1; i >= to; i--) await deleteChild(ctx.client, newObject, i);
    await writeStatus(ctx.client, newObject, (await childIndexes(ctx.client, newObject)).length);
  };
  informer.addHandler({
    // Nothing on add: the initial list after a restart does no child work. That is the bug's other half.
    update: (oldObject, newObject) => {
      // A failed handler is logged and forgotten, as client-go's handlers are: nothing retries it.
      chain = chain.then(() => onUpdate(oldObject, newObject)).catch((error: unknown) => ctx.log("update handler failed", { error: String(error) }));
    },
  });
  await informer.start();
}

/** `3s`, `500ms`, `2m` or a plain number of milliseconds. */
function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m)?$/.exec(text);
  if (match === null) throw new Error(`--slow-reconcile expects a duration like 3s or 500ms, got "${text}"`);
  const n = Number(match[1]);
  return match[2] === "s" ? n * 1000 : match[2] === "m" ? n * 60_000 : n;
}

/**
 * The real process: `tsx examples/ensemble/operator.ts [--slow-reconcile=3s] [--delta-mode] [--kubeconfig=PATH]`,
 * the same controller code the simulator explores, against any API server (`settle serve` in the drill).
 */
async function main(argv: string[]): Promise<void> {
  const { parseArgs } = await import("node:util");
  const { values } = parseArgs({
    args: argv,
    options: { "slow-reconcile": { type: "string", default: "0" }, "delta-mode": { type: "boolean", default: false }, kubeconfig: { type: "string" }, "resync": { type: "string", default: "30s" } },
  });
  const { createKubeClient, jsonLog } = await import("settle/kube");
  const { realClock } = await import("settle");
  const options = { slowReconcileMs: parseDuration(values["slow-reconcile"]!), deltaMode: values["delta-mode"] === true, resyncMs: parseDuration(values.resync!) };
  const log = jsonLog("ensemble-operator");
  const client = createKubeClient(values.kubeconfig === undefined ? {} : { kubeconfig: values.kubeconfig });
  log("starting", { ...options });
  await (options.deltaMode ? runDeltaOperator : runLevelOperator)({ client, clock: realClock, log }, options);
}

if (process.argv[1] !== undefined && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`ensemble-operator: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  });
}
