// Shared by the framework tests and the module bench: the framework examples log to the process's stderr themselves
// (once per event), which is not the output of the test or bench that runs them.

/** Runs `fn` with the process's stderr silenced, and restores it however `fn` ends. */
export async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const write = process.stderr.write;
  process.stderr.write = (() => true) as typeof process.stderr.write;
  try {
    return await fn();
  } finally {
    process.stderr.write = write;
  }
}
