// The real kubectl 1.35 (and 1.33 for typed creates) against the server, through the kubeconfig it wrote.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { realClock } from "../../src/api/clock.ts";
import { kubectl, kubectl133Path, kubectlPath, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const deploymentYaml = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: ${image}
        env: [{name: A, value: "1"}]
      - name: side
        image: busybox
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
`;

const crdYaml = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;

const widgetsYaml = (size: number) => `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, labels: {tier: a}}
spec: {size: ${size}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, labels: {tier: b}}
spec: {size: 1}
`;

async function ok(t: TestServer, args: string[], binary = kubectlPath): Promise<string> {
  const result = await kubectl(t, args, { binary });
  assert.equal(result.code, 0, `kubectl ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

function file(t: TestServer, name: string, text: string): string {
  const path = join(t.dir, name);
  writeFileSync(path, text);
  return path;
}

test("kubectl creates typed objects (protobuf bodies), gets them as YAML and by label, and edits them", async () => {
  const t = await testServer();
  try {
    await ok(t, ["create", "configmap", "cm1", "--from-literal=a=b"]);
    await ok(t, ["create", "secret", "generic", "s1", "--from-literal=x=y"]);
    await ok(t, ["create", "namespace", "team"]);
    await ok(t, ["create", "configmap", "cm2", "--from-literal=k=v", "-n", "team"], kubectl133Path);
    const cm = parseYaml(await ok(t, ["get", "configmap", "cm1", "-o", "yaml"]));
    assert.deepEqual(cm.data, { a: "b" });
    assert.equal(cm.metadata.generateName, undefined);
    assert.equal(parseYaml(await ok(t, ["get", "secret", "s1", "-o", "yaml"])).data.x, Buffer.from("y").toString("base64"));
    assert.deepEqual(parseYaml(await ok(t, ["get", "cm", "cm2", "-n", "team", "-o", "yaml"])).data, { k: "v" });
    await ok(t, ["label", "configmap", "cm1", "tier=gold"]);
    await ok(t, ["annotate", "configmap", "cm1", "note=hello"]);
    assert.match(await ok(t, ["get", "configmap", "-l", "tier=gold", "-o", "name"]), /^configmap\/cm1\n$/);
    await ok(t, ["patch", "configmap", "cm1", "--type", "merge", "-p", '{"data":{"c":"d"}}']);
    await ok(t, ["patch", "configmap", "cm1", "--type", "json", "-p", '[{"op":"remove","path":"/data/a"}]']);
    const edited = parseYaml(await ok(t, ["get", "configmap", "cm1", "-o", "yaml"]));
    assert.deepEqual(edited.data, { c: "d" });
    assert.equal(edited.metadata.annotations.note, "hello");
    assert.equal(edited.metadata.labels.tier, "gold");
  } finally {
    await t.close();
  }
});

test("kubectl apply -f creates and then updates built-ins, a CRD and its custom resources", async () => {
  const t = await testServer();
  try {
    await ok(t, ["apply", "-f", file(t, "app.yaml", deploymentYaml("nginx:1"))]);
    assert.match(await ok(t, ["apply", "-f", file(t, "app.yaml", deploymentYaml("nginx:2"))]), /deployment.apps\/web configured/);
    const deployment = parseYaml(await ok(t, ["get", "deployment", "web", "-o", "yaml"]));
    assert.deepEqual(deployment.spec.template.spec.containers.map((c: any) => `${c.name}=${c.image}`), ["web=nginx:2", "side=busybox"]);
    assert.deepEqual(deployment.spec.template.spec.containers[0].env, [{ name: "A", value: "1" }]);
    await ok(t, ["apply", "-f", file(t, "crd.yaml", crdYaml)]);
    await ok(t, ["wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s"]);
    await ok(t, ["apply", "-f", file(t, "widgets.yaml", widgetsYaml(3))]);
    await ok(t, ["apply", "-f", file(t, "widgets.yaml", widgetsYaml(4))]);
    assert.equal(parseYaml(await ok(t, ["get", "wd", "w1", "-o", "yaml"])).spec.size, 4);
    assert.match(await ok(t, ["get", "widgets", "-l", "tier=b", "-o", "name"]), /^widget.example.com\/w2\n$/);
    await ok(t, ["patch", "widget", "w1", "--type", "merge", "--subresource", "status", "-p", '{"status":{"phase":"Ready"}}']);
    await ok(t, ["wait", "--for=jsonpath={.status.phase}=Ready", "widget/w1", "--timeout=10s"]);
    await ok(t, ["delete", "crd", "widgets.example.com", "--wait", "--timeout=20s"]);
    const gone = await kubectl(t, ["get", "widgets"]);
    assert.notEqual(gone.code, 0);
  } finally {
    await t.close();
  }
});

test("kubectl delete --wait returns once the object is gone, and waits for a finalizer to be removed", async () => {
  const t = await testServer();
  try {
    await ok(t, ["create", "configmap", "plain"]);
    await ok(t, ["delete", "configmap", "plain", "--wait", "--timeout=15s"]);
    await ok(t, ["apply", "-f", file(t, "held.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [example.com/hold]}\n")]);
    const deleting = kubectl(t, ["delete", "configmap", "held", "--wait", "--timeout=15s"]);
    for (let i = 0; i < 200; i++) {
      const terminating = t.server.store.list({ apiVersion: "v1", kind: "ConfigMap", namespace: "default" }).items.find((c) => c.metadata.name === "held");
      if (terminating?.metadata.deletionTimestamp) break;
      await realClock.sleep(10);
    }
    assert.equal((await kubectl(t, ["get", "configmap", "held"])).code, 0);
    await ok(t, ["patch", "configmap", "held", "--type", "json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]']);
    const result = await deleting;
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await kubectl(t, ["get", "configmap", "held"])).code, 1);
  } finally {
    await t.close();
  }
});

test("kubectl get -w streams the changes made while it watches", async () => {
  const t = await testServer();
  try {
    await ok(t, ["create", "configmap", "first"]);
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig, KUBECACHEDIR: join(t.dir, "cache") };
    const child = spawn(kubectlPath, ["get", "configmaps", "-w", "-o", "name", "--request-timeout=20s"], { env });
    let output = "";
    const seen = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const check = () => (output.includes(text) ? resolve() : undefined);
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          check();
        });
        child.on("exit", () => (output.includes(text) ? resolve() : reject(new Error(`kubectl exited before printing ${text}: ${output}`))));
        check();
      });
    await seen("configmap/first");
    await ok(t, ["create", "configmap", "second"]);
    await seen("configmap/second");
    child.kill("SIGTERM");
  } finally {
    await t.close();
  }
});
