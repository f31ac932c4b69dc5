// Where a module's `process.stdout` and `process.stderr` go: nowhere by default. Explore runs a module thousands
// of times (and once per variant before that, to check it loads): its own output would bury the report. `settle
// replay --module-output` opens it for the one run it replays.

export type ModuleOutputSink = (fd: 1 | 2, chunk: Buffer) => void;

let sink: ModuleOutputSink | undefined;

/** Sets (or, with undefined, closes) where module output goes; returns the previous sink. */
export function setModuleOutput(next: ModuleOutputSink | undefined): ModuleOutputSink | undefined {
  const previous = sink;
  sink = next;
  return previous;
}

export function writeModuleOutput(fd: 1 | 2, chunk: Buffer): void {
  sink?.(fd, chunk);
}
