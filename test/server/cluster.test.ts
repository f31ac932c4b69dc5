// `settle serve --cluster`: the cluster library's actors run in real time against the server, so real kubectl's
// `rollout status` (Deployments and StatefulSets) and `wait --for=condition=Available` and helm's `install --wait`
// finish, on fake nodes, for kubectl 1.35 and 1.33 and helm 4.1 and 3.18; Services get Endpoints and EndpointSlices of
// the pods' distinct IPs; claims get volumes of the default StorageClass; an HPA holds its target to its bounds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realClock } from "../../src/api/clock.ts";
import { startClusterMode } from "../../src/kube/cluster-mode.ts";
import { createServerStore } from "../../src/server/index.ts";
import { kubectl, kubectl133Path, kubectlPath, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const helms = {
  "4.1": new URL("../../node_modules/.cache/settle-tools/v35/helm/helm", import.meta.url).pathname,
  "3.18": new URL("../../node_modules/.cache/settle-tools/v33/helm/helm", import.meta.url).pathname,
};
const kubectls = { "1.35": kubectlPath, "1.33": kubectl133Path };
const bin = new URL("../../bin/settle.js", import.meta.url).pathname;

/** A server with the defaulting store `settle serve` makes, and a cluster of `nodes` fake nodes running on it. */
async function clusterServer(nodes: number): Promise<TestServer & { lines: string[] }> {
  const t = await testServer({ store: createServerStore({ now: () => realClock.now() }) });
  const lines: string[] = [];
  const cluster = startClusterMode({ kubeconfig: t.server.kubeconfig(), certificate: t.server.certificate, nodes, clock: realClock, log: (line) => lines.push(line) });
  return {
    ...t,
    lines,
    close: async () => {
      cluster.stop();
      await t.close();
    },
  };
}

function pods(t: TestServer, selector: string): any[] {
  return t.server.store.list({ apiVersion: "v1", kind: "Pod", namespace: "default", labelSelector: selector }).items as any[];
}

/** The object from the store, or undefined when there is none. */
function get(t: TestServer, apiVersion: string, kind: string, name: string): any {
  return t.server.store.list({ apiVersion, kind, namespace: "default", fieldSelector: `metadata.name=${name}` }).items[0];
}

/** Polls `read` until it deep-equals `want` (the endpoint controllers run apart from the workload ones) or time runs out. */
async function eventually<T>(read: () => T, want: T, timeoutMs = 10_000): Promise<void> {
  let last = read();
  for (let waited = 0; waited < timeoutMs; waited += 100) {
    try {
      assert.deepEqual(last, want);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
      last = read();
    }
  }
  assert.deepEqual(last, want);
}

/** The IPs an Endpoints object lists as ready, and those of the EndpointSlices of the same Service, sorted. */
function endpointIPs(t: TestServer, service: string): { endpoints: string[]; slices: string[] } {
  const endpoints = get(t, "v1", "Endpoints", service)?.subsets?.flatMap((s: any) => (s.addresses ?? []).map((a: any) => a.ip)) ?? [];
  const slices = t.server.store.list({ apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice", namespace: "default", labelSelector: `kubernetes.io/service-name=${service}` }).items as any[];
  return { endpoints: endpoints.sort(), slices: slices.flatMap((s) => s.endpoints.filter((e: any) => e.conditions.ready).map((e: any) => e.addresses[0])).sort() };
}

/** A headless Service and a StatefulSet of two with a claim template and a readiness probe. */
const statefulManifest = [
  { apiVersion: "v1", kind: "Service", metadata: { name: "db" }, spec: { clusterIP: "None", selector: { app: "db" }, ports: [{ name: "pg", port: 5432, targetPort: "pg" }] } },
  {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db" },
    spec: {
      serviceName: "db",
      replicas: 2,
      selector: { matchLabels: { app: "db" } },
      template: {
        metadata: { labels: { app: "db" } },
        spec: { containers: [{ name: "db", image: "postgres:16", ports: [{ name: "pg", containerPort: 5432 }], readinessProbe: { tcpSocket: { port: "pg" }, initialDelaySeconds: 1 } }] },
      },
      volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } }],
    },
  },
]
  .map((object) => JSON.stringify(object))
  .join("\n---\n");

