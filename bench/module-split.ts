// Where a module run's CPU goes, split between the module's own code path and settle's side, from V8's sampling
// profilers in this process (node:inspector): the module's own path is its bundle (the operator and its libraries,
// fresh load included, esbuild's keepNames helper excepted) and Node's HTTP client (`_http_client`, `_http_agent`);
// settle's side is that helper and everything of settle's sources (kernel, wire, framing, socket, the server's request handling, the store) and Node's HTTP server
// that parses the requests for it. A sample belongs to the nearest frame on its stack, from the leaf up, that is one
// of those: a stream or event emitter of Node's, `_http_common`, `_http_outgoing` or `_http_incoming` (used by both
// ends) belongs to whoever called it. Collections are split by the bytes each side allocated (the sampling heap
// profiler, with objects already collected included). Samples no frame decides (microtask machinery alone, V8's
// `(program)`) count for neither side, so the module's share is, if anything, understated: the ceiling derived from
// it is generous. Benchmarks may read real time.
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";

export type Side = "load" | "libraries" | "http-client" | "settle" | "http-server" | "undecided";

export interface CpuSplit {
  /** Share of non-idle profiled CPU time per side, collections excluded (0..1). */
  share: Record<Side, number>;
  /** Share of non-idle CPU time in collections. */
  gcShare: number;
  /** Share of sampled allocated bytes per side. */
  allocShare: Record<Side, number>;
  /** The module's own path: its fresh load, its libraries, Node's HTTP client, and their part of the collections. */
  moduleOwnShare: number;
  /** The same without the fresh load (and its part of the collections): what no fresh load per incarnation would leave. */
  steadyOwnShare: number;
  samples: number;
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

const settleRoot = fileURLToPath(new URL("../", import.meta.url));

/**
 * The side a frame decides, or undefined when it belongs to whoever called it. The bundle's own top level (the
 * function each incarnation calls: line 0, no name) and what it runs is the fresh load; a library frame under it
 * stays `load` (`inherited`), one outside it is `libraries`. A frame of settle's under the load (a builtin's
 * binding, the keepNames helper) is settle's, and what it calls stays settle's until a bundle frame again.
 */
function frameSide(frame: CallFrame, bundlePath: string, inherited: Side): Side | undefined {
  const url = frame.url.startsWith("file://") ? fileURLToPath(frame.url) : frame.url;
  if (url === "") return undefined;
  if (url === bundlePath) {
    // esbuild's keepNames helper is the loader's doing (Node never runs it): settle's side.
    if (frame.functionName === "__name") return "settle";
    return frame.lineNumber === 0 && frame.functionName === "" ? "load" : inherited === "load" ? "load" : "libraries";
  }
  if (url === "node:_http_client" || url === "node:_http_agent") return "http-client";
  if (url === "node:_http_server") return "http-server";
  if (url.startsWith(settleRoot) && !url.includes("/node_modules/")) return "settle";
  return undefined;
}

function emptySides(): Record<Side, number> {
  return { load: 0, libraries: 0, "http-client": 0, settle: 0, "http-server": 0, undecided: 0 };
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** Profiled CPU time per side (µs), plus collections and idle. */
function splitCpuProfile(profile: { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] }, bundlePath: string): { bySide: Record<Side, number>; gcUs: number; idleUs: number; samples: number } {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const sideOf = new Map<number, Side | "gc" | "idle">();
  // Root first: each node takes its own side or its caller's.
  const visit = (node: ProfileNode, inherited: Side | "gc" | "idle") => {
    const name = node.callFrame.functionName;
    const side = name === "(garbage collector)" ? "gc" : name === "(idle)" ? "idle" : (frameSide(node.callFrame, bundlePath, inherited === "gc" || inherited === "idle" ? "undecided" : inherited) ?? inherited);
    sideOf.set(node.id, side);
    for (const child of node.children ?? []) visit(byId.get(child)!, side);
  };
  visit(profile.nodes[0]!, "undecided");
  const bySide = emptySides();
  let gcUs = 0;
  let idleUs = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the delta to the next one (the last sample's is unknown: it is left out).
  for (let i = 0; i + 1 < samples.length; i++) {
    const us = Math.max(0, deltas[i + 1] ?? 0);
    const side = sideOf.get(samples[i]!) ?? "undecided";
    if (side === "gc") gcUs += us;
    else if (side === "idle") idleUs += us;
    else bySide[side] += us;
  }
  return { bySide, gcUs, idleUs, samples: samples.length };
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/** Sampled allocated bytes per side. */
function splitHeapProfile(head: HeapNode, bundlePath: string): Record<Side, number> {
  const bySide = emptySides();
  const visit = (node: HeapNode, inherited: Side) => {
    const side = frameSide(node.callFrame, bundlePath, inherited) ?? inherited;
    bySide[side] += node.selfSize;
    for (const child of node.children) visit(child, side);
  };
  visit(head, "undecided");
  return bySide;
}

function shares(values: Record<Side, number>): Record<Side, number> {
  const total = Object.values(values).reduce((a, b) => a + b, 0);
  const out = emptySides();
  for (const side of Object.keys(values) as Side[]) out[side] = total === 0 ? 0 : values[side] / total;
  return out;
}

/** Runs `work` under both profilers and splits its CPU between the module's own path and settle's side. */
export async function profileCpuSplit(work: () => Promise<void>, bundlePath: string, options: { intervalUs?: number } = {}): Promise<CpuSplit> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: options.intervalUs ?? 200 });
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", { samplingInterval: 16 * 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    await session.post("Profiler.start");
    await work();
    const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] } };
    const heap = (await session.post("HeapProfiler.stopSampling")) as unknown as { profile: { head: HeapNode } };
    const cpu = splitCpuProfile(profile, bundlePath);
    const alloc = shares(splitHeapProfile(heap.profile.head, bundlePath));
    const busyUs = Object.values(cpu.bySide).reduce((a, b) => a + b, 0) + cpu.gcUs;
    const share = emptySides();
    for (const side of Object.keys(share) as Side[]) share[side] = busyUs === 0 ? 0 : cpu.bySide[side] / busyUs;
    const gcShare = busyUs === 0 ? 0 : cpu.gcUs / busyUs;
    const moduleAlloc = alloc.load + alloc.libraries + alloc["http-client"];
    const steadyAlloc = alloc.libraries + alloc["http-client"];
    return {
      share,
      gcShare,
      allocShare: alloc,
      moduleOwnShare: share.load + share.libraries + share["http-client"] + gcShare * moduleAlloc,
      steadyOwnShare: share.libraries + share["http-client"] + gcShare * steadyAlloc,
      samples: cpu.samples,
    };
  } finally {
    await session.post("Profiler.disable").catch(() => undefined);
    await session.post("HeapProfiler.disable").catch(() => undefined);
    session.disconnect();
  }
}
