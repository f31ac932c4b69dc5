// The operations script under test, written as the shell script behaves: one step after another, each
// `kubectl` call a request, `sleep "$SYNC_INTERVAL"` between polls, counters in shell variables, and its
// stdout (the CI log) as the only thing it leaves behind. Two versions of the post-pause proof: `buggy`
// (the parent must also carry no `Reconciling=True`) and `fixed` (owned and suspended, both resourceVersions
// unchanged on two consecutive reads).
import { ApiError, isApiError, type Client, type KubeObject } from "settle";
import { deploymentRolloutStatus, isPodReady, rolloutRestart, type ActorContext, type ExternalHandle } from "settle/sim";
import {
  childOwned,
  childRef,
  controllerLabels,
  controllerRef,
  deploymentKind,
  handoffOwnerAnnotation,
  isReconciling,
  parentOwned,
  parentOwnerAnnotation,
  parentRef,
  podKind,
  reconcileAnnotation,
} from "./kustomize.ts";

/** The CI log: every line with the virtual instant it was printed, and the exit status once it ends. */
export const stdoutCell = "ci/stdout";
export interface ScriptOutput {
  lines: Array<{ atMs: number; text: string }>;
  result?: "ok" | "fail";
}

/** Read failures the API owes the script (the `fail-read` fault kind adds to `pending`). */
export const readFaultsCell = "api/read-faults";
export interface ReadFaults {
  pending: number;
  applied: number;
}

// The fixed lines the script may print. Nothing it read from the cluster goes into any of them.
export const lines = {
  preClaimTimeout: "::error::Flux policy parent was still reconciling before the claim",
  claimFailed: "::error::could not claim the Flux policy parent",
  childTimeout: "::error::Flux policy child was still reconciling before the fence",
  fenceFailed: "::error::could not fence the Flux policy child",
  fenceLost: "::error::the Flux policy fence was lost around the kustomize-controller restart",
  restartFailed: "::error::kustomize-controller did not finish its restart",
  restarted: "kustomize-controller restarted for the handoff",
  ok: "Flux acknowledged a stable pause of the image-verification policy owner",
  timeout: "::error::Flux did not acknowledge a stable pause of the image-verification policy owner",
} as const;

export interface ScriptOptions {
  variant: "buggy" | "fixed";
  /** The lease holder's id (private: it must never be printed). */
  holder: string;
  syncAttempts: number;
  syncIntervalMs: number;
}

type Counters = Record<string, number>;

function counterLine(counters: Counters): string {
  return Object.entries(counters)
    .map(([name, n]) => `${name}=${n}`)
    .join(" ");
}

/** A `kubectl get` whose failure the script handles (any read may fail). */
async function tryGet(client: Client, ref: typeof parentRef | typeof childRef): Promise<KubeObject | undefined> {
  try {
    return await client.get(ref);
  } catch (error) {
    if (!isApiError(error)) throw error;
    return undefined;
  }
}

/** The API as the script sees it: reads may fail when the scenario's `fail-read` fault says so. */
export function flakyReads(ctx: ActorContext): Client {
  const faults = ctx.external<ReadFaults>(readFaultsCell);
  const failing = async (): Promise<boolean> => {
    const now = await faults.read();
    if (now.pending <= 0) return false;
    await faults.write((f) => ({ ...f, pending: f.pending - 1 }));
    return true;
  };
  const base = ctx.client;
  const refused = () => new ApiError("InternalError", 500, "injected read failure");
  return {
    get: async (o) => {
      if (await failing()) throw refused();
      return base.get(o);
    },
    list: async (o) => {
      if (await failing()) throw refused();
      return base.list(o);
    },
    create: (o) => base.create(o),
    update: (o) => base.update(o),
    updateStatus: (o) => base.updateStatus(o),
    patch: (o) => base.patch(o),
    patchStatus: (o) => base.patchStatus(o),
    delete: (o) => base.delete(o),
    watch: (o) => base.watch(o),
  } as Client;
}

export class Script {
  private readonly output: ExternalHandle<ScriptOutput>;
  private parentUid = "";
  private childUid = "";

  constructor(
    private readonly ctx: ActorContext,
    private readonly client: Client,
    private readonly options: ScriptOptions,
  ) {
    this.output = ctx.external<ScriptOutput>(stdoutCell);
  }

  private async print(texts: string[], result?: ScriptOutput["result"]): Promise<void> {
    const atMs = this.ctx.clock.now();
    await this.output.write((o) => ({ lines: [...o.lines, ...texts.map((text) => ({ atMs, text }))], ...(result === undefined ? {} : { result }) }));
  }

