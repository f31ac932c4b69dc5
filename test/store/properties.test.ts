// Property tests over random operation sequences (seeds pinned): revisions strictly increase, a watch
// from r yields exactly the history after r, a list at r is the fold of the history up to r, and a failed
// operation changes nothing.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { KubeObject } from "../../src/api/object.ts";
import { isApiError } from "../../src/api/errors.ts";
import type { Store, StoreEvent } from "../../src/store/types.ts";
import { newStore, snapshot } from "./helpers.ts";

const cms = { apiVersion: "v1", kind: "ConfigMap" };
const names = ["a", "b", "c", "d"];
const namespaces = ["default", "other"];

type Op =
  | { op: "create"; name: string; ns: string; app: string; finalizer: boolean; owner: string | undefined }
  | { op: "update"; name: string; ns: string; app: string; value: string; stale: boolean }
  | { op: "patch"; name: string; ns: string; app: string | null }
  | { op: "delete"; name: string; ns: string; policy: "Background" | "Orphan" | "Foreground"; badUid: boolean }
  | { op: "unfinalize"; name: string; ns: string }
  | { op: "invalid"; name: string }
  | { op: "gc" };

const nameArb = fc.constantFrom(...names);
const nsArb = fc.constantFrom(...namespaces);
const appArb = fc.constantFrom("x", "y");

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant("create" as const), name: nameArb, ns: nsArb, app: appArb, finalizer: fc.boolean(), owner: fc.option(nameArb, { nil: undefined }) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant("update" as const), name: nameArb, ns: nsArb, app: appArb, value: fc.constantFrom("1", "2"), stale: fc.boolean() }), weight: 2 },
  fc.record({ op: fc.constant("create" as const), name: nameArb, ns: nsArb, app: appArb, finalizer: fc.boolean(), owner: fc.option(nameArb, { nil: undefined }) }),
  fc.record({ op: fc.constant("update" as const), name: nameArb, ns: nsArb, app: appArb, value: fc.constantFrom("1", "2"), stale: fc.boolean() }),
  fc.record({ op: fc.constant("patch" as const), name: nameArb, ns: nsArb, app: fc.constantFrom("x", "y", null) }),
  fc.record({ op: fc.constant("delete" as const), name: nameArb, ns: nsArb, policy: fc.constantFrom("Background" as const, "Orphan" as const, "Foreground" as const), badUid: fc.boolean() }),
  fc.record({ op: fc.constant("unfinalize" as const), name: nameArb, ns: nsArb }),
  fc.record({ op: fc.constant("invalid" as const), name: fc.constantFrom("UPPER", "under_score", "") }),
  fc.constant({ op: "gc" as const }),
);

function current(store: Store, ns: string, name: string): KubeObject | undefined {
  try {
    return store.get({ ...cms, namespace: ns, name });
  } catch {
    return undefined;
  }
}

/** Applies one operation; ApiErrors are the expected failures, anything else is a bug. */
function apply(store: Store, op: Op, stale: Map<string, KubeObject>): void {
  const key = "ns" in op ? `${op.ns}/${op.name}` : "";
  const now = "ns" in op ? current(store, op.ns, op.name) : undefined;
  switch (op.op) {
    case "create": {
      const owner = op.owner === undefined ? undefined : current(store, op.ns, op.owner);
      const ownerReferences = owner === undefined ? undefined : [{ apiVersion: "v1", kind: "ConfigMap", name: owner.metadata.name!, uid: owner.metadata.uid!, blockOwnerDeletion: true }];
      const metadata = { name: op.name, namespace: op.ns, labels: { app: op.app }, ...(op.finalizer ? { finalizers: ["example.com/f"] } : {}), ...(ownerReferences ? { ownerReferences } : {}) };
      store.create({ ...cms, metadata, data: { v: "0" } });
      return;
    }
    case "update": {
      const base = op.stale ? (stale.get(key) ?? now) : now;
      if (now !== undefined) stale.set(key, now);
      const object = base ?? { ...cms, metadata: { name: op.name, namespace: op.ns } };
      store.update({ ...object, metadata: { ...object.metadata, labels: { app: op.app } }, data: { v: op.value } });
      return;
    }
    case "patch":
      store.patch({ ...cms, namespace: op.ns, name: op.name, patchType: "merge", patch: { metadata: { labels: { app: op.app } } } });
      return;
    case "delete":
      store.delete({ ...cms, namespace: op.ns, name: op.name, propagationPolicy: op.policy, ...(op.badUid ? { preconditions: { uid: "nope" } } : {}) });
      return;
    case "unfinalize":
      if (now === undefined) throw new Error("skip");
      store.update({ ...now, metadata: { ...now.metadata, finalizers: (now.metadata.finalizers ?? []).filter((f) => f !== "example.com/f") } });
      return;
    case "invalid":
      store.create({ ...cms, metadata: { name: op.name, namespace: "default" } });
      return;
    case "gc":
      store.collectGarbage();
      return;
  }
}

