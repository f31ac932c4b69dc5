// Properties over a read-only view of the world: API objects and external state, never an actor's
// internals, so the same properties run in the simulator and against a live `settle serve`.
import type { WorldView } from "../sim/types.ts";
import { assert } from "../api/assert.ts";

/** What a property may read: the simulator's view; a live server's view implements the same shape. */
export type { WorldView };

export type Predicate = (world: WorldView) => boolean;

export interface AlwaysProperty {
  kind: "always";
  name: string;
  predicate: Predicate;
}

export interface EventuallyProperty {
  kind: "eventually";
  name: string;
  predicate: Predicate;
  /** Must hold by this long after the healing phase starts (faults stop). Absent: only once settled. */
  withinMs?: number;
}

export type Property = AlwaysProperty | EventuallyProperty;

const namePattern = /^\S[^\n\r\t]{0,119}$/;

function checkName(name: string): void {
  if (!namePattern.test(name)) {
    throw new TypeError(`property name ${JSON.stringify(name)}: one line of 1-120 characters, not starting with a space`);
  }
}

/** A safety property: checked after every step, in both phases. */
export function always(name: string, predicate: Predicate): AlwaysProperty {
  checkName(name);
  if (typeof predicate !== "function") throw new TypeError(`always("${name}"): the predicate must be a function`);
  return { kind: "always", name, predicate };
}

/** A liveness property: must hold once the world has settled after the faults stop (and by `withinMs`, if given). */
export function eventually(name: string, predicate: Predicate, options: { withinMs?: number } = {}): EventuallyProperty {
  checkName(name);
  if (typeof predicate !== "function") throw new TypeError(`eventually("${name}"): the predicate must be a function`);
  const { withinMs } = options;
  if (withinMs !== undefined && !(Number.isInteger(withinMs) && withinMs > 0)) {
    throw new TypeError(`eventually("${name}"): withinMs must be a positive integer of milliseconds`);
  }
  return withinMs === undefined ? { kind: "eventually", name, predicate } : { kind: "eventually", name, predicate, withinMs };
}

/** How often a property was evaluated and failed: fixed names and counts only, never object contents. */
export interface PropertyCounter {
  name: string;
  kind: Property["kind"];
  evaluations: number;
  failures: number;
  /** False when the property never held in the run. */
  everHeld: boolean;
}

/** Evaluates properties and keeps their counters. A predicate that throws counts as false. */
export class PropertyMonitor {
  readonly properties: readonly Property[];
  private readonly counters: PropertyCounter[];

  constructor(properties: readonly Property[]) {
    const names = new Set<string>();
    for (const property of properties) {
      assert(!names.has(property.name), "property names are unique");
      names.add(property.name);
    }
    this.properties = properties;
    this.counters = properties.map((p) => ({ name: p.name, kind: p.kind, evaluations: 0, failures: 0, everHeld: false }));
  }

  /** Checks every `always` property; returns the first that fails. */
  checkSafety(world: WorldView): AlwaysProperty | undefined {
    let failed: AlwaysProperty | undefined;
    for (let i = 0; i < this.properties.length; i++) {
      const property = this.properties[i]!;
      if (property.kind !== "always") continue;
      if (!this.evaluate(i, world) && failed === undefined) failed = property;
    }
    return failed;
  }

  /** Checks the `eventually` properties chosen by `filter`; returns the first that fails. */
  checkLiveness(world: WorldView, filter: (p: EventuallyProperty) => boolean = () => true): EventuallyProperty | undefined {
    let failed: EventuallyProperty | undefined;
    for (let i = 0; i < this.properties.length; i++) {
      const property = this.properties[i]!;
      if (property.kind !== "eventually" || !filter(property)) continue;
      if (!this.evaluate(i, world) && failed === undefined) failed = property;
    }
    return failed;
  }

  snapshot(): PropertyCounter[] {
    return this.counters.map((c) => ({ ...c }));
  }

  private evaluate(index: number, world: WorldView): boolean {
    const counter = this.counters[index]!;
    let holds: boolean;
    try {
      holds = this.properties[index]!.predicate(world) === true;
    } catch {
      holds = false;
    }
    counter.evaluations++;
    if (holds) counter.everHeld = true;
    else counter.failures++;
    return holds;
  }
}
