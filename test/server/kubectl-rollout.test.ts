// kubectl expose and rollout undo against the server. Without `--cluster` no deployment controller runs, so the
// test writes the ReplicaSets that controller would have (owned by the Deployment, one per revision) and checks what
// `rollout undo` does with them: the Deployment's template goes back to the previous revision's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kubectl, kubectl133Path, request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

async function ok(t: TestServer, args: string[], binary?: string): Promise<string> {
  const result = await kubectl(t, args, binary === undefined ? {} : { binary });
  assert.equal(result.code, 0, `kubectl ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

async function replicaSet(t: TestServer, deployment: any, revision: number, image: string): Promise<void> {
  const hash = `h${revision}`;
  const template = structuredClone(deployment.spec.template);
  template.metadata.labels = { ...template.metadata.labels, "pod-template-hash": hash };
  template.spec.containers[0].image = image;
  const body = {
    metadata: {
      name: `web-${hash}`,
      labels: { app: "web", "pod-template-hash": hash },
      annotations: { "deployment.kubernetes.io/revision": String(revision) },
      ownerReferences: [{ apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: deployment.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    spec: { replicas: 0, selector: { matchLabels: { app: "web", "pod-template-hash": hash } }, template },
  };
  const created = await request(t.server, "POST", "/apis/apps/v1/namespaces/default/replicasets", { body });
  assert.equal(created.status, 201, created.text);
}

for (const [version, binary] of [["1.35", undefined], ["1.33", kubectl133Path]] as const) {
  test(`kubectl ${version} expose makes a Service with an allocated IP, and rollout undo restores the previous template`, async () => {
    const t = await testServer();
    try {
      await ok(t, ["create", "deployment", "web", "--image=nginx:1.27", "--port=8080"], binary);
      await ok(t, ["expose", "deployment", "web", "--port=80", "--target-port=8080"], binary);
      const service = (await request(t.server, "GET", "/api/v1/namespaces/default/services/web")).json;
      assert.deepEqual(service.spec.selector, { app: "web" });
      assert.deepEqual(service.spec.ports, [{ port: 80, protocol: "TCP", targetPort: 8080 }]);
      assert.match(await ok(t, ["get", "service", "web"], binary), new RegExp(`web\\s+ClusterIP\\s+${service.spec.clusterIP.replaceAll(".", "\\.")}\\s+<none>\\s+80/TCP`));
      const first = (await request(t.server, "GET", "/apis/apps/v1/namespaces/default/deployments/web")).json;
      await replicaSet(t, first, 1, "nginx:1.27");
      await ok(t, ["set", "image", "deployment/web", "nginx=nginx:1.28"], binary);
      await replicaSet(t, first, 2, "nginx:1.28");
      // The deployment controller records the revision on the Deployment; `rollout undo` replaces that annotation.
      const annotated = await request(t.server, "PATCH", "/apis/apps/v1/namespaces/default/deployments/web", { body: { metadata: { annotations: { "deployment.kubernetes.io/revision": "2" } } }, contentType: "application/merge-patch+json" });
      assert.equal(annotated.status, 200, annotated.text);
      assert.match(await ok(t, ["rollout", "history", "deployment/web"], binary), /1\s+<none>\s*\n2\s+<none>/);
      await ok(t, ["rollout", "undo", "deployment/web"], binary);
      const undone = (await request(t.server, "GET", "/apis/apps/v1/namespaces/default/deployments/web")).json;
      assert.equal(undone.spec.template.spec.containers[0].image, "nginx:1.27");
      assert.equal(undone.spec.template.metadata.labels["pod-template-hash"], undefined, "the hash label is not copied back");
    } finally {
      await t.close();
    }
  });
}
