// Field ownership recorded for updates: `recordUpdate` keeps an entry's field set when an update leaves it as it was
// (so that its `fieldsV1` tree is made once), and must still say exactly what the plain rule says: the fields the
// writer changed become its own, in the order kept-then-changed, and leave every other entry; fields the object no
// longer sets leave every entry. A reference of that rule is run beside it over seeded random updates.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Clock } from "../../src/api/clock.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ResourceType } from "../../src/api/resources.ts";
import { decoratedJsonText, ManagedFields, recordUpdate } from "../../src/server/apply/apply.ts";
import type { ManagedEntry } from "../../src/server/apply/apply.ts";
import { fieldChanges, toFieldsV1 } from "../../src/server/apply/fields.ts";
import { schemaOf } from "../../src/server/schema.ts";
import { createServerStore } from "../../src/server/admission/admission.ts";

/** A clock that moves only when told, so that entry times are known. */
function steppedClock(): Clock & { advance(ms: number): void } {
  let now = Date.UTC(2026, 0, 1);
  return {
    now: () => now,
    sleep: () => Promise.resolve(),
    setTimer: () => ({ cancel: () => {} }),
    advance: (ms) => void (now += ms),
  };
}

/** The rule as first written: filter every entry, then add what changed to the writer's (appending a new one if none). */
function referenceUpdate(old: ManagedEntry[], before: KubeObject, after: KubeObject, manager: string, time: string, resource: ResourceType): ManagedEntry[] {
  const { now, changed } = fieldChanges(before, after, schemaOf(resource), () => true);
  const entries = old.map((e) => ({ ...e, fields: new Set([...e.fields].filter((p) => now.has(p) && !changed.has(p))) }));
  const mine = entries.find((e) => e.manager === manager && e.operation === "Update" && e.subresource === undefined);
  if (mine !== undefined) {
    for (const p of changed) mine.fields.add(p);
    if (changed.size > 0) mine.time = time;
  } else if (changed.size > 0) {
    entries.push({ manager, operation: "Update", apiVersion: after.apiVersion, time, fields: changed });
  }
  return entries.filter((e) => e.fields.size > 0);
}

function rng(seed: number): (n: number) => number {
  let x = seed;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

/** A random change of a ConfigMap's data: each of four keys kept, rewritten with the same value, changed or removed. */
function nextData(data: Record<string, string>, pick: (n: number) => number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of ["a", "b", "c", "d"]) {
    const choice = pick(4);
    if (choice === 0 && data[key] !== undefined) out[key] = data[key];
    else if (choice === 1) out[key] = String(pick(3));
  }
  return out;
}

const asPlain = (entries: readonly ManagedEntry[]) => entries.map((e) => ({ ...e, fields: [...e.fields] }));

test("recorded updates say what the plain rule says, in its field order, and show the current fieldsV1 trees", () => {
  const clock = steppedClock();
  const store = createServerStore({ now: () => clock.now() });
  const configMap = store.resourceForPlural("", "v1", "configmaps")!;
  const table = new ManagedFields(clock, () => true);
  for (const seed of [1, 7, 42, 1234]) {
    const pick = rng(seed);
    const name = `cm-${seed}`;
    let current = store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { a: "0" } } as KubeObject, {});
    recordUpdate(table, configMap, undefined, current, "creator", undefined);
    for (let step = 0; step < 200; step++) {
      clock.advance(pick(3) * 1000);
      const manager = ["creator", "editor", "scaler"][pick(3)]!;
      const data = nextData((current.data ?? {}) as Record<string, string>, pick);
      const next = store.update({ ...current, data } as KubeObject, {});
      const reference = referenceUpdate(table.entries(current.metadata.uid), current, next, manager, table.now(), configMap);
      recordUpdate(table, configMap, current, next, manager, undefined);
      const entries = table.entries(next.metadata.uid);
      assert.deepEqual(asPlain(entries), asPlain(reference), `seed ${seed}, step ${step}`);
      // Every other step the text is asked for first, before any wire object is made: made from the entries alone.
      const text = step % 2 === 0 ? table.decoratedJson(next) : undefined;
      const shown = table.decorate(next).metadata.managedFields as unknown as Array<Record<string, unknown>>;
      assert.deepEqual(
        shown.map((e) => [e.manager, e.time, e.fieldsV1]),
        reference.map((e) => [e.manager, e.time, toFieldsV1(e.fields)]),
        `seed ${seed}, step ${step}: decorated entries`,
      );
      assert.equal(text ?? table.decoratedJson(next), JSON.stringify(table.decorate(next)), `seed ${seed}, step ${step}: decorated text`);
      current = next;
    }
  }
});

