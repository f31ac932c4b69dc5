// The linear memories of a Go program's incarnations, reused. Go's linker makes a module that defines its own memory
// (about 27 MiB for client-go, 25 MB of it data segments): every new instance gets a fresh memory from the system,
// and the first touch of each page, the copy of the data segments and the collections V8 runs for that much new
// external memory were most of an incarnation's instantiation. Here the module is rewritten (`importingMemory`) to
// import its memory instead, and an incarnation that is over gives its memory back to the program's pool; the next
// one takes it, zeroed, and instantiation copies the data segments into it as into a fresh one.
//
// A reused memory may be larger than the module's initial size (the incarnation before grew it). Go's runtime on
// wasm reads the size once, at start (`osinit`: `blocMax`, the end of the memory it may use without growing it), and
// hands out addresses from its own break (`bloc`, which starts at the end of its data whatever the size): a larger
// memory only means fewer `memory.grow` calls, never other addresses, other values or another order of anything the
// program does. The bytes past the break are zero as in a fresh memory, because the pool zeroes every byte. (So reads
// Go 1.26's runtime, os_wasm.go's osinit and mem_wasm.go's sbrk; test/go/memory.test.ts compares a run in a fresh
// and in a larger reused memory, so a release that read the size otherwise would fail it.)
import { assert } from "../api/assert.ts";

/** The import the rewritten module takes its memory from. */
export const MEMORY_IMPORT = { module: "settle", name: "mem" } as const;

/** Memories kept per program at most (one per replica in use is what a run needs). */
const POOLED_MEMORIES_MAX = 8;

/** A memory larger than this is not kept (zeroing it would cost more than a fresh one). */
const POOLED_MEMORY_BYTES_MAX = 256 * 1024 * 1024;

/** The module's memory, a section id of the wasm binary format, and the import section's. */
const SECTION_IMPORT = 2;
const SECTION_MEMORY = 5;
const IMPORT_KIND_MEMORY = 2;

/** Sections of a module at most: a bound on a walk of a malformed binary. */
const SECTIONS_MAX = 1000;

interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface MemoryApi {
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
}
const memoryApi = (globalThis as unknown as { WebAssembly: MemoryApi }).WebAssembly;

/** A module's bytes rewritten to import its one memory, and that memory's limits in 64 KiB pages. */
export interface MemoryImporting {
  readonly bytes: Uint8Array;
  readonly initialPages: number;
  readonly maximumPages: number | undefined;
}

/**
 * `bytes` (a module defining exactly one memory, as Go's linker writes it) with the memory section removed and the
 * same memory type appended to the imports as `settle.mem`. Memory index 0 stays the same memory (imported
 * memories come first and there is no other); function, global and table indices do not count memories.
 */
export function importingMemory(bytes: Uint8Array): MemoryImporting {
  const reader = new Reader(bytes);
  assert(bytes.length >= 8 && reader.u32le(0) === 0x6d736100 && reader.u32le(4) === 1, "a wasm module starts with its magic and version 1");
  reader.at = 8;
  const sections: Array<{ id: number; body: Uint8Array }> = [];
  while (reader.at < bytes.length) {
    assert(sections.length < SECTIONS_MAX, "a wasm module has a bounded number of sections");
    const id = reader.byte();
    const size = reader.leb();
    sections.push({ id, body: bytes.subarray(reader.at, reader.at + size) });
    reader.at += size;
  }
  const memory = sections.find((section) => section.id === SECTION_MEMORY);
  const imports = sections.find((section) => section.id === SECTION_IMPORT);
  assert(memory !== undefined && imports !== undefined, "a Go wasm module defines its memory and imports its host functions");
  const memoryReader = new Reader(memory.body);
  assert(memoryReader.leb() === 1, "a Go wasm module defines one memory");
  const limitsStart = memoryReader.at;
  const flags = memoryReader.byte();
  assert(flags === 0 || flags === 1, "the memory is a plain 32-bit memory (limits flag 0 or 1)");
  const initialPages = memoryReader.leb();
  const maximumPages = flags === 1 ? memoryReader.leb() : undefined;
  const limits = memory.body.subarray(limitsStart, memoryReader.at);
  const importReader = new Reader(imports.body);
  const count = importReader.leb();
  const entry = Buffer.concat([name(MEMORY_IMPORT.module), name(MEMORY_IMPORT.name), Uint8Array.of(IMPORT_KIND_MEMORY), limits]);
  const importBody = Buffer.concat([leb(count + 1), imports.body.subarray(importReader.at), entry]);
  const out: Uint8Array[] = [bytes.subarray(0, 8)];
  for (const section of sections) {
    if (section.id === SECTION_MEMORY) continue;
    const body = section.id === SECTION_IMPORT ? importBody : section.body;
    out.push(Uint8Array.of(section.id), leb(body.length), body);
  }
  return { bytes: Buffer.concat(out), initialPages, maximumPages };
}

/** Memories given back by incarnations that are over, by the module they were made for (one pool per thread). */
const pools = new WeakMap<object, WasmMemory[]>();

/** A memory for a new incarnation of `module`: a pooled one zeroed, else a fresh one of the module's initial size. */
export function takeMemory(module: object, limits: { initialPages: number; maximumPages: number | undefined }): WasmMemory {
  const pooled = pools.get(module)?.pop();
  if (pooled !== undefined) {
    new Uint8Array(pooled.buffer).fill(0);
    return pooled;
  }
  const descriptor: { initial: number; maximum?: number } = { initial: limits.initialPages };
  if (limits.maximumPages !== undefined) descriptor.maximum = limits.maximumPages;
  return new memoryApi.Memory(descriptor);
}

/** The memory of an incarnation that is over and never runs again (its instance is dropped). */
export function giveBackMemory(module: object, memory: WasmMemory): void {
  if (memory.buffer.byteLength > POOLED_MEMORY_BYTES_MAX) return;
  let pool = pools.get(module);
  if (pool === undefined) {
    pool = [];
    pools.set(module, pool);
  }
  assert(!pool.includes(memory), "a memory is given back once");
  if (pool.length < POOLED_MEMORIES_MAX) pool.push(memory);
}

class Reader {
  at = 0;
  constructor(private readonly bytes: Uint8Array) {}

  byte(): number {
    assert(this.at < this.bytes.length, "a wasm module's section is within the module");
    return this.bytes[this.at++]!;
  }

  u32le(at: number): number {
    return (this.bytes[at]! | (this.bytes[at + 1]! << 8) | (this.bytes[at + 2]! << 16) | (this.bytes[at + 3]! << 24)) >>> 0;
  }

  /** An unsigned LEB128 of at most 32 bits. */
  leb(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.byte();
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    throw new Error("a wasm LEB128 of more than 32 bits");
  }
}

function leb(value: number): Uint8Array {
  assert(Number.isInteger(value) && value >= 0 && value < 2 ** 32, "a LEB128 of 32 bits");
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest % 0x80;
    rest = Math.floor(rest / 0x80);
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return Uint8Array.from(out);
}

function name(text: string): Uint8Array {
  const bytes = Buffer.from(text, "utf8");
  return Buffer.concat([leb(bytes.length), bytes]);
}