  private fail(texts: string[]): Promise<void> {
    return this.print(texts, "fail");
  }

  async run(): Promise<void> {
    if (!(await this.preClaimWait())) return;
    if (!(await this.claimParent())) return this.fail([lines.claimFailed]);
    if (!(await this.fenceChild())) return;
    if (!(await this.restartController())) return;
    await this.proof();
  }

  /** R1: wait until the parent carries no `Reconciling=True` (a check, then a sleep, as `until ...; do sleep`). */
  private async preClaimWait(): Promise<boolean> {
    const c: Counters = { observations: 0, unreadable: 0, reconciling: 0 };
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      if (attempt > 0) await this.ctx.clock.sleep(this.options.syncIntervalMs);
      c.observations!++;
      const parent = await tryGet(this.client, parentRef);
      if (parent === undefined) c.unreadable!++;
      else if (isReconciling(parent)) c.reconciling!++;
      else return true;
    }
    await this.fail([lines.preClaimTimeout, counterLine(c)]);
    return false;
  }

  /** R2: suspend and claim the parent with a compare-and-swap on the resourceVersion just read (no re-check). */
  private async claimParent(): Promise<boolean> {
    return this.claim(parentRef, (o) => {
      o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [parentOwnerAnnotation]: this.options.holder };
      (o.spec as { suspend?: boolean }).suspend = true;
    }, (uid) => (this.parentUid = uid));
  }

  /** `kubectl get -o json | jq ... | kubectl replace`: the update carries the read resourceVersion. */
  private async claim(ref: typeof parentRef | typeof childRef, edit: (o: KubeObject) => void, remember: (uid: string) => void): Promise<boolean> {
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      if (attempt > 0) await this.ctx.clock.sleep(this.options.syncIntervalMs);
      const current = await tryGet(this.client, ref);
      if (current === undefined) continue;
      const next = structuredClone(current);
      edit(next);
      try {
        const stored = await this.client.update({ object: next });
        remember(stored.metadata.uid ?? "");
        return true;
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
    }
    return false;
  }

  /** The child: wait until it is quiescent, then fence it (owner, `reconcile=disabled`, suspended). */
  private async fenceChild(): Promise<boolean> {
    let quiet = false;
    for (let attempt = 0; attempt < this.options.syncAttempts && !quiet; attempt++) {
      if (attempt > 0) await this.ctx.clock.sleep(this.options.syncIntervalMs);
      const child = await tryGet(this.client, childRef);
      quiet = child !== undefined && !isReconciling(child);
    }
    if (!quiet) {
      await this.fail([lines.childTimeout]);
      return false;
    }
    const fenced = await this.claim(childRef, (o) => {
      o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [handoffOwnerAnnotation]: this.options.holder, [reconcileAnnotation]: "disabled" };
      (o.spec as { suspend?: boolean }).suspend = true;
    }, (uid) => (this.childUid = uid));
    if (!fenced) await this.fail([lines.fenceFailed]);
    return fenced;
  }

  /** The restart step's own fence checks test ownership only (as in the model). */
  private async fenceHolds(): Promise<boolean> {
    const child = await this.getRetrying(childRef);
    const parent = await this.getRetrying(parentRef);
    return childOwned(child, this.childUid, this.options.holder) && parentOwned(parent, this.parentUid, this.options.holder);
  }

  /** A read that must not fail on a transient error: retried `SYNC_INTERVAL` apart, as `retry kubectl get`. */
  private async getRetrying(ref: typeof parentRef | typeof childRef): Promise<KubeObject | undefined> {
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      if (attempt > 0) await this.ctx.clock.sleep(this.options.syncIntervalMs);
      const object = await tryGet(this.client, ref);
      if (object !== undefined) return object;
    }
    return undefined;
  }

  /** `kubectl rollout restart`, then wait until every pre-restart pod is gone and the new ones are Ready. */
  private async restartController(): Promise<boolean> {
    if (!(await this.fenceHolds())) {
      await this.fail([lines.fenceLost]);
      return false;
    }
    const before = await this.podUids();
    let restarted = false;
    for (let attempt = 0; attempt < this.options.syncAttempts && (before === undefined || !restarted); attempt++) {
      if (attempt > 0) await this.ctx.clock.sleep(this.options.syncIntervalMs);
      try {
        await rolloutRestart(this.client, controllerRef, this.ctx.clock.now());
        restarted = true;
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
    }
    if (before === undefined || !restarted || !(await this.waitRolledOut(before))) {
      await this.fail([lines.restartFailed]);
      return false;
    }
    if (!(await this.fenceHolds())) {
      await this.fail([lines.fenceLost]);
      return false;
    }
    await this.print([lines.restarted]);
    return true;
  }

  private async podUids(): Promise<Set<string> | undefined> {
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      if (attempt > 0) await this.ctx.clock.sleep(this.options.syncIntervalMs);
      try {
        const pods = await this.client.list({ ...podKind, namespace: controllerRef.namespace, labelSelector: `app=${controllerLabels.app}` });
        return new Set(pods.items.map((p) => p.metadata.uid ?? ""));
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
    }
    return undefined;
  }

  private async waitRolledOut(before: ReadonlySet<string>): Promise<boolean> {
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      await this.ctx.clock.sleep(this.options.syncIntervalMs);
      try {
        const deploy = await this.client.get({ ...deploymentKind, ...controllerRef });
        const pods = await this.client.list({ ...podKind, namespace: controllerRef.namespace, labelSelector: `app=${controllerLabels.app}` });
        const oldGone = pods.items.every((p) => !before.has(p.metadata.uid ?? ""));
        const ready = pods.items.length > 0 && pods.items.every((p) => isPodReady(p));
        if (deploymentRolloutStatus(deploy).done && oldGone && ready) return true;
      } catch (error) {
        if (!isApiError(error)) throw error;
      }
    }
    return false;
  }

  /** The post-pause proof loop: `SYNC_ATTEMPTS` polls, `SYNC_INTERVAL` apart. */
  private async proof(): Promise<void> {
    const ok = this.options.variant === "buggy" ? await this.proofBuggy() : await this.proofFixed();
    if (ok === true) return this.print([lines.ok], "ok");
    return this.fail([lines.timeout, counterLine(ok)]);
  }

  private async read(): Promise<{ child: KubeObject; parent: KubeObject } | undefined> {
    const child = await tryGet(this.client, childRef);
    if (child === undefined) return undefined;
    const parent = await tryGet(this.client, parentRef);
    return parent === undefined ? undefined : { child, parent };
  }

  /** The parent must be owned and show no `Reconciling=True`; only the child's resourceVersion is compared. */
  private async proofBuggy(): Promise<true | Counters> {
    const c: Counters = { observations: 0, unreadable: 0, child_not_owned: 0, parent_unstable: 0, version_changes: 0 };
    const { holder } = this.options;
    let prev = "";
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      await this.ctx.clock.sleep(this.options.syncIntervalMs);
      c.observations!++;
      const seen = await this.read();
      if (seen === undefined) {
        c.unreadable!++;
        prev = "";
        continue;
      }
      if (!childOwned(seen.child, this.childUid, holder)) {
        c.child_not_owned!++;
        prev = "";
        continue;
      }
      if (!parentOwned(seen.parent, this.parentUid, holder) || isReconciling(seen.parent)) {
        c.parent_unstable!++;
        prev = "";
        continue;
      }
      const rv = seen.child.metadata.resourceVersion ?? "";
      if (prev === rv) return true;
      if (prev !== "") c.version_changes!++;
      prev = rv;
    }
    return c;
  }

  /**
   * Both objects owned and suspended, and both resourceVersions unchanged across two consecutive reads. A
   * `Reconciling=True` on the suspended parent no longer blocks on its own: the restart has retired every
   * execution that began before the suspend, so nothing can still write it.
   */
  private async proofFixed(): Promise<true | Counters> {
    const c: Counters = { observations: 0, unreadable: 0, child_not_owned: 0, parent_not_owned: 0, parent_changed: 0, version_changes: 0 };
    const { holder } = this.options;
    let prev: { child: string; parent: string } | undefined;
    for (let attempt = 0; attempt < this.options.syncAttempts; attempt++) {
      await this.ctx.clock.sleep(this.options.syncIntervalMs);
      c.observations!++;
      const seen = await this.read();
      if (seen === undefined) {
        c.unreadable!++;
        prev = undefined;
        continue;
      }
      if (!childOwned(seen.child, this.childUid, holder)) {
        c.child_not_owned!++;
        prev = undefined;
        continue;
      }
      if (!parentOwned(seen.parent, this.parentUid, holder)) {
        c.parent_not_owned!++;
        prev = undefined;
        continue;
      }
      const now = { child: seen.child.metadata.resourceVersion ?? "", parent: seen.parent.metadata.resourceVersion ?? "" };
      if (prev !== undefined && prev.child === now.child && prev.parent === now.parent) return true;
      if (prev !== undefined && prev.parent !== now.parent) c.parent_changed!++;
      if (prev !== undefined && prev.child !== now.child) c.version_changes!++;
      prev = now;
    }
    return c;
  }
}
