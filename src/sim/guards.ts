// Determinism guards: while a run is in progress, `Math.random`, `Date.now` and `new Date()` answer from
// the simulation (its rng and virtual clock); the originals come back when the run ends.

export interface GuardSources {
  now(): number;
  random(): number;
}

export interface Guards {
  restore(): void;
}

export function installGuards(sources: GuardSources): Guards {
  const OriginalDate = globalThis.Date;
  const originalRandom = Math.random;
  // A subclass keeps every static (UTC, parse) and instance method; only the no-argument forms change.
  class SimDate extends OriginalDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(sources.now());
      else super(...(args as [string | number]));
    }
    static override now(): number {
      return sources.now();
    }
  }
  globalThis.Date = SimDate as DateConstructor;
  Math.random = () => sources.random();
  let restored = false;
  return {
    restore() {
      if (restored) return;
      restored = true;
      globalThis.Date = OriginalDate;
      Math.random = originalRandom;
    },
  };
}
