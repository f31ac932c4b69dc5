// Where a Go run's CPU goes, from V8's sampling profiler in this process (node:inspector): each sample goes to the
// first part below that its stack shows, looked for in this order. The instance: `WebAssembly.Instance` (its memory
// and data segments) and the pool's zeroing of a reused memory. Package init: Go code under `runtime.doInit1` (every
// package's init, client-go registering its API types). The Go code: any other frame of the wasm module, the
// runtime's allocator, collector and scheduler included. The host glue: wasm_exec.js (its frames have no file, being
// evaluated with `new Function`) and src/go. The wire: src/module (connections, framing, sockets) and Node's
// streams under it. The server: src/server and src/store (routing, admission, JSON and protobuf encoding) and Node's HTTP server
// that parses the requests for them. The
// simulator: src/sim and src/explore. V8's collections are their own part; the rest is Node's event loop (microtasks,
// promise bookkeeping, streams no frame of settle's called). Benchmarks may read real time.
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";

export type GoPart = "instance" | "package init" | "go code" | "host glue" | "wire" | "server" | "simulator" | "gc" | "other";

const parts: readonly GoPart[] = ["instance", "package init", "go code", "host glue", "wire", "server", "simulator", "gc", "other"];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const srcRoot = fileURLToPath(new URL("../src/", import.meta.url));

/** Which part a frame's file names, if any. */
function fileSide(url: string): GoPart | undefined {
  // Node's HTTP server parses the requests for settle's in-process server (src/module/wire.ts serves through it).
  if (/^node:_http_(server|common|incoming)$/.test(url)) return "server";
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  if (!path.startsWith(srcRoot)) return undefined;
  const area = path.slice(srcRoot.length).split("/")[0];
  if (area === "go") return "host glue";
  if (area === "module") return "wire";
  if (area === "server" || area === "store") return "server";
  if (area === "sim" || area === "explore") return "simulator";
  return undefined;
}

/** The part of a sample whose stack is `frames`, leaf first. */
function partOf(frames: ReadonlyArray<ProfileNode["callFrame"]>): GoPart {
  const leaf = frames[0]!;
  if (leaf.functionName === "(garbage collector)") return "gc";
  if (frames.some((f) => f.functionName === "Instance" && f.url === "") || frames.some((f) => f.functionName === "takeMemory")) return "instance";
  if (frames.some((f) => f.url.startsWith("wasm://") && f.functionName === "runtime.doInit1")) return "package init";
  if (leaf.url.startsWith("wasm://")) return "go code";
  // wasm_exec.js's functions (evaluated from text) and its callers' builtins have no file: the glue between them.
  if (leaf.url === "" && frames.some((f) => f.url.startsWith("wasm://"))) return "host glue";
  for (const frame of frames) {
    const side = fileSide(frame.url);
    if (side !== undefined) return side;
  }
  return "other";
}

/** The share of CPU time (idle excluded) of each part while `work` runs. */
export async function profileGoSplit(work: () => Promise<void>): Promise<Record<GoPart, number>> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  let profile: Profile;
  try {
    await work();
  } finally {
    profile = ((await session.post("Profiler.stop")) as { profile: Profile }).profile;
    session.disconnect();
  }
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const partById = new Map<number, GoPart | "idle">();
  const totals = Object.fromEntries(parts.map((part) => [part, 0])) as Record<GoPart, number>;
  let all = 0;
  profile.samples.forEach((id, i) => {
    let part = partById.get(id);
    if (part === undefined) {
      const frames: Array<ProfileNode["callFrame"]> = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) frames.push(byId.get(at)!.callFrame);
      part = frames[0]!.functionName === "(idle)" ? "idle" : partOf(frames);
      partById.set(id, part);
    }
    if (part === "idle") return;
    const delta = profile.timeDeltas[i] ?? 0;
    totals[part] += delta;
    all += delta;
  });
  for (const part of parts) totals[part] = all === 0 ? 0 : totals[part] / all;
  return totals;
}

export function formatSplit(split: Record<GoPart, number>): string {
  return parts.map((part) => `${part} ${(split[part] * 100).toFixed(0)}%`).join(", ");
}
