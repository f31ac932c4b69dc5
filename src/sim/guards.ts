// Determinism guards: while a run is in progress, `Math.random`, `Date.now` and `new Date()` answer from
// the simulation (its rng and virtual clock); the originals come back when the run ends.
//
// The replacement `Date` class and `Math.random` function are made once per `Date` they stand in for, not once
// per run: every `new Date(ms)` in the store and the actors then meets the same constructor run after run, so
// V8's inline caches stay monomorphic (a fresh class per run made them megamorphic after a few runs). What the
// replacements answer comes from the sources of the run that installed them.

export interface GuardSources {
  now(): number;
  random(): number;
}

export interface Guards {
  restore(): void;
}

/**
 * The sources of the run holding the guards. After the run they stay: code that kept a reference to the
 * replacement `Date` past its run (it is not installed then) answers from the last run's clock, not an error.
 */
let active: GuardSources | undefined;

function sources(): GuardSources {
  if (active === undefined) throw new Error("settle: the simulation's Date or Math.random was called before any run");
  return active;
}

function simRandom(): number {
  return sources().random();
}

/** The replacement class for one original `Date` (normally the only one: the process's own). */
let made: { original: DateConstructor; replacement: DateConstructor } | undefined;

function replacementFor(original: DateConstructor): DateConstructor {
  if (made?.original === original) return made.replacement;
  // A subclass keeps every static (UTC, parse) and instance method; only the no-argument forms change.
  class SimDate extends original {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(sources().now());
      // One argument (a time in ms, a string) is the common form: passed without spreading.
      else if (args.length === 1) super(args[0] as string | number);
      else super(...(args as [string | number]));
    }
    static override now(): number {
      return sources().now();
    }
  }
  made = { original, replacement: SimDate as DateConstructor };
  return made.replacement;
}

export function installGuards(guardSources: GuardSources): Guards {
  const OriginalDate = globalThis.Date;
  const originalRandom = Math.random;
  active = guardSources;
  globalThis.Date = replacementFor(OriginalDate);
  Math.random = simRandom;
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