/** kubectl of one version: a StatefulSet rolls out in order and rolls to a new image; a Deployment becomes Available. */
async function statefulWorkflow(binary: string): Promise<void> {
  const t = await clusterServer(2);
  try {
    const run = (args: string[], input?: string) => kubectl(t, args, { binary, timeoutMs: 70_000, ...(input === undefined ? {} : { input }) });
    const applied = await run(["apply", "-f", "-"], statefulManifest);
    assert.equal(applied.code, 0, applied.stderr);
    // The Deployment rolls out while the StatefulSet does; it is waited on at the end.
    assert.equal((await run(["create", "deployment", "web", "--image=nginx", "--replicas=2"])).code, 0);
    const rollout = await run(["rollout", "status", "statefulset/db", "--timeout=60s"]);
    assert.equal(rollout.code, 0, rollout.stderr);
    assert.match(rollout.stdout, /partitioned roll out complete: 2 new pods have been updated/);
    const running = pods(t, "app=db");
    assert.deepEqual(running.map((p) => p.metadata.name).sort(), ["db-0", "db-1"]);
    const ips = running.map((p) => p.status.podIP).sort();
    assert.equal(new Set(ips).size, 2, `distinct pod IPs: ${ips.join(" ")}`);
    // Ready pods are published only after the probe's initial delay; soon after the rollout both are.
    await eventually(() => endpointIPs(t, "db"), { endpoints: ips, slices: ips });
    // The claims get the default class `standard`, and its provisioner a volume for each, bound both ways.
    const claims = await run(["get", "pvc", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase}/{.spec.storageClassName}/{.status.capacity.storage} {end}"]);
    assert.equal(claims.stdout.trim(), "data-db-0=Bound/standard/1Gi data-db-1=Bound/standard/1Gi");
    const volumes = await run(["get", "pv", "-o", "jsonpath={range .items[*]}{.spec.claimRef.name}={.status.phase} {end}"]);
    assert.deepEqual(volumes.stdout.trim().split(" ").sort(), ["data-db-0=Bound", "data-db-1=Bound"]);
    assert.equal((await run(["set", "image", "statefulset/db", "db=postgres:17"])).code, 0);
    const rolled = await run(["rollout", "status", "statefulset/db", "--timeout=60s"]);
    assert.equal(rolled.code, 0, rolled.stderr);
    const status = get(t, "apps/v1", "StatefulSet", "db").status;
    assert.equal(status.currentRevision, status.updateRevision);
    assert.deepEqual(pods(t, "app=db").map((p) => p.spec.containers[0].image), ["postgres:17", "postgres:17"]);
    const available = await run(["wait", "--for=condition=Available", "deployment/web", "--timeout=30s"]);
    assert.equal(available.code, 0, available.stderr);
    assert.deepEqual(t.lines, [], "no actor failed or restarted");
  } finally {
    await t.close();
  }
}

test("kubectl 1.35 and 1.33: a StatefulSet rolls out in order and to a new image, its Service gets endpoints, a Deployment becomes Available", async () => {
  await Promise.all(Object.values(kubectls).map((binary) => statefulWorkflow(binary)));
});

test("kubectl rollout status and wait --for=condition=Available finish for a Deployment on two fake nodes", async () => {
  const t = await clusterServer(2);
  try {
    assert.equal((await kubectl(t, ["create", "deployment", "web", "--image=nginx", "--replicas=2"])).code, 0);
    const rollout = await kubectl(t, ["rollout", "status", "deployment/web", "--timeout=60s"], { timeoutMs: 70_000 });
    assert.equal(rollout.code, 0, rollout.stderr);
    assert.match(rollout.stdout, /deployment "web" successfully rolled out/);
    const available = await kubectl(t, ["wait", "--for=condition=Available", "deployment/web", "--timeout=30s"], { timeoutMs: 40_000 });
    assert.equal(available.code, 0, available.stderr);
    const nodes = await kubectl(t, ["get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {end}"]);
    assert.equal(nodes.stdout.trim(), "n1=True n2=True");
    // Each fake node reports a capacity, so kubectl describe node computes its percentages from it.
    const described = await kubectl(t, ["describe", "node", "n1"]);
    assert.match(described.stdout, /Capacity:\n\s+cpu:\s+4\n/);
    assert.match(described.stdout, /cpu\s+0 \(0%\)\s+0 \(0%\)/);
    assert.doesNotMatch(described.stdout, /-9223372036854775808%/);
    const running = pods(t, "app=web");
    assert.equal(running.length, 2);
    for (const pod of running) {
      assert.equal(pod.status.phase, "Running");
      assert.ok(["n1", "n2"].includes(pod.spec.nodeName), `bound to a fake node, not ${pod.spec.nodeName}`);
    }
    // The scheduler spreads by pod count, so two replicas land on two nodes.
    assert.deepEqual(running.map((pod) => pod.spec.nodeName).sort(), ["n1", "n2"]);
    // The controllers, the scheduler and the kubelets tell the rollout in Events, as `kubectl events` shows them.
    const told = await kubectl(t, ["events", "-o", "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}"]);
    assert.equal(told.code, 0, told.stderr);
    for (const reason of ["ScalingReplicaSet", "SuccessfulCreate", "Scheduled", "Pulled", "Created", "Started"]) assert.ok(told.stdout.split("\n").includes(reason), `${reason} in ${told.stdout}`);
    // Scaling down goes through the same controllers: the ReplicaSet deletes a pod and the kubelet removes it.
    assert.equal((await kubectl(t, ["scale", "deployment/web", "--replicas=1"])).code, 0);
    const scaled = await kubectl(t, ["rollout", "status", "deployment/web", "--timeout=60s"], { timeoutMs: 70_000 });
    assert.equal(scaled.code, 0, scaled.stderr);
    // Each namespace has its `default` ServiceAccount, as the controller manager makes it.
    const token = await kubectl(t, ["create", "token", "default"]);
    assert.equal(token.code, 0, token.stderr);
    assert.match(token.stdout, /^[\w-]+\.[\w-]+\.[\w-]*\s*$/, "a JWT-shaped token");
    // ... and its kube-root-ca.crt ConfigMap, holding the certificate the server presents.
    await eventually(() => get(t, "v1", "ConfigMap", "kube-root-ca.crt")?.data["ca.crt"], t.server.certificate);
    assert.match(t.server.certificate, /^-----BEGIN CERTIFICATE-----\n/);
    // An HPA raises the Deployment to its minimum and, with no metrics API, shows the replicas it reads.
    assert.equal((await kubectl(t, ["autoscale", "deployment/web", "--min=2", "--max=4", "--cpu=80%"])).code, 0);
    await eventually(() => get(t, "apps/v1", "Deployment", "web")?.spec.replicas, 2);
    await eventually(() => get(t, "autoscaling/v2", "HorizontalPodAutoscaler", "web")?.status?.currentReplicas, 2);
    const hpa = await kubectl(t, ["get", "hpa", "web", "--no-headers"]);
    assert.match(hpa.stdout, /^web\s+Deployment\/web\s+cpu: <unknown>\/80%\s+2\s+4\s+2\s/);
    assert.deepEqual(t.lines, [], "no actor failed or restarted");
  } finally {
    await t.close();
  }
});

test("kubectl rollout history and undo work for a Deployment and a DaemonSet, numbering revisions as a real cluster does, and a Job completes", async () => {
  const t = await clusterServer(2);
  const run = async (args: string[]) => {
    const result = await kubectl(t, args, { timeoutMs: 70_000 });
    assert.equal(result.code, 0, `kubectl ${args.join(" ")}: ${result.stderr}`);
    return result.stdout;
  };
  const revisions = (text: string) => [...text.matchAll(/^(\d+)\s+<none>$/gm)].map((m) => Number(m[1]));
  const image = async (kind: string) => (await run(["get", kind, "-o", "jsonpath={.spec.template.spec.containers[0].image}"])).trim();
  try {
    const daemonSet = { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "agent" }, spec: { selector: { matchLabels: { app: "agent" } }, template: { metadata: { labels: { app: "agent" } }, spec: { containers: [{ name: "agent", image: "agent:1" }] } } } };
    await run(["create", "deployment", "web", "--image=nginx:1.25"]);
    assert.equal((await kubectl(t, ["apply", "-f", "-"], { input: JSON.stringify(daemonSet) })).code, 0);
    for (const kind of ["deployment/web", "daemonset/agent"]) await run(["rollout", "status", kind, "--timeout=60s"]);
    await run(["set", "image", "deployment/web", "nginx=nginx:1.26"]);
    await run(["set", "image", "daemonset/agent", "agent=agent:2"]);
    for (const kind of ["deployment/web", "daemonset/agent"]) {
      await run(["rollout", "status", kind, "--timeout=60s"]);
      assert.deepEqual(revisions(await run(["rollout", "history", kind])), [1, 2], kind);
      assert.match(await run(["rollout", "undo", kind]), /rolled back/);
      await run(["rollout", "status", kind, "--timeout=60s"]);
      // The restored template takes the next number; its old one is gone from the history.
      assert.deepEqual(revisions(await run(["rollout", "history", kind])), [2, 3], kind);
    }
    assert.equal(await image("deployment/web"), "nginx:1.25");
    assert.equal(await image("daemonset/agent"), "agent:1");
    assert.equal(get(t, "apps/v1", "Deployment", "web").metadata.annotations["deployment.kubernetes.io/revision"], "3");
    // kubectl 1.33 sends the template back with `creationTimestamp: null`: the same template, so its set is reused.
    await run(["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    await run(["rollout", "status", "deployment/web", "--timeout=60s"]);
    const undone = await kubectl(t, ["rollout", "undo", "deployment/web"], { binary: kubectl133Path, timeoutMs: 70_000 });
    assert.equal(undone.code, 0, undone.stderr);
    await run(["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert.deepEqual(revisions(await run(["rollout", "history", "deployment/web"])), [2, 4, 5]);
    assert.equal(t.server.store.list({ apiVersion: "apps/v1", kind: "ReplicaSet", namespace: "default" }).items.length, 3, "no new set for a template seen before");
    // A Service with an unnamed port: its EndpointSlice names the port "", which kubectl describe dereferences.
    await run(["expose", "deployment", "web", "--port=80"]);
    await eventually(() => endpointIPs(t, "web").slices.length, 1);
    assert.match(await run(["describe", "service", "web"]), /Endpoints:\s+10\.244\.\d+\.\d+:80\n/);
    // A Job's container exits 0 after a second (nothing runs its command), so waiting for it ends.
    await run(["create", "job", "once", "--image=busybox", "--", "echo", "hi"]);
    await run(["wait", "--for=condition=complete", "job/once", "--timeout=30s"]);
    assert.deepEqual(t.lines, [], "no actor failed or restarted");
  } finally {
    await t.close();
  }
});

/** A StatefulSet and its headless Service added to the stock chart, so `--wait` covers all three kinds. */
const statefulTemplate = `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-db
spec:
  clusterIP: None
  selector:
    app: {{ .Release.Name }}-db
  ports:
    - name: pg
      port: 5432
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-db
spec:
  serviceName: {{ .Release.Name }}-db
  replicas: 2
  selector:
    matchLabels:
      app: {{ .Release.Name }}-db
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}-db
    spec:
      containers:
        - name: db
          image: postgres:16
          ports:
            - name: pg
              containerPort: 5432
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
`;

/** helm of one version: install, upgrade to three replicas, roll back and uninstall, each with --wait. */
async function helmWorkflow(binary: string): Promise<void> {
  const t = await clusterServer(1);
  try {
    const env = { PATH: process.env.PATH ?? "", HOME: t.dir, KUBECONFIG: t.kubeconfig, HELM_CACHE_HOME: join(t.dir, "helm-cache"), HELM_CONFIG_HOME: join(t.dir, "helm-config"), HELM_DATA_HOME: join(t.dir, "helm-data") };
    const helm = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(binary, args, { env, timeout: 90_000 }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, stdout, stderr }));
      });
    const chart = join(t.dir, "demo");
    assert.equal((await helm(["create", chart])).code, 0);
    writeFileSync(join(chart, "templates", "statefulset.yaml"), statefulTemplate);
    const install = await helm(["install", "demo", chart, "--wait", "--timeout", "60s"]);
    assert.equal(install.code, 0, install.stderr);
    assert.match(install.stdout, /STATUS: deployed/);
    const [pod, ...more] = pods(t, "app.kubernetes.io/instance=demo");
    assert.equal(more.length, 0);
    assert.equal(pod.status.phase, "Running");
    assert.equal(pod.spec.nodeName, "n1");
    assert.deepEqual(pods(t, "app=demo-db").map((p) => p.metadata.name).sort(), ["demo-db-0", "demo-db-1"]);
    await eventually(() => endpointIPs(t, "demo"), { endpoints: [pod.status.podIP], slices: [pod.status.podIP] });
    // The chart's test pod (restartPolicy Never) exits 0 after a second on a fake node, so `helm test` passes.
    const tested = await helm(["test", "demo", "--timeout", "60s"]);
    assert.equal(tested.code, 0, tested.stderr);
    assert.match(tested.stdout, /Phase:\s+Succeeded/);
    const upgrade = await helm(["upgrade", "demo", chart, "--set", "replicaCount=3", "--wait", "--timeout", "60s"]);
    assert.equal(upgrade.code, 0, upgrade.stderr);
    assert.equal(get(t, "apps/v1", "Deployment", "demo").status.availableReplicas, 3);
    await eventually(() => endpointIPs(t, "demo").endpoints.length, 3);
    const rollback = await helm(["rollback", "demo", "1", "--wait", "--timeout", "60s"]);
    assert.equal(rollback.code, 0, rollback.stderr);
    assert.equal(get(t, "apps/v1", "Deployment", "demo").spec.replicas, 1);
    const uninstall = await helm(["uninstall", "demo", "--wait", "--timeout", "60s"]);
    assert.equal(uninstall.code, 0, uninstall.stderr);
    assert.equal(get(t, "apps/v1", "StatefulSet", "demo-db"), undefined);
    assert.deepEqual(t.lines, [], "no actor failed or restarted");
  } finally {
    await t.close();
  }
}