function setup(historyRevisionsMax: number): { store: Store; all: StoreEvent[]; start: number } {
  const store = newStore({ historyRevisionsMax });
  store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } });
  const all: StoreEvent[] = [];
  store.watch({ ...cms, fromRevision: store.revision }, (e) => all.push(e));
  return { store, all, start: store.revision };
}

/** Runs the operations, checking after each that revisions only grow and that a failure changed nothing. */
function run(store: Store, ops: Op[]): void {
  const stale = new Map<string, KubeObject>();
  for (const op of ops) {
    const before = snapshot(store);
    const revision = store.revision;
    try {
      apply(store, op, stale);
    } catch (error) {
      if (error instanceof Error && error.message === "skip") continue;
      assert.ok(isApiError(error), `unexpected ${String(error)} for ${JSON.stringify(op)}`);
      assert.deepEqual(snapshot(store), before, `failed ${JSON.stringify(op)} changed the store`);
    }
    assert.ok(store.revision >= revision);
  }
}

function fold(events: readonly StoreEvent[], upTo: number): KubeObject[] {
  const state = new Map<string, KubeObject>();
  for (const e of events) {
    if (e.revision > upTo) break;
    const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
    if (e.type === "DELETED") state.delete(key);
    else state.set(key, e.object);
  }
  return [...state.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, o]) => o);
}

/** What a watch with `app=x` must see, derived from the raw history by the selector-transition rules. */
function filtered(events: readonly StoreEvent[]): Array<[string, number, string | undefined]> {
  const last = new Map<string, KubeObject>();
  const out: Array<[string, number, string | undefined]> = [];
  const matches = (o: KubeObject | undefined) => o?.metadata.labels?.app === "x";
  for (const e of events) {
    const key = `${e.object.metadata.namespace}/${e.object.metadata.name}`;
    const before = last.get(key);
    if (e.type === "DELETED") last.delete(key);
    else last.set(key, e.object);
    const was = e.type !== "ADDED" && matches(before);
    const now = e.type !== "DELETED" && matches(e.object);
    if (e.type === "DELETED" && matches(e.object)) out.push(["DELETED", e.revision, e.object.metadata.name]);
    else if (now && was) out.push(["MODIFIED", e.revision, e.object.metadata.name]);
    else if (now) out.push(["ADDED", e.revision, e.object.metadata.name]);
    else if (was) out.push(["DELETED", e.revision, e.object.metadata.name]);
  }
  return out;
}

test("revisions strictly increase, history is contiguous, and failed operations change nothing", () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 10, maxLength: 50 }), (ops) => {
      const { store, all } = setup(100_000);
      run(store, ops);
      const history = store.history(0);
      history.forEach((e, i) => assert.equal(e.revision, i + 1));
      assert.equal(history.length, store.revision);
      for (let i = 1; i < all.length; i++) assert.ok(all[i]!.revision > all[i - 1]!.revision);
    }),
    { seed: 42, numRuns: 250 },
  );
});

test("a list at revision r equals the fold of the history up to r, also across compaction", () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 10, maxLength: 50 }), fc.constantFrom(8, 100_000), (ops, historyRevisionsMax) => {
      const { store, all } = setup(historyRevisionsMax);
      run(store, ops);
      for (let r = store.compactedRevision; r <= store.revision; r++) {
        assert.deepEqual(store.list({ ...cms, revision: r }).items, fold(all, r), `list at ${r}`);
      }
      for (const object of fold(all, store.revision)) {
        const at = store.get({ ...cms, namespace: object.metadata.namespace!, name: object.metadata.name! });
        assert.equal(at, object);
      }
    }),
    { seed: 7, numRuns: 200 },
  );
});

test("a watch from revision r yields exactly the (filtered) history after r, live or replayed", () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 10, maxLength: 50 }), fc.nat({ max: 40 }), (ops, cut) => {
      const { store, all, start } = setup(100_000);
      const live: Array<[string, number, string | undefined]> = [];
      store.watch({ ...cms, labelSelector: "app=x", fromRevision: start }, (e) => live.push([e.type, e.revision, e.object.metadata.name]));
      run(store, ops.slice(0, cut));
      const middle = store.revision;
      run(store, ops.slice(cut));
      const replayed: Array<[string, number, string | undefined]> = [];
      store.watch({ ...cms, labelSelector: "app=x", fromRevision: middle }, (e) => replayed.push([e.type, e.revision, e.object.metadata.name]));
      const expected = filtered(all);
      assert.deepEqual(live, expected);
      assert.deepEqual(replayed, expected.filter(([, revision]) => revision > middle));
      const raw = store.history(middle).filter((e) => e.object.kind === "ConfigMap");
      assert.deepEqual(raw, all.filter((e) => e.revision > middle));
    }),
    { seed: 1234, numRuns: 250 },
  );
});
