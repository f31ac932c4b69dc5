// Debian's python3-kubernetes (installed by .ci/run) against the server through the kubeconfig the server writes:
// list, create, patch, and a watch with `watch=True` (Python's spelling of a boolean, read as Go's ParseBool), and an
// autoscaling/v1 HorizontalPodAutoscaler created and patched through v1 and read through v2.
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
scaling = client.AutoscalingV1Api()
target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
scaling.create_namespaced_horizontal_pod_autoscaler("default", {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": target, "maxReplicas": 4, "targetCPUUtilizationPercentage": 60}})
hpa = scaling.patch_namespaced_horizontal_pod_autoscaler("web", "default", {"spec": {"targetCPUUtilizationPercentage": 75}})
v2 = client.CustomObjectsApi().get_namespaced_custom_object("autoscaling", "v2", "default", "horizontalpodautoscalers", "web")
print("hpa", hpa.api_version, hpa.spec.target_cpu_utilization_percentage, v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"])
`;

test("python3-kubernetes lists, creates, patches and watches, and writes an autoscaling/v1 HPA", async () => {
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
    // autoscaling/v1 is a conversion of the stored v2: the v1 patch shows in v2's CPU metric.
    assert.match(stdout, /hpa autoscaling\/v1 75 75/);
  } finally {
    await t.close();
  }
});
