// A node daemon's lifecycle: it runs only while its host is up, dies (memory, pending calls, watches) when
// the Node reports `Ready=False/Rebooting`, and starts afresh once the Node is Ready with a new boot id.
//
// This is the cluster library's `nodeActor` with one difference, kept here until the library has it: the
// library's wrapper never starts the daemon again when its first look at the Node already shows a reboot in
// progress (it remembers no boot id in that case, so the new boot looks like the old one), which a reboot
// drawn before the daemon's first list produces; and a daemon whose kubelet failed to write `Rebooting` (the
// kubelet ignores that failure and reboots anyway) lives on into the new boot and is never started afresh.
// Here the daemon is launched only once the Node is seen Ready, as systemd starts it on a booted host, and a
// new boot id ends the old boot's daemon as surely as the Rebooting condition does.
import { Informer, type Client, type Clock, type KubeObject, type Watch, type WatchEvent } from "settle";
import { defineActor, type ActorContext, type ActorDefinition, type ExternalHandle } from "settle/sim";
import { isNodeReady, isNodeRebooting, nodeKind, type NodeObject } from "./model.ts";

/** The daemon's context for one boot: once the boot is over, its calls never return and its timers never fire. */
function bootContext(ctx: ActorContext, boot: number, alive: () => boolean, watches: Set<Watch>): ActorContext {
  const hang = <T>() => new Promise<T>(() => {});
  const gate = <T>(start: () => Promise<T>): Promise<T> =>
    alive() ? new Promise<T>((resolve, reject) => start().then((v) => alive() && resolve(v), (e) => alive() && reject(e))) : hang<T>();
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

export function nodeDaemon(options: { node: string; actor: ActorDefinition }): ActorDefinition {
  const inner = options.actor;
  return defineActor({
    name: inner.name,
    ...(inner.restartDelayMs === undefined ? {} : { restartDelayMs: inner.restartDelayMs }),
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
      const observe = (object: KubeObject) => {
        const node = object as NodeObject;
        const id = node.status?.nodeInfo?.bootID;
        // The kubelet's NotReady/Rebooting write can fail (it goes on with the reboot); a new boot id then
        // is the first sign that the boot the daemon ran in is over.
        const newBoot = boot > 0 && id !== bootId;
        if (running && (isNodeRebooting(node) || newBoot)) {
          running = false;
          for (const watch of watches) watch.close();
          watches.clear();
        }
        // First look (nothing launched yet) or a new boot: start on a Ready host.
        if (!running && isNodeReady(node) && (boot === 0 || newBoot)) launch(id);
      };
      const informer = new Informer({ client: ctx.client, clock: ctx.clock, kind: nodeKind, fieldSelector: `metadata.name=${options.node}` });
      informer.addHandler({ add: observe, update: (_old, node) => observe(node) });
      await Promise.race([informer.start(), failure]);
    },
  });
}
