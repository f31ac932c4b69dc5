// Everyday kubectl 1.35 workflows that need part 2 of the server: a second client-side apply of a changed
// Deployment (strategic merge with deletions), server-side apply by two managers, Tables for `kubectl get`
// (built-ins, a CRD's printer columns, `-w`), and the patches of cordon, taint and drain.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { kubectl, kubectlPath, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

async function ok(t: TestServer, args: string[]): Promise<string> {
  const result = await kubectl(t, args);
  assert.equal(result.code, 0, `kubectl ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

function file(t: TestServer, name: string, text: string): string {
  const path = join(t.dir, name);
  writeFileSync(path, text);
  return path;
}

const deployment = (containers: string, replicas = 2) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
${containers}`;

const v1 = `      - name: web
        image: nginx:1
        ports: [{containerPort: 80}, {containerPort: 9090, name: metrics}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
      - name: side
        image: busybox
`;
const v2 = `      - name: web
        image: nginx:2
        ports: [{containerPort: 8080}, {containerPort: 9090, name: metrics}]
        env: [{name: B, value: "3"}, {name: C, value: "4"}]
`;

test("a second kubectl apply of a changed Deployment merges by key and deletes what left the manifest", async () => {
  const t = await testServer();
  try {
    await ok(t, ["apply", "-f", file(t, "d.yaml", deployment(v1))]);
    // Someone else scales it and adds an annotation: the second apply must keep what it never managed.
    await ok(t, ["annotate", "deployment", "web", "team=blue"]);
    assert.match(await ok(t, ["apply", "-f", file(t, "d.yaml", deployment(v2))]), /deployment.apps\/web configured/);
    const d = parseYaml(await ok(t, ["get", "deployment", "web", "-o", "yaml"]));
    const containers = d.spec.template.spec.containers;
    assert.deepEqual(containers.map((c: any) => c.name), ["web"]);
    assert.equal(containers[0].image, "nginx:2");
    assert.deepEqual(containers[0].env, [{ name: "B", value: "3" }, { name: "C", value: "4" }]);
    assert.deepEqual(containers[0].ports.map((p: any) => p.containerPort).sort(), [8080, 9090]);
    assert.equal(d.metadata.annotations.team, "blue");
    assert.equal(d.metadata.generation, 2);
  } finally {
    await t.close();
  }
});

test("kubectl apply --server-side by two field managers: 409 naming the first, then --force-conflicts takes the field", async () => {
  const t = await testServer();
  try {
    const path = file(t, "d.yaml", deployment(v1));
    assert.match(await ok(t, ["apply", "--server-side", "-f", path]), /serverside-applied/);
    assert.match(await ok(t, ["apply", "--server-side", "-f", file(t, "d.yaml", deployment(v1, 3))]), /serverside-applied/);
    const other = file(t, "other.yaml", deployment(v1, 5));
    const refused = await kubectl(t, ["apply", "--server-side", "--field-manager", "autoscaler", "-f", other]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /conflict with "kubectl" using apps\/v1: \.spec\.replicas/);
    assert.equal(parseYaml(await ok(t, ["get", "deployment", "web", "-o", "yaml"])).spec.replicas, 3);
    await ok(t, ["apply", "--server-side", "--field-manager", "autoscaler", "--force-conflicts", "-f", other]);
    const d = parseYaml(await ok(t, ["get", "deployment", "web", "-o", "yaml", "--show-managed-fields"]));
    assert.equal(d.spec.replicas, 5);
    const owners = d.metadata.managedFields.filter((e: any) => e.fieldsV1?.["f:spec"]?.["f:replicas"] !== undefined).map((e: any) => e.manager);
    assert.deepEqual(owners, ["autoscaler"]);
  } finally {
    await t.close();
  }
});

const crdYaml = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;

test("kubectl get prints the server's Tables: built-in columns and a CRD's printer columns", async () => {
  const t = await testServer();
  try {
    await ok(t, ["create", "configmap", "c1", "--from-literal=a=b", "--from-literal=c=d"]);
    await ok(t, ["apply", "-f", file(t, "d.yaml", deployment(v1))]);
    await ok(t, ["apply", "-f", file(t, "crd.yaml", crdYaml)]);
    await ok(t, ["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s"]);
    await ok(t, ["apply", "-f", file(t, "w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\nstatus: {conditions: [{type: Ready, status: 'True'}]}\n")]);
    assert.match(await ok(t, ["get", "configmaps"]), /^NAME\s+DATA\s+AGE\nc1\s+2\s+\d+s\n$/);
    assert.match(await ok(t, ["get", "deployments"]), /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nweb\s+0\/2\s+0\s+0\s+\d+s\n$/);
    assert.match(await ok(t, ["get", "widgets"]), /^NAME\s+SIZE\s+READY\s+AGE\nw1\s+3\s+True\s+\d+s\n$/);
    assert.match(await ok(t, ["get", "widget", "w1", "--no-headers"]), /^w1\s+3\s+True\s+\d+s\n$/);
    assert.match(await ok(t, ["get", "namespaces"]), /^NAME\s+STATUS\s+AGE\ndefault\s+Active\s+\d+s\n/);
  } finally {
    await t.close();
  }
});

test("kubectl get -w prints one table row per change", async () => {
  const t = await testServer();
  try {
    await ok(t, ["create", "configmap", "first"]);
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig, KUBECACHEDIR: join(t.dir, "cache") };
    const child = spawn(kubectlPath, ["get", "configmaps", "-w", "--request-timeout=20s"], { env });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const until = async (pattern: RegExp) => {
      for (let i = 0; i < 400 && !pattern.test(output); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.match(output, pattern);
    };
    await until(/NAME\s+DATA\s+AGE\nfirst\s+0\s+\d+s\n/);
    await ok(t, ["create", "configmap", "second", "--from-literal=x=y"]);
    await until(/second\s+1\s+\d+s\n/);
    child.kill("SIGTERM");
  } finally {
    await t.close();
  }
});

test("kubectl cordon, taint, uncordon and drain patch a node the way a real server applies them", async () => {
  const t = await testServer();
  try {
    await ok(t, ["apply", "-f", file(t, "n.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {node-role.kubernetes.io/worker: ''}}\nspec: {taints: [{key: a, effect: NoExecute}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {nodeName: n1, containers: [{name: c, image: i}]}\n")]);
    await ok(t, ["cordon", "n1"]);
    assert.match(await ok(t, ["get", "nodes"]), /n1\s+Unknown,SchedulingDisabled\s+worker\s+/);
    await ok(t, ["taint", "nodes", "n1", "k=v:NoSchedule"]);
    const node = () => t.server.store.get({ apiVersion: "v1", kind: "Node", name: "n1" }) as any;
    assert.deepEqual(node().spec.taints.map((x: any) => x.key).sort(), ["a", "k"]);
    await ok(t, ["uncordon", "n1"]);
    assert.equal(node().spec.unschedulable, undefined);
    await ok(t, ["taint", "nodes", "n1", "k-"]);
    assert.deepEqual(node().spec.taints.map((x: any) => x.key), ["a"]);
    // --disable-eviction: drain deletes the pod itself, at once with a zero grace period (reviews.test.ts drains
    // through the eviction subresource).
    await ok(t, ["drain", "n1", "--force", "--disable-eviction", "--grace-period=0", "--timeout=15s"]);
    assert.equal(node().spec.unschedulable, true);
    assert.equal(t.server.store.list({ apiVersion: "v1", kind: "Pod", namespace: "default" }).items.length, 0);
  } finally {
    await t.close();
  }
});
