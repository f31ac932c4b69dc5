import { test } from "node:test";
import assert from "node:assert/strict";
import { realClock } from "../../src/api/clock.ts";
import { drillFaultKinds, drillFaultModelParams, drillFaults, faultParamErrors, isBuiltinFaultKind } from "../../src/api/faults.ts";
import { resourceOfPath, WatchShaper } from "../../src/drill/watch-faults.ts";
import { scenarioSchema } from "../../src/scenario-yaml/schema.ts";

const line = (type: string, name: string, uid: string, data = "v") => `${JSON.stringify({ type, object: { kind: "ConfigMap", metadata: { namespace: "ns", name, uid }, data: { k: data } } })}\n`;
const seen = (out: string[]) => out.map((t) => JSON.parse(t) as { type: string; object: { metadata: { name: string; uid: string }; data: { k: string } } }).map((e) => `${e.type} ${e.object.metadata.name} ${e.object.metadata.uid} ${e.object.data.k}`);

function shaper(fault: "coalesce" | "delay-kind" | "hide-recreate", params?: Record<string, number>) {
  const holding: boolean[] = [];
  const s = new WatchShaper({ fault, resource: "configmaps", onHolding: (h) => holding.push(h), ...(params === undefined ? {} : { params }) });
  return { s, holding };
}

test("the resource of a request path: core and group APIs, namespaced or not, old /watch/ paths", () => {
  assert.equal(resourceOfPath("/api/v1/namespaces/ns/configmaps"), "configmaps");
  assert.equal(resourceOfPath("/api/v1/namespaces/ns/configmaps?watch=true"), "configmaps");
  assert.equal(resourceOfPath("/apis/apps/v1/deployments"), "deployments");
  assert.equal(resourceOfPath("/apis/academy.settle.dev/v1/namespaces/a/ensembles"), "ensembles");
  assert.equal(resourceOfPath("/api/v1/watch/namespaces/ns/pods"), "pods");
  assert.equal(resourceOfPath("/api/v1/namespaces"), "namespaces");
  assert.equal(resourceOfPath("/healthz"), undefined);
});

test("every drill fault is a kind of the shared model, with parameters that fit it, and the YAML schema offers exactly them", () => {
  for (const kind of drillFaultKinds) {
    const def = drillFaults[kind];
    const names = drillFaultModelParams(kind).map((p) => p.name);
    for (const name of Object.keys(def.params)) assert.ok(names.includes(name), `${kind}: ${name} is a parameter of ${def.model}`);
    if (isBuiltinFaultKind(def.model)) assert.deepEqual(faultParamErrors(def.model, def.params), [], kind);
  }
  const faults = scenarioSchema.properties.faults.oneOf[1].properties.kinds.items.enum;
  assert.deepEqual([...faults], [...drillFaultKinds]);
});

test("hide-recreate: a delete and a create under the same name reach the watcher as the create alone; other events pass", () => {
  const { s, holding } = shaper("hide-recreate");
  const out: string[] = [];
  const stream = s.attach("configmaps", (t) => out.push(t));
  stream.push(Buffer.from(line("ADDED", "a", "u1")));
  s.arm();
  // Split mid-line: the shaper reads whole events.
  const text = line("MODIFIED", "a", "u1", "w") + line("DELETED", "a", "u1", "w") + line("ADDED", "a", "u2", "x");
  stream.push(Buffer.from(text.slice(0, 50)));
  stream.push(Buffer.from(text.slice(50)));
  assert.deepEqual(seen(out), ["ADDED a u1 v", "MODIFIED a u1 w", "ADDED a u2 x"]);
  assert.deepEqual(holding, [true, false]);
  assert.match(s.describe(), /hid 1 configmaps delete\(s\)/);
  s.stop();
});

test("hide-recreate: a delete no create follows is delivered late, after the window, and other resources' watches are untouched", async () => {
  const { s, holding } = shaper("hide-recreate", { windowMs: 30 });
  const out: string[] = [];
  const other: string[] = [];
  const stream = s.attach("configmaps", (t) => out.push(t));
  const secrets = s.attach("secrets", (t) => other.push(t));
  s.arm();
  stream.push(Buffer.from(line("DELETED", "a", "u1")));
  secrets.push(Buffer.from(line("DELETED", "b", "u9")));
  assert.deepEqual(out, []);
  assert.deepEqual(seen(other), ["DELETED b u9 v"]);
  assert.deepEqual(holding, [true]);
  await realClock.sleep(80);
  assert.deepEqual(seen(out), ["DELETED a u1 v"]);
  assert.deepEqual(holding, [true, false]);
  assert.match(s.describe(), /1 delete\(s\) with no create after them delivered 30 ms late/);
});

test("coalesce: a window's events become each object's last state, as a relist shows it", async () => {
  const { s, holding } = shaper("coalesce", { windowMs: 40 });
  const out: string[] = [];
  const stream = s.attach("configmaps", (t) => out.push(t));
  s.arm();
  stream.push(Buffer.from(line("MODIFIED", "a", "u1", "w")));
  stream.push(Buffer.from(line("DELETED", "a", "u1", "w")));
  stream.push(Buffer.from(line("ADDED", "a", "u2", "x")));
  stream.push(Buffer.from(line("ADDED", "gone", "u3")));
  stream.push(Buffer.from(line("DELETED", "gone", "u3")));
  stream.push(Buffer.from(line("ADDED", "new", "u4")));
  stream.push(Buffer.from(line("MODIFIED", "new", "u4", "y")));
  stream.push(Buffer.from(line("DELETED", "old", "u5")));
  assert.deepEqual(out, []);
  await realClock.sleep(100);
  // a: deleted and created again, seen as modified; gone: never seen; new: added in its last state; old: deleted.
  assert.deepEqual(seen(out), ["MODIFIED a u2 x", "ADDED new u4 y", "DELETED old u5 v"]);
  assert.deepEqual(holding, [true, false]);
  // After the window, events pass one by one again.
  stream.push(Buffer.from(line("MODIFIED", "a", "u2", "z")));
  assert.equal(out.length, 4);
  assert.match(s.describe(), /held 8 configmaps event\(s\) for 40 ms and delivered 3/);
});

test("delay-kind: one resource's events wait until another resource's event is delivered and the controller wrote", () => {
  const { s, holding } = shaper("delay-kind");
  const out: string[] = [];
  const stream = s.attach("configmaps", (t) => out.push(`cm ${t}`));
  const parents = s.attach("ensembles", (t) => out.push(`parent ${t}`));
  s.arm();
  stream.push(Buffer.from(line("MODIFIED", "a", "u1", "w")));
  s.controllerWrote();
  assert.equal(out.length, 0, "a write before another resource changed does not release them");
  parents.push(Buffer.from(line("MODIFIED", "p", "u7")));
  assert.equal(out.length, 1);
  assert.ok(out[0]!.startsWith("parent "));
  s.controllerWrote();
  assert.equal(out.length, 2);
  assert.ok(out[1]!.startsWith("cm "));
  assert.deepEqual(holding, [true, false]);
  assert.match(s.describe(), /held 1 configmaps event\(s\) past an event of another resource/);
  s.stop();
});

test("a parameter that does not fit the model is refused", () => {
  assert.throws(() => shaper("coalesce", { windowMs: 0 }), /coalesce: windowMs: Invalid value: must be an integer from 1 to 600000/);
});
