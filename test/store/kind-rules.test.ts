// Objects the API server refuses on create, refused by the store with its 422s, so that a controller that builds one
// (a scale-down computed below zero, a Service without ports, two containers of one name) fails as it would on a real
// cluster instead of writing something no real server would hold.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { assertFails, newStore } from "./helpers.ts";

const ns = "default";
const meta = (name: string) => ({ name, namespace: ns });
const template = { metadata: { labels: { a: "1" } }, spec: { containers: [{ name: "c", image: "x" }] } };

test("a Service needs ports (unless headless or ExternalName), port numbers in range, and names when it has several", () => {
  const store = newStore();
  const service = (name: string, spec: object) => ({ apiVersion: "v1", kind: "Service", metadata: meta(name), spec }) as KubeObject;
  assertFails(store, () => store.create(service("none", { selector: { a: "1" } })), 422, "Invalid", /spec\.ports: Required value/);
  assertFails(store, () => store.create(service("zero", { ports: [{ port: 0 }] })), 422, "Invalid", /spec\.ports\[0\]\.port: Invalid value: 0: must be between 1 and 65535, inclusive/);
  assertFails(store, () => store.create(service("two", { ports: [{ port: 80 }, { port: 443 }] })), 422, "Invalid", /spec\.ports\[0\]\.name: Required value/);
  assertFails(store, () => store.create(service("same", { ports: [{ name: "a", port: 80 }, { name: "a", port: 443 }] })), 422, "Invalid", /spec\.ports\[1\]\.name: Duplicate value: "a"/);
  assert.equal(store.create(service("headless", { clusterIP: "None", selector: { a: "1" } })).metadata.name, "headless");
  assert.equal(store.create(service("external", { type: "ExternalName", externalName: "example.com" })).metadata.name, "external");
});

test("workloads refuse negative replicas; pods refuse duplicate container names and container ports out of range", () => {
  const store = newStore();
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: meta("d"), spec: { replicas: -1, selector: { matchLabels: { a: "1" } }, template } } as KubeObject;
  assertFails(store, () => store.create(deployment), 422, "Invalid", /spec\.replicas: Invalid value: -1: must be greater than or equal to 0/);
  const pod = (name: string, spec: object) => ({ apiVersion: "v1", kind: "Pod", metadata: meta(name), spec }) as KubeObject;
  assertFails(store, () => store.create(pod("dup", { initContainers: [{ name: "c", image: "x" }], containers: [{ name: "c", image: "y" }] })), 422, "Invalid", /spec\.containers\[0\]\.name: Duplicate value: "c"/);
  assertFails(store, () => store.create(pod("port", { containers: [{ name: "c", image: "x", ports: [{ containerPort: 70000 }] }] })), 422, "Invalid", /spec\.containers\[0\]\.ports\[0\]\.containerPort: Invalid value: 70000/);
});

test("an Ingress needs rules or a default backend; a PodDisruptionBudget cannot set both minAvailable and maxUnavailable", () => {
  const store = newStore();
  assertFails(store, () => store.create({ apiVersion: "networking.k8s.io/v1", kind: "Ingress", metadata: meta("i"), spec: {} } as KubeObject), 422, "Invalid", /either `defaultBackend` or `rules` must be specified/);
  const pdb = { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: meta("p"), spec: { minAvailable: 1, maxUnavailable: 1, selector: { matchLabels: { a: "1" } } } } as KubeObject;
  assertFails(store, () => store.create(pdb), 422, "Invalid", /minAvailable and maxUnavailable cannot be both set/);
});

test("a CronJob schedule has five fields or is a macro, and names no time zone", () => {
  const store = newStore();
  const cronJob = (name: string, schedule: string) =>
    ({ apiVersion: "batch/v1", kind: "CronJob", metadata: meta(name), spec: { schedule, jobTemplate: { spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "x" }] } } } } } }) as KubeObject;
  assertFails(store, () => store.create(cronJob("short", "*/5 * *")), 422, "Invalid", /spec\.schedule: Invalid value: "\*\/5 \* \*": expected exactly 5 fields, found 3: \[\*\/5 \* \*\]/);
  assertFails(store, () => store.create(cronJob("zoned", "TZ=UTC 0 * * * *")), 422, "Invalid", /cannot use TZ or CRON_TZ in schedule, use timeZone field instead/);
  assert.equal(store.create(cronJob("five", "0 */2 * * 1-5")).metadata.name, "five");
  assert.equal(store.create(cronJob("macro", "@hourly")).metadata.name, "macro");
});
