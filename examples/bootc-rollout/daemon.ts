// The node daemon: one per node, watching only its own BootcNode. It stages the desired image, waits for
// the controller's approval, and reboots. Everything it holds in memory (the in-flight stage, the
// reboot-issued flag, the status watcher's cache) dies with it on a reboot; the host does not.
//
// The buggy variant is the reported daemon: after a reboot it trusts the first `bootc status` it reads,
// and an approval that stays `Booted` lets it reboot again on its own. The fixed variant treats an approval
// as one-shot and scoped to the boot it was used in, and checks a live read before staging.
import assert from "node:assert/strict";
import { Informer, WorkQueue, isApiError, type Client, type Clock, type Log } from "settle";
import { requestReboot, type ActorContext } from "settle/sim";
import { bootcNodeKind, daemonRebootPrefix, hostCellOf, type BootcHost, type BootcNode, type BootcNodeStatus, type BootcStatus, type Condition } from "./model.ts";

export type DaemonVariant = "buggy" | "fixed";

export interface DaemonOptions {
  node: string;
  variant: DaemonVariant;
  /** Mean duration of `bootc stage` (each stage takes 50% to 150% of it). */
  stageMs: number;
  /** The status watcher's poll period (fsnotify covers the daemon's own changes). */
  statusPollMs: number;
}

/** The machine: `bootc status`, `bootc stage`, the kernel's boot id and `systemctl reboot`. */
class HostExecutor {
  constructor(
    private readonly ctx: ActorContext,
    private readonly options: DaemonOptions,
  ) {}

  private get cell() {
    return this.ctx.external<BootcHost>(hostCellOf(this.options.node));
  }

  /** `bootc status`. Early in a boot it may still describe the deployments of the previous boot (a fault). */
  async status(): Promise<BootcStatus> {
    const host = await this.cell.read();
    const fresh: BootcStatus = { booted: host.booted, staged: host.staged, rollback: host.rollback };
    if (host.statusReadBootCount === host.bootCount) return fresh;
    await this.cell.write((h) => ({ ...h, statusReadBootCount: h.bootCount }));
    if (host.staleBootCount !== host.bootCount || host.preBoot === null) return fresh;
    this.ctx.log("bootc status: early-boot read returned the pre-reboot deployments", { ...host.preBoot });
    return { ...host.preBoot, staged: host.staleKeepsStaged ? host.preBoot.staged : null };
  }

  /** `/proc/sys/kernel/random/boot_id`: never stale. */
  async bootId(): Promise<string> {
    return (await this.cell.read()).bootId;
  }

  /** `bootc stage <image>`: takes a while; a cancel kills it (SIGKILL) and leaves nothing staged. */
  async stage(image: string, signal: AbortSignal): Promise<"staged" | "cancelled"> {
    const host = await this.cell.read();
    if (host.staged === image) return "staged";
    await this.cell.write((h) => ({ ...h, staging: image }));
    const { stageMs } = this.options;
    try {
      await this.ctx.clock.sleep(this.ctx.rng.between(Math.floor(stageMs / 2), Math.floor((stageMs * 3) / 2)), { signal });
    } catch {
      await this.cell.write((h) => ({ ...h, staging: null, stageCancelledBootCount: h.bootCount }));
      return "cancelled";
    }
    await this.cell.write((h) => ({ ...h, staged: image, staging: null }));
    return "staged";
  }

  /**
   * `systemctl reboot`: asking twice from the same boot is one reboot, and a request made while the host is
   * already going down (a power cycle) lapses with the boot it was made in.
   */
  async reboot(bootId: string): Promise<void> {
    await requestReboot(this.ctx.client, this.options.node, `${daemonRebootPrefix}${bootId}`, { bootId });
  }
}

/** The daemon's status cache: filled by the first read, refreshed on its own host changes and every poll. */
class StatusWatcher {
  private cache: BootcStatus | undefined;

  constructor(
    private readonly executor: HostExecutor,
    private readonly onChange: () => void,
  ) {}

  async get(): Promise<BootcStatus> {
    this.cache ??= await this.executor.status();
    return this.cache;
  }

  /** A live read into the cache; emits a change event when it differs. */
  async refresh(): Promise<BootcStatus> {
    const live = await this.executor.status();
    const changed = this.cache === undefined || !sameStatus(this.cache, live);
    this.cache = live;
    if (changed) this.onChange();
    return live;
  }
}

function sameStatus(a: BootcStatus, b: BootcStatus): boolean {
  return a.booted === b.booted && a.staged === b.staged && a.rollback === b.rollback;
}

interface Inflight {
  image: string;
  abort: AbortController;
}

const key = "self";

export class Daemon {
  private readonly executor: HostExecutor;
  private readonly watcher: StatusWatcher;
  private readonly informer: Informer<BootcNode>;
  private readonly queue: WorkQueue<string>;
  private readonly client: Client;
  private readonly clock: Clock;
  private readonly log: Log;
  private inflight: Inflight | undefined;
  private rebootIssued = false;

  constructor(
    ctx: ActorContext,
    private readonly options: DaemonOptions,
  ) {
    this.client = ctx.client;
    this.clock = ctx.clock;
    this.log = ctx.log;
    this.executor = new HostExecutor(ctx, options);
    this.queue = new WorkQueue<string>({ clock: ctx.clock });
    this.watcher = new StatusWatcher(this.executor, () => this.queue.add(key));
    this.informer = new Informer<BootcNode>({ client: ctx.client, clock: ctx.clock, kind: bootcNodeKind, fieldSelector: `metadata.name=${options.node}` });
    this.informer.addHandler({ add: () => this.queue.add(key), update: () => this.queue.add(key) });
  }

