// Defaulting on the server's write path and Service allocation: what a client reads back after a write, as a real
// API server would answer it, while a plain store (what the simulator drives) stays without these defaults.
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyServerDefaults, pullPolicyOf } from "../../src/server/defaults.ts";
import { createServerStore } from "../../src/server/admission/admission.ts";
import { createStore } from "../../src/store/index.ts";
import { decodeProtobuf, encodeProtobuf } from "../../src/server/encoding/protobuf.ts";
import { wireMessages } from "../../src/api/generated/k8s-api.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { request, testServer } from "./helpers.ts";

const podSpec = () => ({
  containers: [
    {
      name: "app",
      image: "nginx",
      ports: [{ containerPort: 80 }],
      livenessProbe: { httpGet: { port: 80 } },
      env: [{ name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }],
    },
  ],
  volumes: [{ name: "config", configMap: { name: "settings" } }, { name: "scratch" }],
});

test("a Deployment gets the defaults of its spec, its pod template, containers, probes and volumes", () => {
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web" }, spec: { selector: { matchLabels: { a: "b" } }, template: { spec: podSpec() } } } as unknown as KubeObject;
  applyServerDefaults(deployment);
  const spec = deployment.spec as any;
  assert.equal(spec.replicas, 1);
  assert.deepEqual(spec.strategy, { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } });
  assert.equal(spec.revisionHistoryLimit, 10);
  assert.equal(spec.progressDeadlineSeconds, 600);
  const pod = spec.template.spec;
  assert.deepEqual([pod.restartPolicy, pod.dnsPolicy, pod.terminationGracePeriodSeconds, pod.schedulerName], ["Always", "ClusterFirst", 30, "default-scheduler"]);
  assert.equal(pod.enableServiceLinks, undefined, "enableServiceLinks is a Pod's default, not a template's");
  const container = pod.containers[0];
  assert.deepEqual([container.imagePullPolicy, container.terminationMessagePath, container.terminationMessagePolicy], ["Always", "/dev/termination-log", "File"]);
  assert.equal(container.ports[0].protocol, "TCP");
  assert.deepEqual(container.livenessProbe, { httpGet: { port: 80, path: "/", scheme: "HTTP" }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 });
  assert.equal(container.env[0].valueFrom.fieldRef.apiVersion, "v1");
  assert.deepEqual(pod.volumes, [{ name: "config", configMap: { name: "settings", defaultMode: 420 } }, { name: "scratch", emptyDir: {} }]);
});

test("explicit values are kept, and a Recreate strategy gets no rolling-update parameters", () => {
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web" }, spec: { replicas: 0, strategy: { type: "Recreate" }, template: { spec: { restartPolicy: "Always", containers: [{ name: "c", image: "x:1", imagePullPolicy: "Never" }] } } } } as unknown as KubeObject;
  applyServerDefaults(deployment);
  const spec = deployment.spec as any;
  assert.equal(spec.replicas, 0);
  assert.deepEqual(spec.strategy, { type: "Recreate" });
  assert.equal(spec.template.spec.containers[0].imagePullPolicy, "Never");
});

test("image pull policy follows the tag as Go parses image names", () => {
  assert.equal(pullPolicyOf("nginx"), "Always");
  assert.equal(pullPolicyOf("nginx:latest"), "Always");
  assert.equal(pullPolicyOf("nginx:1.27"), "IfNotPresent");
  assert.equal(pullPolicyOf("registry:5000/team/app"), "Always");
  assert.equal(pullPolicyOf("registry:5000/team/app:v2"), "IfNotPresent");
  assert.equal(pullPolicyOf("app@sha256:0123"), "IfNotPresent");
});

test("kind-level rules: a Job's spec, a CronJob's, a Pod's service links, a Service's ports", () => {
  const job = { apiVersion: "batch/v1", kind: "Job", metadata: { name: "j" }, spec: { template: { spec: { restartPolicy: "Never", containers: [] } } } } as unknown as KubeObject;
  applyServerDefaults(job);
  assert.deepEqual(
    Object.fromEntries(["completions", "parallelism", "backoffLimit", "completionMode", "suspend", "podReplacementPolicy"].map((k) => [k, (job.spec as any)[k]])),
    { completions: 1, parallelism: 1, backoffLimit: 6, completionMode: "NonIndexed", suspend: false, podReplacementPolicy: "TerminatingOrFailed" },
  );
  const cron = { apiVersion: "batch/v1", kind: "CronJob", metadata: { name: "c" }, spec: { schedule: "* * * * *", jobTemplate: { spec: { template: { spec: { containers: [] } } } } } } as unknown as KubeObject;
  applyServerDefaults(cron);
  const cronSpec = cron.spec as any;
  assert.deepEqual([cronSpec.concurrencyPolicy, cronSpec.suspend, cronSpec.successfulJobsHistoryLimit, cronSpec.failedJobsHistoryLimit], ["Allow", false, 3, 1]);
  assert.equal(cronSpec.jobTemplate.spec.backoffLimit, undefined, "a Job template inside a CronJob is not defaulted as a Job");
  assert.equal(cronSpec.jobTemplate.spec.template.spec.restartPolicy, "Always");
  const limited = { resources: { limits: { cpu: "2", memory: "1Gi" }, requests: { cpu: "500m" } } };
  const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers: [{ name: "a", image: "x", ...limited }], initContainers: [{ name: "i", image: "x", resources: { limits: { cpu: "1" } } }] } } as unknown as KubeObject;
  applyServerDefaults(pod);
  assert.equal((pod.spec as any).enableServiceLinks, true);
  // Limits without requests: the requests default to them, in containers and init containers alike.
  assert.deepEqual((pod.spec as any).containers[0].resources.requests, { cpu: "500m", memory: "1Gi" });
  assert.deepEqual((pod.spec as any).initContainers[0].resources.requests, { cpu: "1" });
  const template = { apiVersion: "v1", kind: "PodTemplate", metadata: { name: "t" }, template: { spec: { containers: [{ name: "a", image: "x", resources: { limits: { cpu: "2" } } }] } } } as unknown as KubeObject;
  applyServerDefaults(template);
  assert.equal((template as any).template.spec.containers[0].resources.requests, undefined, "a template's containers are not");
  const service = { apiVersion: "v1", kind: "Service", metadata: { name: "s" }, spec: { ports: [{ port: 80 }, { port: 53, protocol: "UDP", targetPort: "dns" }] } } as unknown as KubeObject;
  applyServerDefaults(service);
  assert.deepEqual((service.spec as any).ports, [{ port: 80, protocol: "TCP", targetPort: 80 }, { port: 53, protocol: "UDP", targetPort: "dns" }]);
  assert.deepEqual([(service.spec as any).type, (service.spec as any).sessionAffinity, (service.spec as any).internalTrafficPolicy], ["ClusterIP", "None", "Cluster"]);
});