test("helm 4.1 and 3.18: the stock chart plus a StatefulSet installs, passes helm test, upgrades to 3 replicas, rolls back and uninstalls, each with --wait", async () => {
  await Promise.all(Object.values(helms).map((binary) => helmWorkflow(binary)));
});

test("settle serve --cluster --nodes 2 registers two Ready nodes and stops on SIGTERM; --nodes alone is a usage error", async () => {
  const dir = mkdtempSync(join(tmpdir(), "settle-serve-cluster-"));
  try {
    const kubeconfig = join(dir, "kubeconfig");
    const child = spawn(process.execPath, [bin, "serve", "--cluster", "--nodes", "2", "--kubeconfig-out", kubeconfig], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk.toString()));
    const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
    const env = { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(dir, "cache") };
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (let attempt = 0; attempt < 100 && !/with a cluster of 2 nodes/.test(stdout); attempt++) await sleep(100);
    assert.match(stdout, /listening on https:\/\/127\.0\.0\.1:\d+, also plain http:\/\/127\.0\.0\.1:\d+ \(kubeconfig: .*\) with a cluster of 2 nodes/);
    // The kubelets register their Nodes just after the server listens; until then `kubectl wait` fails at once.
    let ready = spawnSync(kubectlPath, ["version"], { env });
    for (let attempt = 0; attempt < 20; attempt++) {
      ready = spawnSync(kubectlPath, ["wait", "--for=condition=Ready", "node/n1", "node/n2", "--timeout=20s"], { env, timeout: 30_000 });
      if (ready.status === 0) break;
      await sleep(250);
    }
    assert.equal(ready.status, 0, ready.stderr.toString());
    child.kill("SIGTERM");
    assert.equal(await exited, 0);
    const usage = spawnSync(process.execPath, [bin, "serve", "--nodes", "2"]);
    assert.equal(usage.status, 2);
    assert.match(usage.stderr.toString(), /--nodes needs --cluster/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
