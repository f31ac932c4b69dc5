// The runtime logs through one injected function, so the simulator can put lines in its trace and a real
// process can hand them to any logger.

/** One log line: a fixed message and structured fields (never pre-formatted object contents). */
export type Log = (message: string, fields?: Readonly<Record<string, unknown>>) => void;

export const silentLog: Log = () => {};
