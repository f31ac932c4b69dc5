// Real helm 4.1 (server-side apply) and helm 3.18 (three-way strategic merge) against the server: install,
// upgrade, rollback, list and uninstall of the small chart in test/fixtures/chart.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

export const chartPath = new URL("../fixtures/chart", import.meta.url).pathname;
const helms = {
  "4.1": new URL("../../node_modules/.cache/settle-tools/v35/helm/helm", import.meta.url).pathname,
  "3.18": new URL("../../node_modules/.cache/settle-tools/v33/helm/helm", import.meta.url).pathname,
};

function helm(t: TestServer, binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig, HELM_CACHE_HOME: join(t.dir, "helm-cache"), HELM_CONFIG_HOME: join(t.dir, "helm-config"), HELM_DATA_HOME: join(t.dir, "helm-data") };
    execFile(binary, args, { env, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`helm ${args.join(" ")} failed: ${stderr}`));
      else resolve(stdout);
    });
  });
}

for (const [version, binary] of Object.entries(helms)) {
  test(`helm ${version} installs, upgrades, rolls back, lists and uninstalls a chart`, async () => {
    const t = await testServer();
    try {
      const store = t.server.store;
      const web = () => store.get({ apiVersion: "apps/v1", kind: "Deployment", namespace: "default", name: "demo-web" }) as any;
      const releases = () => store.list({ apiVersion: "v1", kind: "Secret", namespace: "default", labelSelector: "owner=helm,name=demo" }).items;
      assert.match(await helm(t, binary, ["install", "demo", chartPath]), /STATUS: deployed/);
      assert.equal(web().spec.template.spec.containers[0].image, "nginx:1.27");
      // helm 4 writes with server-side apply; helm 3 creates and then patches (three-way strategic merge).
      const managed = (await request(t.server, "GET", "/apis/apps/v1/namespaces/default/deployments/demo-web")).json.metadata.managedFields;
      assert.equal(managed[0].operation, version === "4.1" ? "Apply" : "Update");
      await helm(t, binary, ["upgrade", "demo", chartPath, "--set", "image=nginx:1.28,greeting=hi", "--set", "extraEnv[0].name=X,extraEnv[0].value=1"]);
      assert.deepEqual(web().spec.template.spec.containers[0].env.map((e: any) => e.name), ["GREETING", "X"]);
      await helm(t, binary, ["upgrade", "demo", chartPath, "--set", "image=nginx:1.29"]);
      assert.deepEqual(web().spec.template.spec.containers[0].env.map((e: any) => e.name), ["GREETING"], "the upgrade removed the env var");
      await helm(t, binary, ["rollback", "demo", "2"]);
      const container = web().spec.template.spec.containers[0];
      assert.equal(container.image, "nginx:1.28");
      assert.deepEqual(container.env.map((e: any) => e.name), ["GREETING", "X"]);
      assert.equal((store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "demo-settings" }).data as any).greeting, "hi");
      assert.match(await helm(t, binary, ["list"]), /\ndemo\s+default\s+4\s+.*deployed\s+settle-test-0\.1\.0/);
      assert.equal(releases().length, 4);
      assert.match(await helm(t, binary, ["uninstall", "demo"]), /release "demo" uninstalled/);
      assert.equal(releases().length, 0);
      assert.equal(store.list({ apiVersion: "apps/v1", kind: "Deployment", namespace: "default" }).items.length, 0);
      assert.equal(store.list({ apiVersion: "v1", kind: "ServiceAccount", namespace: "default" }).items.length, 0);
      assert.doesNotMatch(await helm(t, binary, ["list"]), /demo/);
    } finally {
      await t.close();
    }
  });
}

for (const [version, binary] of Object.entries(helms)) {
  test(`helm ${version}'s stock chart (helm create) installs, upgrades to 3 replicas, rolls back and uninstalls`, async () => {
    const t = await testServer();
    try {
      const store = t.server.store;
      await helm(t, binary, ["create", join(t.dir, "demo")]);
      const chart = join(t.dir, "demo");
      assert.match(await helm(t, binary, ["install", "demo", chart]), /STATUS: deployed/);
      const deployment = () => store.get({ apiVersion: "apps/v1", kind: "Deployment", namespace: "default", name: "demo" }) as any;
      const service = store.get({ apiVersion: "v1", kind: "Service", namespace: "default", name: "demo" }) as any;
      assert.match(service.spec.clusterIP, /^10\./);
      assert.equal(service.spec.ports[0].targetPort, "http");
      assert.equal(deployment().spec.replicas, 1);
      assert.equal(deployment().spec.strategy.type, "RollingUpdate", "defaulted by the server");
      await helm(t, binary, ["upgrade", "demo", chart, "--set", "replicaCount=3"]);
      assert.equal(deployment().spec.replicas, 3);
      assert.equal((store.get({ apiVersion: "v1", kind: "Service", namespace: "default", name: "demo" }) as any).spec.clusterIP, service.spec.clusterIP, "the upgrade kept the cluster IP");
      await helm(t, binary, ["rollback", "demo", "1"]);
      assert.equal(deployment().spec.replicas, 1);
      assert.match(await helm(t, binary, ["uninstall", "demo"]), /release "demo" uninstalled/);
      assert.deepEqual(store.list({ apiVersion: "v1", kind: "Service", namespace: "default" }).items.map((s) => s.metadata.name), ["kubernetes"], "only the API server's own is left");
      assert.equal(store.list({ apiVersion: "v1", kind: "ServiceAccount", namespace: "default" }).items.length, 0);
    } finally {
      await t.close();
    }
  });
}
