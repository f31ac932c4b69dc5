// A scenario actor that lives on a node (a node daemon): it stops when its node goes down for a reboot and
// starts afresh, with empty memory, once the node is back with a new boot id, as a systemd unit would.
import { AssertionError, assert } from "../api/assert.ts";
import type { Client, Watch } from "../api/client.ts";
import type { Clock } from "../api/clock.ts";
import type { KubeObject, WatchEvent } from "../api/object.ts";
import type { ActorContext, ActorDefinition, ExternalHandle, FaultKind, FaultTarget } from "../sim/types.ts";
import { defineActor, defineFaultKind } from "../sim/simulation.ts";
import { isApiError } from "../api/errors.ts";
import { Informer } from "../runtime/informer.ts";
import { annotations, nodeKind } from "./common.ts";
import type { Node } from "./common.ts";
import { hostCell, type HostState } from "./kubelet.ts";

export interface NodeActorOptions {
  node: string;
  /** The daemon: started at the actor's start and again after every reboot of its node. */
  actor: ActorDefinition;
}

/** What the daemon's context looks like to it: everything goes through `alive`, so a dead boot's code goes nowhere. */
function bootContext(ctx: ActorContext, boot: number, alive: () => boolean, watches: Set<Watch>): ActorContext {
  const hang = <T>() => new Promise<T>(() => {});
  const gate = <T>(start: () => Promise<T>): Promise<T> => {
    if (!alive()) return hang<T>();
    return new Promise<T>((resolve, reject) => start().then((v) => alive() && resolve(v), (e) => alive() && reject(e)));
  };
  const client = new Proxy(ctx.client, {
    get(target, key) {
      const value = Reflect.get(target, key) as unknown;
      if (typeof value !== "function") return value;
      if (key === "watch") {
        return (options: Parameters<Client["watch"]>[0]) => {
          if (!alive()) return { close() {}, [Symbol.asyncIterator]: () => ({ next: () => hang<IteratorResult<WatchEvent>>() }) };
          const watch = target.watch(options);
          watches.add(watch);
          return watch;
        };
      }
      return (...args: unknown[]) => gate(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
  const clock: Clock = {
    now: () => ctx.clock.now(),
    sleep: (ms, options) => gate(() => ctx.clock.sleep(ms, options)),
    setTimer: (ms, fn) => ctx.clock.setTimer(ms, () => alive() && fn()),
  };
  return {
    name: ctx.name,
    incarnation: ctx.incarnation * 1000 + boot,
    client,
    clock,
    rng: ctx.rng.fork(`boot/${boot}`),
    log: (msg, fields) => alive() && ctx.log(msg, fields),
    external<T>(name: string): ExternalHandle<T> {
      const handle = ctx.external<T>(name);
      return { read: () => gate(() => handle.read()), write: (value) => gate(() => handle.write(value)) };
    },
  };
}

/** Runs `actor` as a daemon of `node`: it dies when the node starts rebooting and starts again on the new boot. */
export function nodeActor(options: NodeActorOptions): ActorDefinition {
  const inner = options.actor;
  return defineActor({
    name: inner.name,
    ...(inner.restartDelayMs === undefined ? {} : { restartDelayMs: inner.restartDelayMs }),
    ...(inner.crashable === undefined ? {} : { crashable: inner.crashable }),
    ...(inner.onCrash === undefined ? {} : { onCrash: inner.onCrash }),
    async start(ctx) {
      let boot = 0;
      let running = false;
      let bootId: string | undefined;
      let failed: (error: unknown) => void = () => {};
      const failure = new Promise<never>((_, reject) => (failed = reject));
      const watches = new Set<Watch>();
      const launch = (id: string | undefined) => {
        const mine = ++boot;
        running = true;
        bootId = id;
        const alive = () => running && boot === mine;
        Promise.resolve(inner.start(bootContext(ctx, mine, alive, watches))).catch((error: unknown) => alive() && failed(error));
      };
      const observe = (node: KubeObject) => {
        const n = node as Node;
        const ready = (n.status?.conditions ?? []).find((c) => c.type === "Ready");
        const id = n.status?.nodeInfo?.bootID;
        // The kubelet's Rebooting write can fail (it reboots anyway): a new boot id then is the first sign that
        // the boot the daemon ran in is over.
        const newBoot = boot > 0 && id !== bootId;
        if (running && ((ready?.status === "False" && ready.reason === "Rebooting") || newBoot)) {
          running = false;
          for (const watch of watches) watch.close();
          watches.clear();
        }
        // Like a systemd unit, the daemon starts on a booted host: at the first look at a Ready node, and on
        // every new boot. A node first seen mid-reboot starts it once the new boot is Ready.
        if (!running && ready?.status === "True" && (boot === 0 || newBoot)) launch(id);
      };
      const informer = new Informer({ client: ctx.client, clock: ctx.clock, kind: nodeKind, fieldSelector: `metadata.name=${options.node}` });
      informer.addHandler({ add: observe, update: (_old, node) => observe(node) });
      assert(options.node.length > 0, "node-actor-node-named");
      await Promise.race([informer.start(), failure]);
    },
  });
}

/**
 * A scenario fault kind "reboot": asks a node's kubelet to reboot its host (through the Node's reboot
 * annotation), so the explorer can draw and shrink reboots like any other fault. The request is tied to the
 * host's current boot, as a power button pressed now: drawn while the host is already going down, it lapses
 * with that boot instead of rebooting the next one.
 */
export function rebootFaultKind(options: { nodes?: readonly string[] } = {}): FaultKind {
  return defineFaultKind({
    name: "reboot",
    targets: (view) => (options.nodes ?? view.list(nodeKind).map((node) => node.metadata.name ?? "")).slice().sort(),
    apply(sim, fault) {
      const token = `fault-${sim.now()}`;
      const bootId = hostBootId(sim, fault.target);
      const tie = bootId === undefined ? {} : { [annotations.rebootBootId]: bootId };
      try {
        sim.store.patch({ ...nodeKind, name: fault.target, patchType: "merge", patch: { metadata: { annotations: { [annotations.reboot]: token, ...tie } } } });
      } catch (error) {
        if (isApiError(error)) return `skipped: ${error.reason}`;
        throw error;
      }
      return `reboot requested (${token})`;
    },
  });
}

/** The host's current boot id, or undefined in a world without the kubelet's host cells. */
function hostBootId(sim: FaultTarget, node: string): string | undefined {
  try {
    return sim.external<HostState>(hostCell(node)).get().bootId;
  } catch (error) {
    if (error instanceof AssertionError) throw error;
    return undefined;
  }
}
