// The reuse of Go instances' linear memories (src/go/memory.ts): the module rewritten to import its memory, a memory
// given back zeroed to the next incarnation, and a client-go program's run the same byte for byte whether its memory
// is fresh or one a previous incarnation grew (Go's runtime must not act on the memory's size).
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { createSimulation, defineActor, fifoStrategy, randomStrategy } from "../../src/sim/index.ts";
import { kernelAccess } from "../../src/sim/access.ts";
import { hubs } from "../../src/module/hub.ts";
import { defaultFaultBudget } from "../../src/explore/scenario.ts";
import { goActor } from "../../src/go/actor.ts";
import { buildGoProgram, wasmApi, type WasmModule } from "../../src/go/build.ts";
import { giveBackMemory, importingMemory, MEMORY_IMPORT, takeMemory } from "../../src/go/memory.ts";

/** The part of the WebAssembly API used here (the TypeScript libraries in use declare none of it). */
interface Memory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface Wasm {
  Module: (new (bytes: Uint8Array) => WasmModule) & { imports(module: WasmModule): Array<{ module: string; name: string; kind: string }> };
  Instance: new (module: WasmModule, imports: object) => { exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number }) => Memory;
}
const wasm = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

const here = dirname(fileURLToPath(import.meta.url));
const fixture = join(here, "fixtures", "clientgo");

/**
 * A module as Go's linker lays one out, by hand: one imported function, a memory of 2 pages defined in the module,
 * exported as "mem", and a data segment writing "go" at address 16.
 */
const tiny = Uint8Array.from([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  // type section: one type, () -> ()
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
  // import section: gojs.f, a function of type 0
  0x02, 0x0a, 0x01, 0x04, 0x67, 0x6f, 0x6a, 0x73, 0x01, 0x66, 0x00, 0x00,
  // memory section: one memory, at least 2 pages
  0x05, 0x03, 0x01, 0x00, 0x02,
  // export section: "mem", memory 0
  0x07, 0x07, 0x01, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00,
  // data section: one active segment at i32.const 16, the bytes "go"
  0x0b, 0x08, 0x01, 0x00, 0x41, 0x10, 0x0b, 0x02, 0x67, 0x6f,
]);

test("importingMemory moves the module's memory to an import of the same limits; its data segments land in the memory given", () => {
  const rewritten = importingMemory(tiny);
  assert.equal(rewritten.initialPages, 2);
  assert.equal(rewritten.maximumPages, undefined);
  const module = new wasm.Module(rewritten.bytes);
  assert.deepEqual(wasm.Module.imports(module), [
    { module: "gojs", name: "f", kind: "function" },
    { module: MEMORY_IMPORT.module, name: MEMORY_IMPORT.name, kind: "memory" },
  ]);
  const memory = new wasm.Memory({ initial: 2 });
  const instance = new wasm.Instance(module, { gojs: { f() {} }, [MEMORY_IMPORT.module]: { [MEMORY_IMPORT.name]: memory } });
  assert.equal(instance.exports.mem, memory, "the export is the imported memory");
  assert.equal(Buffer.from(memory.buffer, 16, 2).toString("latin1"), "go");
});

test("a memory given back is taken again zeroed, grown or not; one of another module is not", () => {
  const limits = { initialPages: 2, maximumPages: undefined };
  const module = new wasmApi.Module(importingMemory(tiny).bytes);
  const other = new wasmApi.Module(importingMemory(tiny).bytes);
  const first = takeMemory(module, limits) as Memory;
  assert.equal(first.buffer.byteLength, 2 * 65536);
  first.grow(3);
  new Uint8Array(first.buffer).fill(7);
  giveBackMemory(module, first);
  assert.notEqual(takeMemory(other, limits), first);
  const again = takeMemory(module, limits) as Memory;
  assert.equal(again, first);
  assert.equal(again.buffer.byteLength, 5 * 65536);
  assert.ok(new Uint8Array(again.buffer).every((byte) => byte === 0), "every byte of a reused memory is zero");
  assert.notEqual(takeMemory(module, limits), first, "taken once, a memory is not in the pool");
});

async function traceHash(seed: number): Promise<string> {
  const sim = createSimulation({ seed, traceMode: "hash-only", requestLatencyMs: [1, 20] });
  sim.addActor(goActor({ name: "op", dir: fixture })[0]!);
  sim.addActor(defineActor({ name: "user", faultable: false, crashable: false, async start(ctx) {
    for (const name of ["p1", "p2"]) {
      await ctx.clock.sleep(1000);
      await ctx.client.create({ object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", labels: { role: "parent" } } } });
    }
  } }));
  const result = await sim.run({ strategy: randomStrategy(), maxSteps: 3000, untilMs: sim.clock.now() + 30_000, faultBudget: defaultFaultBudget });
  return result.traceHash;
}

/** Ends the simulation that ran last, as the next one's start would: its Go incarnations give back their memories. */
async function retireLast(): Promise<void> {
  const sim = createSimulation({ seed: 1 });
  sim.addActor(defineActor({ name: "next", faultable: false, crashable: false, async start(ctx) {
    hubs.hubFor(kernelAccess(ctx).kernel);
  } }));
  await sim.run({ strategy: fifoStrategy(), maxSteps: 10 });
}

test("a client-go run is the same in a fresh memory and in a reused one that a previous incarnation grew", async () => {
  const program = buildGoProgram(fixture);
  // Seed 3's run in a fresh memory: no memory of this program was given back yet in this process.
  const fresh = await traceHash(3);
  await retireLast();
  // A memory four times the module's initial size, its bytes not zero, given back last: the next run takes it.
  const grown = new wasm.Memory({ initial: 4 * program.initialPages });
  new Uint8Array(grown.buffer).fill(0xab);
  giveBackMemory(program.module, grown);
  const again = await traceHash(3);
  const bytes = new Uint8Array(grown.buffer);
  assert.equal(bytes[bytes.length - 1], 0, "the run took the grown memory and zeroed it");
  assert.equal(again, fresh);
});
