// Debian's python3-kubernetes (installed by .ci/run) against the server through the kubeconfig the server writes:
// list, create, patch, and a watch with `watch=True` (Python's spelling of a boolean, read as Go's ParseBool).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { testServer } from "./helpers.ts";

const script = `
import sys, threading, time, warnings
warnings.filterwarnings("ignore")
from kubernetes import client, config, watch
config.load_kube_config()
core = client.CoreV1Api()
apps = client.AppsV1Api()
core.create_namespaced_config_map("default", {"metadata": {"name": "py", "labels": {"from": "python"}}, "data": {"a": "1"}})
listed = core.list_namespaced_config_map("default", label_selector="from=python")
print("listed", [c.metadata.name for c in listed.items])
patched = core.patch_namespaced_config_map("py", "default", {"data": {"b": "2"}})
print("patched", sorted(patched.data.items()))
apps.create_namespaced_deployment("default", {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})
deployment = apps.read_namespaced_deployment("web", "default")
print("strategy", deployment.spec.strategy.type, deployment.spec.template.spec.containers[0].image_pull_policy)
def later():
    time.sleep(0.5)
    core.create_namespaced_config_map("default", {"metadata": {"name": "late"}})
threading.Thread(target=later).start()
w = watch.Watch()
seen = []
for event in w.stream(core.list_namespaced_config_map, "default", resource_version=listed.metadata.resource_version, timeout_seconds=10):
    seen.append(event["type"] + " " + event["object"].metadata.name)
    if event["object"].metadata.name == "late":
        w.stop()
print("watched", seen)
`;

test("python3-kubernetes lists, creates, patches and watches", async () => {
  const t = await testServer();
  try {
    const path = join(t.dir, "client.py");
    writeFileSync(path, script);
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig };
    const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile("/usr/bin/python3", [path], { env, timeout: 60_000 }, (error, out, err) => resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout: out, stderr: err }));
    });
    assert.equal(code, 0, `python failed (is python3-kubernetes installed? .ci/run installs it):\n${stderr}`);
    assert.match(stdout, /listed \['py'\]/);
    assert.match(stdout, /patched \[\('a', '1'\), \('b', '2'\)\]/);
    assert.match(stdout, /strategy RollingUpdate IfNotPresent/);
    assert.match(stdout, /watched \[.*'ADDED late'\]/);
  } finally {
    await t.close();
  }
});