  async run(): Promise<void> {
    await Promise.all([this.informer.start(), this.poll(), this.work()]);
  }

  private async poll(): Promise<void> {
    for (;;) {
      await this.clock.sleep(this.options.statusPollMs);
      await this.watcher.refresh();
    }
  }

  private async work(): Promise<void> {
    await this.informer.waitForSync();
    for (;;) {
      const k = await this.queue.get();
      if (k === undefined) return;
      try {
        const bn = this.informer.lister.get(this.options.node);
        if (bn !== undefined) await this.reconcile(bn);
        this.queue.forget(k);
      } catch (error) {
        if (!isApiError(error)) throw error;
        this.queue.addRateLimited(k);
      } finally {
        this.queue.done(k);
      }
    }
  }

  private async reconcile(bn: BootcNode): Promise<void> {
    if (this.rebootIssued) return;
    const s = await this.watcher.get();
    const desired = bn.spec.desiredImage;
    if (desired === s.booted) return this.report(bn, s, idle("True", "UpToDate"));
    if (s.staged !== desired) {
      if (this.inflight?.image === desired) return this.report(bn, s, idle("False", "Staging"));
      return this.stage(bn, s);
    }
    if (bn.spec.desiredImageState !== "Booted") return this.report(bn, s, idle("False", "Staged"));
    return this.options.variant === "fixed" ? this.gatedReboot(bn, s) : this.reboot(bn, s, {});
  }

  private async stage(bn: BootcNode, s: BootcStatus): Promise<void> {
    const desired = bn.spec.desiredImage;
    assert(s.booted !== desired, "the daemon stages only what its status says is not booted");
    if (this.options.variant === "fixed") {
      // Never stage an image without a live read saying it is not booted (the cache may predate the boot).
      const live = await this.watcher.refresh();
      if (!sameStatus(live, s)) return; // the change event brings a reconcile on the live status
    }
    const previous = this.inflight;
    const inflight: Inflight = { image: desired, abort: new AbortController() };
    this.inflight = inflight;
    if (previous !== undefined) {
      this.log("stage cancelled: the desired image changed", { cancelled: previous.image, desired });
      previous.abort.abort(new Error("superseded"));
    }
    this.log("stage", { image: desired, booted: s.booted, staged: s.staged });
    void this.executor.stage(desired, inflight.abort.signal).then(async (result) => {
      if (result !== "staged") return;
      this.queue.add(key); // stageDone
      await this.watcher.refresh(); // fsnotify on the deployment directory
    });
    await this.report(bn, s, idle("False", "Staging"));
  }

  /** The fixed variant's gate: a fresh approval, or the same approval from the same boot (a restarted daemon). */
  private async gatedReboot(bn: BootcNode, s: BootcStatus): Promise<void> {
    const bootId = await this.executor.bootId();
    const approval = bn.spec.rebootApproval ?? 0;
    const last = bn.status?.lastReboot ?? null;
    const fresh = approval > (last?.approval ?? 0);
    const reissue = last !== null && approval === last.approval && bootId === last.bootId;
    if (fresh || reissue) return this.reboot(bn, s, { lastReboot: { approval, bootId } });
    const live = await this.watcher.refresh();
    if (live.booted === bn.spec.desiredImage) return this.report(bn, live, idle("True", "UpToDate"));
    this.log("approval already used by an earlier boot: not rebooting", { approval, bootId, lastBootId: last?.bootId });
    return this.report(bn, live, idle("False", "Staged"), degraded("True", "RebootDidNotApply"));
  }

  private async reboot(bn: BootcNode, s: BootcStatus, extra: Partial<BootcNodeStatus>): Promise<void> {
    assert(bn.spec.desiredImageState === "Booted", "the daemon reboots only on an approval");
    assert(s.staged === bn.spec.desiredImage, "the daemon reboots only into the desired image");
    await this.report(bn, s, idle("False", "Rebooting"), degraded("False", "AsExpected"), extra);
    const bootId = await this.executor.bootId();
    this.log("reboot", { desired: bn.spec.desiredImage, booted: s.booted, staged: s.staged, bootId });
    await this.executor.reboot(bootId);
    this.rebootIssued = true;
  }

  /** Writes the status subresource when it differs from what the BootcNode already says. */
  private async report(bn: BootcNode, s: BootcStatus, idleCondition: Condition, degradedCondition = degraded("False", "AsExpected"), extra: Partial<BootcNodeStatus> = {}): Promise<void> {
    const status: BootcNodeStatus = {
      booted: { digest: s.booted },
      staged: s.staged === null ? null : { digest: s.staged },
      rollback: s.rollback === null ? null : { digest: s.rollback },
      conditions: [idleCondition, degradedCondition],
      observedGeneration: bn.metadata.generation ?? 0,
      ...extra,
    };
    const current = bn.status ?? {};
    const same = (Object.keys(status) as Array<keyof BootcNodeStatus>).every((k) => JSON.stringify(current[k] ?? null) === JSON.stringify(status[k] ?? null));
    if (same) return;
    await this.client.patchStatus({ ...bootcNodeKind, name: this.options.node, patchType: "merge", patch: { status } });
  }
}

function idle(status: "True" | "False", reason: string): Condition {
  return { type: "Idle", status, reason };
}

function degraded(status: "True" | "False", reason: string): Condition {
  return { type: "Degraded", status, reason };
}