test("the server's store defaults; a plain store (the simulator's) does not", () => {
  const object = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: "default" }, spec: { selector: { matchLabels: { a: "b" } }, template: { metadata: { labels: { a: "b" } }, spec: podSpec() } } } as unknown as KubeObject;
  const served = createServerStore().create(object);
  const plain = createStore().create(object);
  assert.equal((served.spec as any).strategy.type, "RollingUpdate");
  assert.equal((plain.spec as any).strategy, undefined);
});

test("Services get distinct cluster IPs, node ports, and keep them across an update that leaves them out", async () => {
  const t = await testServer();
  try {
    const create = (name: string, spec: object) => request(t.server, "POST", "/api/v1/namespaces/default/services", { body: { metadata: { name }, spec } });
    const a = await create("a", { ports: [{ port: 80 }] });
    const b = await create("b", { type: "NodePort", ports: [{ port: 80 }] });
    assert.equal(a.status, 201, a.text);
    assert.equal(b.status, 201, b.text);
    assert.match(a.json.spec.clusterIP, /^10\.(9[6-9]|10\d|11[01])\./);
    assert.notEqual(a.json.spec.clusterIP, b.json.spec.clusterIP);
    assert.deepEqual(a.json.spec.clusterIPs, [a.json.spec.clusterIP]);
    assert.deepEqual([a.json.spec.ipFamilies, a.json.spec.ipFamilyPolicy], [["IPv4"], "SingleStack"]);
    assert.ok(b.json.spec.ports[0].nodePort >= 30000 && b.json.spec.ports[0].nodePort <= 32767);
    assert.equal(b.json.spec.externalTrafficPolicy, "Cluster");
    const headless = await create("h", { clusterIP: "None", selector: { a: "b" } });
    assert.deepEqual(headless.json.spec.clusterIPs, ["None"]);
    const taken = await create("c", { clusterIP: a.json.spec.clusterIP, ports: [{ port: 80 }] });
    assert.equal(taken.status, 422);
    assert.match(taken.json.message, /provided IP is already allocated/);
    const outside = await create("d", { clusterIP: "192.168.0.1", ports: [{ port: 80 }] });
    assert.equal(outside.status, 422);
    assert.match(outside.json.message, /not in the valid range/);
    // A replace without the allocated fields (kubectl replace, a helm upgrade's update) keeps them.
    const replaced = await request(t.server, "PUT", "/api/v1/namespaces/default/services/b", { body: { metadata: { name: "b", resourceVersion: b.json.metadata.resourceVersion }, spec: { type: "NodePort", ports: [{ port: 80 }] } } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.json.spec.clusterIP, b.json.spec.clusterIP);
    assert.equal(replaced.json.spec.ports[0].nodePort, b.json.spec.ports[0].nodePort);
    const changed = await request(t.server, "PATCH", "/api/v1/namespaces/default/services/a", { body: { spec: { clusterIP: "10.96.9.9" } }, contentType: "application/merge-patch+json" });
    assert.equal(changed.status, 422);
    assert.match(changed.json.message, /may not change once set/);
  } finally {
    await t.close();
  }
});

test("inline Go structs (a volume's source, a probe's handler, a key selector's name) survive protobuf both ways", () => {
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default" },
    spec: { template: { spec: { containers: [{ name: "c", image: "x", readinessProbe: { httpGet: { path: "/ready", port: 8080 }, periodSeconds: 5 }, env: [{ name: "K", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }] }], volumes: [{ name: "v", configMap: { name: "settings", defaultMode: 420 } }] } } },
  };
  assert.deepEqual(decodeProtobuf(encodeProtobuf(deployment, "apps/v1.Deployment")), deployment);
});

test("every inline field of the wire table names a field its message really has", () => {
  const inline = Object.entries(wireMessages).flatMap(([message, fields]) => fields.filter((f) => f.inline === true).map((f) => [message, f] as const));
  assert.ok(inline.length >= 10, `${inline.length} inline fields`);
  for (const [message, field] of inline) assert.ok(wireMessages[field.type] !== undefined, `${message}.${field.name}: ${field.type}`);
});
