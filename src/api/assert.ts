// Invariant checks: a failed assertion is a bug in settle or in the caller, never an operating error.

export class AssertionError extends Error {
  constructor(name: string) {
    super(`assertion failed: ${name}`);
    this.name = "AssertionError";
  }
}

/** Crashes with the invariant's name when `condition` is false. Keep compound conditions split. */
export function assert(condition: unknown, name: string): asserts condition {
  if (!condition) throw new AssertionError(name);
}