test("an update that rewrites the fields its manager owns keeps the entry's field set and moves only its time", () => {
  const clock = steppedClock();
  const store = createServerStore({ now: () => clock.now() });
  const configMap = store.resourceForPlural("", "v1", "configmaps")!;
  const table = new ManagedFields(clock, () => true);
  const created = store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "same", namespace: "default" }, data: { n: "0" } } as KubeObject, {});
  recordUpdate(table, configMap, undefined, created, "bench", undefined);
  const before = table.entries(created.metadata.uid)[0]!;
  clock.advance(5000);
  const updated = store.update({ ...created, data: { n: "1" } } as KubeObject, {});
  recordUpdate(table, configMap, created, updated, "bench", undefined);
  const after = table.entries(updated.metadata.uid)[0]!;
  assert.equal(after.fields, before.fields, "the same field set");
  assert.notEqual(after.time, before.time);
  const shown = table.decorate(updated).metadata.managedFields as unknown as Array<Record<string, unknown>>;
  assert.deepEqual(shown, [{ manager: "bench", operation: "Update", apiVersion: "v1", time: after.time, fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:n": {} } } }]);
  assert.ok(Object.isFrozen(shown[0]!.fieldsV1), "a shared tree is frozen");
});

test("the decorated answer's text is what serializing the decorated object writes, member for member", () => {
  const entries = [{ manager: "m", operation: "Update", time: "2026-01-01T00:00:00Z", fieldsV1: { "f:data": { "f:\"q\"": {} } } }];
  const text = JSON.stringify(entries);
  const decorated = (o: Record<string, unknown>) => JSON.stringify({ ...o, metadata: { ...(o.metadata as object), managedFields: entries } });
  const objects: Array<Record<string, unknown>> = [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", labels: { "1": "x", b: "y" } }, data: { "2": "two", n: "\u2028 \"quoted\"" } },
    // Members JSON cannot write are left out, wherever they are; an empty metadata gets the entries alone.
    { apiVersion: "v1", kind: "ConfigMap", skipped: undefined, metadata: {}, data: undefined, "10": 1, "9": [undefined, 2] },
    { metadata: { name: "first" }, spec: { nested: { deep: [{ a: null }] } } },
  ];
  for (const object of objects) assert.equal(decoratedJsonText(object as unknown as KubeObject, text), decorated(object));
  // Metadata with entries of its own keeps their place under a spread: the caller serializes the copy instead.
  assert.equal(decoratedJsonText({ apiVersion: "v1", kind: "ConfigMap", metadata: { managedFields: [], name: "b" } } as unknown as KubeObject, text), undefined);
});

test("a status write and a main write leave each other's owners be; the answer's text matches the decorated object", () => {
  const clock = steppedClock();
  const store = createServerStore({ now: () => clock.now() });
  const pods = store.resourceForPlural("", "v1", "pods")!;
  const table = new ManagedFields(clock, () => true);
  const created = store.create({ apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "default" }, spec: { containers: [{ name: "c", image: "i" }] } } as KubeObject, {});
  recordUpdate(table, pods, undefined, created, "kubectl", undefined);
  const running = store.updateStatus({ ...created, status: { phase: "Running" } } as KubeObject, {});
  recordUpdate(table, pods, created, running, "kubelet", "status");
  // The text first, before any wire object exists; then the decorated object it must match.
  const text = table.decoratedJson(running)!;
  const shown = table.decorate(running);
  assert.equal(text, JSON.stringify(shown));
  const entries = shown.metadata.managedFields as unknown as Array<Record<string, unknown>>;
  assert.deepEqual(entries.map((e) => [e.manager, e.subresource, Object.keys(e).at(-1)]), [["kubectl", undefined, "fieldsV1"], ["kubelet", "status", "subresource"]]);
  // A write of the main resource cannot change status: the status writer keeps its fields, the creator its own.
  const creatorFields = [...table.entries(running.metadata.uid)[0]!.fields];
  assert.ok(creatorFields.includes('["f:spec","f:containers","k:{\\"name\\":\\"c\\"}","f:image"]'), creatorFields.join(" "));
  const labeled = store.update({ ...running, metadata: { ...running.metadata, labels: { tier: "web" } } } as KubeObject, {});
  recordUpdate(table, pods, running, labeled, "labeler", undefined);
  const after = table.entries(labeled.metadata.uid).map((e) => [e.manager, [...e.fields]]);
  assert.deepEqual(after, [
    ["kubectl", creatorFields],
    ["kubelet", ['["f:status","f:phase"]']],
    ["labeler", ['["f:metadata","f:labels","f:tier"]']],
  ]);
});
