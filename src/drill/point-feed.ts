// The plan of a drill's points, handed out as the reference run makes them known.
//
// Invariants: points are handed out in plan order, each once, and point k only once the reference has made k writes
// (or is done); the reference finishes once; once it is done, no point past its last write is handed out (a given
// write number past it is named in `unreached` instead).
import { drillFaultKinds, drillFaults, isClockDrillFault, isDrillFaultKind, type DrillFaultKind } from "../api/faults.ts";
import { faketimeLibrary } from "./faketime.ts";
import { assert } from "../api/assert.ts";
import type { DrillTarget } from "./target.ts";
import type { DrillOptions, DrillPoint } from "./types.ts";

/**
 * The points of the drill, in plan order, each handed out as soon as it is known to exist: first every write of
 * the reference (or the given ones) times the faults that aim at no resource, point k once the reference has made
 * k writes; then, once the reference is done and it is known which resources the controller watched, the same
 * writes times the per-resource faults times those resources. Given `points`, exactly those.
 */
export class PointFeed {
  private readonly kinds: readonly DrillFaultKind[];
  private readonly perResource: readonly DrillFaultKind[];
  private given: readonly number[] | undefined;
  private beyond: readonly number[] = [];
  private readonly explicit: readonly DrillPoint[] | undefined;
  private seen = 0;
  private final: number | undefined;
  /** Each slot's per-resource points, once the reference is done. */
  private aimed: ReadonlyArray<{ fault: DrillFaultKind; resource: string }> = [];
  private taken = 0;
  private cancelled = false;
  private waiters: Array<() => void> = [];
  /** Clock faults asked for and not planned: libfaketime is not installed. */
  readonly withoutFaketime: readonly DrillFaultKind[];

  constructor(options: DrillOptions, target: DrillTarget) {
    const declared = (target.defaults?.faultKinds ?? ["kill"]).filter(isDrillFaultKind);
    const asked = options.faults === true ? drillFaultKinds : declared;
    // A clock point needs libfaketime: without Debian's faketime package there is none to plan.
    const clocks = faketimeLibrary() !== undefined;
    const kinds = asked.filter((k) => clocks || !isClockDrillFault(k));
    this.withoutFaketime = asked.filter((k) => !clocks && isClockDrillFault(k));
    this.kinds = kinds.filter((k) => !drillFaults[k].perResource);
    this.perResource = kinds.filter((k) => drillFaults[k].perResource);
    this.given = options.killPoints ?? target.defaults?.afterWrites;
    this.explicit = options.points;
  }

  /** Points planned in all, once the reference is done. */
  get planned(): number {
    if (this.final === undefined) throw new Error("drill: the plan is known only once the reference run is done");
    if (this.explicit !== undefined) return this.explicit.length;
    return (this.kinds.length + this.aimed.length) * this.slots(this.final);
  }

  /** Every point's fault restarts the controller (so a run may start its replacement before it knows its point). */
  get restartsOnly(): boolean {
    if (this.explicit !== undefined) return this.explicit.every((p) => drillFaults[p.fault].restarts);
    return [...this.kinds, ...this.perResource].every((k) => drillFaults[k].restarts);
  }

  /** No point is left to hand out (false while the reference may still make writes). */
  get exhausted(): boolean {
    return this.at(this.taken) === "done";
  }

  /**
   * The given write numbers past the reference run's last write, once it is done: no point is drilled there (the
   * controller would not make that write; the run would only wait out its timeout).
   */
  get unreached(): readonly number[] {
    return this.beyond;
  }

  reached(writes: number): void {
    this.seen = Math.max(this.seen, writes);
    this.wakeAll();
  }

  /** The reference is done with `writes` writes, having watched `resources`; `"none"`: no point may run. */
  finish(writes: number | "none", resources: readonly string[] = []): void {
    assert(this.final === undefined, "the reference finishes once");
    this.cancelled = writes === "none";
    this.final = writes === "none" ? 0 : writes;
    // A slot waits until the reference reaches its write, and points are handed out in order, so every slot handed
    // out so far is within the reference's writes: dropping the others shifts only slots not handed out yet.
    const final = this.final;
    if (this.given !== undefined && !this.cancelled) {
      this.beyond = this.given.filter((afterWrite) => afterWrite > final);
      this.given = this.given.filter((afterWrite) => afterWrite <= final);
    }
    // A delay past another resource's events needs another resource.
    this.aimed = this.perResource.flatMap((fault) => (fault === "delay-kind" && resources.length < 2 ? [] : resources.map((resource) => ({ fault, resource }))));
    this.wakeAll();
  }

  async next(): Promise<{ index: number; point: DrillPoint } | undefined> {
    for (;;) {
      const state = this.at(this.taken);
      if (state === "done") return undefined;
      if (state !== "wait") {
        assert(this.final !== undefined || state.afterWrite <= this.seen, "a point is handed out once the reference made its write");
        return { index: this.taken++, point: state };
      }
      await new Promise<void>((wake) => this.waiters.push(wake));
    }
  }

  private slots(final: number): number {
    return this.given?.length ?? final;
  }

  /** Write number of slot `slot`, or undefined past the last (known) one. */
  private writeAt(slot: number): number | "wait" | undefined {
    if (this.given !== undefined) {
      if (slot >= this.given.length) return undefined;
      const afterWrite = this.given[slot]!;
      return this.final !== undefined || afterWrite <= this.seen ? afterWrite : "wait";
    }
    const afterWrite = slot + 1;
    if (afterWrite <= this.seen || afterWrite <= (this.final ?? 0)) return afterWrite;
    return this.final === undefined ? "wait" : undefined;
  }

  private at(index: number): DrillPoint | "wait" | "done" {
    if (this.cancelled) return "done";
    if (this.explicit !== undefined) {
      const point = this.explicit[index];
      if (point === undefined) return "done";
      return this.final !== undefined || point.afterWrite <= this.seen ? point : "wait";
    }
    if (this.kinds.length > 0) {
      const slot = Math.floor(index / this.kinds.length);
      const afterWrite = this.writeAt(slot);
      if (afterWrite === "wait") return "wait";
      if (afterWrite !== undefined) return { afterWrite, fault: this.kinds[index % this.kinds.length]! };
    }
    // The plain points are all handed out: the per-resource ones follow, once the reference is done.
    if (this.perResource.length === 0) return "done";
    if (this.final === undefined) return "wait";
    const j = index - this.kinds.length * this.slots(this.final);
    const perSlot = this.aimed.length;
    if (perSlot === 0 || j >= perSlot * this.slots(this.final)) return "done";
    const afterWrite = this.writeAt(Math.floor(j / perSlot)) as number;
    return { afterWrite, ...this.aimed[j % perSlot]! };
  }

  private wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
