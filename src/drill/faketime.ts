// The drill's clock faults: a controller process whose wall clock is set off the others' while it runs, through
// libfaketime (Debian's `faketime` package), preloaded into the process group. Each process of a clock point reads
// its offset from a file of the run's own, re-read at every wall-clock reading, so the drill moves the clock of a
// running process at the point without restarting it. Only wall time moves: libfaketime is told to leave the
// monotonic clock alone, so timers, sleeps and `performance.now` keep the true rate, as on a machine whose NTP
// daemon stepped its clock. A program that reads the time without libc (a Go binary, which asks the kernel's vDSO
// directly) does not see the offset.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { assert } from "../api/assert.ts";
import { CLOCK_OFFSET_MS_MAX } from "../api/faults.ts";

/** Where Debian's `faketime` package installs the library, per architecture. */
const libraryPaths = [
  "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
  "/usr/lib/faketime/libfaketime.so.1",
] as const;

/** The libfaketime the drill preloads, or undefined when the `faketime` package is not installed. */
export function faketimeLibrary(): string | undefined {
  return libraryPaths.find((path) => existsSync(path));
}

/** An offset as libfaketime reads it: signed whole seconds (`+30`, `-30`, `+0`). */
export function faketimeSpec(offsetMs: number): string {
  assert(Number.isSafeInteger(offsetMs) && Math.abs(offsetMs) <= CLOCK_OFFSET_MS_MAX, "a clock offset fits the fault model");
  assert(offsetMs % 1000 === 0, "a drill's clock offset is whole seconds (libfaketime's relative offsets are)");
  return `${offsetMs < 0 ? "-" : "+"}${Math.abs(offsetMs) / 1000}`;
}

/** The wall clock of a run's controller processes: true until `set`, then off by the offset, for every process. */
export class FaketimeClock {
  private readonly file: string;

  /** `dir`: the run's own folder; `library`: what `faketimeLibrary` found. */
  constructor(
    dir: string,
    private readonly library: string,
  ) {
    this.file = join(dir, "faketime");
    writeFileSync(this.file, `${faketimeSpec(0)}\n`);
  }

  /** The variables a controller process starts with: the library preloaded, its offset read from the run's file. */
  env(inherited: string | undefined): Record<string, string> {
    return {
      LD_PRELOAD: inherited === undefined || inherited === "" ? this.library : `${this.library}:${inherited}`,
      FAKETIME_TIMESTAMP_FILE: this.file,
      // Re-read at every reading, so a running process sees the offset from the point on (cached for 10 s otherwise).
      FAKETIME_NO_CACHE: "1",
      FAKETIME_DONT_FAKE_MONOTONIC: "1",
    };
  }

  /** Sets the wall clock of every process of the run `offsetMs` off the true time from now on. */
  set(offsetMs: number): void {
    writeFileSync(this.file, `${faketimeSpec(offsetMs)}\n`);
  }
}
