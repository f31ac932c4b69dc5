// Real kubectl 1.35 and 1.33 creating kinds beyond the scenarios' (protobuf request bodies for every typed
// generator), and `api-resources` listing the stable built-in kinds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { kubectl, kubectl133Path, kubectlPath, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

async function ok(t: TestServer, args: string[], binary = kubectlPath): Promise<string> {
  const result = await kubectl(t, args, { binary });
  assert.equal(result.code, 0, `kubectl ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

const creates: string[][] = [
  ["create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80"],
  ["create", "job", "once", "--image=busybox", "--", "true"],
  ["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 0 * * *", "--", "true"],
  ["create", "serviceaccount", "robot"],
  ["create", "service", "clusterip", "web", "--tcp=80:8080"],
  ["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=1"],
  ["create", "role", "reader", "--verb=get,list", "--resource=pods"],
  ["create", "rolebinding", "reader", "--role=reader", "--user=me"],
  ["create", "ingress", "web", "--rule=example.com/=web:80"],
];

for (const [version, binary] of [["1.35", kubectlPath], ["1.33", kubectl133Path]] as const) {
  test(`kubectl ${version} creates a deployment, job, cronjob, service account, service, pdb, role, role binding and ingress`, async () => {
    const t = await testServer();
    try {
      for (const args of creates) await ok(t, args, binary);
      const deployment = parseYaml(await ok(t, ["get", "deployment", "web", "-o", "yaml"], binary));
      assert.equal(deployment.spec.replicas, 2);
      assert.deepEqual(deployment.spec.template.spec.containers[0].ports, [{ containerPort: 80, protocol: "TCP" }]);
      // The defaults a real server writes, which `kubectl describe` and apply diffs read.
      assert.equal(deployment.spec.strategy.type, "RollingUpdate");
      assert.equal(deployment.spec.template.spec.containers[0].imagePullPolicy, "Always");
      assert.equal(deployment.spec.template.spec.containers[0].image, "nginx");
      const job = parseYaml(await ok(t, ["get", "job", "once", "-o", "yaml"], binary));
      assert.deepEqual(job.spec.template.spec.containers[0].command, ["true"]);
      assert.equal(parseYaml(await ok(t, ["get", "cronjob", "nightly", "-o", "yaml"], binary)).spec.schedule, "0 0 * * *");
      const service = parseYaml(await ok(t, ["get", "service", "web", "-o", "yaml"], binary));
      assert.equal(service.spec.ports[0].port, 80);
      assert.equal(service.spec.ports[0].targetPort, 8080);
      assert.match(service.spec.clusterIP, /^10\.\d+\.\d+\.\d+$/);
      assert.equal(parseYaml(await ok(t, ["get", "pdb", "web", "-o", "yaml"], binary)).spec.minAvailable, 1);
      assert.deepEqual(parseYaml(await ok(t, ["get", "role", "reader", "-o", "yaml"], binary)).rules[0].verbs, ["get", "list"]);
      assert.equal(parseYaml(await ok(t, ["get", "rolebinding", "reader", "-o", "yaml"], binary)).roleRef.name, "reader");
      assert.equal(parseYaml(await ok(t, ["get", "ingress", "web", "-o", "yaml"], binary)).spec.rules[0].host, "example.com");
      assert.equal(parseYaml(await ok(t, ["get", "sa", "robot", "-o", "yaml"], binary)).metadata.name, "robot");
      await ok(t, ["scale", "deployment", "web", "--replicas=4"], binary);
      assert.equal(parseYaml(await ok(t, ["get", "deploy", "web", "-o", "yaml"], binary)).spec.replicas, 4);
    } finally {
      await t.close();
    }
  });
}

test("kubectl api-resources lists the stable built-in kinds with their short names, and get all reads the category", async () => {
  const t = await testServer();
  try {
    const table = await ok(t, ["api-resources", "--no-headers"]);
    for (const line of ["services svc v1 true Service", "roles rbac.authorization.k8s.io/v1 true Role", "ingresses ing networking.k8s.io/v1 true Ingress", "storageclasses sc storage.k8s.io/v1 false StorageClass", "horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler"]) {
      assert.ok(table.split("\n").some((row) => row.split(/\s+/).join(" ") === line), `${line} in:\n${table}`);
    }
    await ok(t, ["create", "deployment", "web", "--image=nginx"]);
    await ok(t, ["create", "configmap", "c"]);
    const all = await ok(t, ["get", "all", "-o", "name"]);
    assert.match(all, /deployment\.apps\/web/);
    assert.doesNotMatch(all, /configmap/);
  } finally {
    await t.close();
  }
});
