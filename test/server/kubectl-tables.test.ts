// `kubectl get` against the server's Tables for the kinds users look at most: the columns and cells of
// kube-apiserver's printers (pkg/printers/internalversion), including the wide columns of `-o wide`.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { TestServer } from "./helpers.ts";
import { kubectl, request, testServer } from "./helpers.ts";

async function get(t: TestServer, args: string[]): Promise<string> {
  const result = await kubectl(t, ["get", ...args]);
  assert.equal(result.code, 0, `kubectl get ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

async function create(t: TestServer, path: string, body: object, status?: object): Promise<void> {
  const created = await request(t.server, "POST", path, { body });
  assert.equal(created.status, 201, `${path}: ${created.text}`);
  if (status === undefined) return;
  const item = `${path}/${(body as { metadata: { name: string } }).metadata.name}/status`;
  const patched = await request(t.server, "PATCH", item, { body: { status }, contentType: "application/merge-patch+json" });
  assert.equal(patched.status, 200, `${item}: ${patched.text}`);
}

const template = { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx:1.27" }, { name: "log", image: "busybox" }] } };
const selector = { matchLabels: { app: "web" } };

test("kubectl get prints the real printers' columns for services, endpoints, endpoint slices, PVCs, ingresses and HPAs", async () => {
  const t = await testServer();
  try {
    const ns = "/api/v1/namespaces/default";
    await create(t, `${ns}/services`, { metadata: { name: "web" }, spec: { selector: { app: "web" }, externalIPs: ["192.0.2.7"], ports: [{ name: "http", port: 80 }, { name: "dns", port: 443, protocol: "UDP" }] } });
    assert.match(await get(t, ["services", "-o", "wide"]), /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\s+SELECTOR\nkubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP\s+\d+s\s+<none>\nweb\s+ClusterIP\s+10\.96\.0\.\d+\s+192\.0\.2\.7\s+80\/TCP,443\/UDP\s+\d+s\s+app=web\n$/);
    await create(t, `${ns}/endpoints`, { metadata: { name: "web" }, subsets: [{ addresses: [{ ip: "10.0.0.1" }, { ip: "10.0.0.2" }], ports: [{ port: 8080 }] }] });
    assert.match(await get(t, ["endpoints"]), /^NAME\s+ENDPOINTS\s+AGE\nkubernetes\s+127\.0\.0\.1:\d+\s+\d+s\nweb\s+10\.0\.0\.1:8080,10\.0\.0\.2:8080\s+\d+s\n$/);
    const addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"].map((ip) => ({ addresses: [ip] }));
    await create(t, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", { metadata: { name: "web-x1" }, addressType: "IPv4", ports: [{ name: "http", port: 8080, protocol: "TCP" }], endpoints: addresses });
    assert.match(await get(t, ["endpointslices"]), /^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE\nkubernetes\s+IPv4\s+\d+\s+127\.0\.0\.1\s+\d+s\nweb-x1\s+IPv4\s+8080\s+10\.0\.0\.1,10\.0\.0\.2,10\.0\.0\.3 \+ 1 more\.\.\.\s+\d+s\n$/);
    const claim = { metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } }, storageClassName: "standard", volumeName: "pv-1" } };
    await create(t, `${ns}/persistentvolumeclaims`, claim, { phase: "Bound", accessModes: ["ReadWriteOnce"], capacity: { storage: "1Gi" } });
    assert.match(await get(t, ["pvc"]), /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE\ndata\s+Bound\s+pv-1\s+1Gi\s+RWO\s+standard\s+<unset>\s+\d+s\n$/);
    const ingress = { metadata: { name: "web" }, spec: { ingressClassName: "nginx", rules: [{ host: "a.example.com" }, { host: "b.example.com" }], tls: [{ hosts: ["a.example.com"] }] } };
    await create(t, "/apis/networking.k8s.io/v1/namespaces/default/ingresses", ingress, { loadBalancer: { ingress: [{ ip: "203.0.113.9" }] } });
    assert.match(await get(t, ["ingress"]), /^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nweb\s+nginx\s+a\.example\.com,b\.example\.com\s+203\.0\.113\.9\s+80, 443\s+\d+s\n$/);
    const metrics = [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } }];
    await create(t, "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", { metadata: { name: "web" }, spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" }, minReplicas: 2, maxReplicas: 5, metrics } });
    assert.match(await get(t, ["hpa"]), /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\nweb\s+Deployment\/web\s+cpu: <unknown>\/80%\s+2\s+5\s+0\s+\d+s\n$/);
  } finally {
    await t.close();
  }
});

test("kubectl get -o wide prints workloads' containers, images and selectors, and jobs their real status and duration", async () => {
  const t = await testServer();
  try {
    await create(t, "/apis/apps/v1/namespaces/default/statefulsets", { metadata: { name: "db" }, spec: { replicas: 3, serviceName: "db", selector, template } }, { replicas: 3, readyReplicas: 2 });
    assert.match(await get(t, ["statefulsets", "-o", "wide"]), /^NAME\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\ndb\s+2\/3\s+\d+s\s+web,log\s+nginx:1\.27,busybox\n$/);
    const daemonTemplate = { ...template, spec: { ...template.spec, nodeSelector: { "kubernetes.io/os": "linux" } } };
    await create(t, "/apis/apps/v1/namespaces/default/daemonsets", { metadata: { name: "agent" }, spec: { selector, template: daemonTemplate } }, { desiredNumberScheduled: 2, currentNumberScheduled: 2, numberReady: 1, updatedNumberScheduled: 2, numberAvailable: 1, numberMisscheduled: 0 });
    assert.match(await get(t, ["daemonsets", "-o", "wide"]), /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\nagent\s+2\s+2\s+1\s+2\s+1\s+kubernetes\.io\/os=linux\s+\d+s\s+web,log\s+nginx:1\.27,busybox\s+app=web\n$/);
    const jobTemplate = { spec: { restartPolicy: "Never", containers: [{ name: "pi", image: "perl" }] } };
    const job = { metadata: { name: "pi" }, spec: { completions: 1, template: jobTemplate } };
    const start = "2026-01-01T00:00:00Z";
    const done = { startTime: start, completionTime: "2026-01-01T00:00:07Z", succeeded: 1, conditions: [{ type: "SuccessCriteriaMet", status: "True" }, { type: "Complete", status: "True" }] };
    await create(t, "/apis/batch/v1/namespaces/default/jobs", job, done);
    assert.match(await get(t, ["jobs", "-o", "wide"]), /^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\npi\s+Complete\s+1\/1\s+7s\s+\d+s\s+pi\s+perl\s+batch\.kubernetes\.io\/controller-uid=/);
    await create(t, "/apis/batch/v1/namespaces/default/cronjobs", { metadata: { name: "nightly" }, spec: { schedule: "0 3 * * *", jobTemplate: { spec: { template: jobTemplate } } } });
    assert.match(await get(t, ["cronjobs"]), /^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE\nnightly\s+0 3 \* \* \*\s+<none>\s+False\s+0\s+<none>\s+\d+s\n$/);
  } finally {
    await t.close();
  }
});

test("kubectl get prints nodes with their wide columns, events as the real server does, and Name/Created At for roles", async () => {
  const t = await testServer();
  try {
    const node = { metadata: { name: "n1", labels: { "node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge" } } };
    const nodeStatus = { conditions: [{ type: "Ready", status: "True" }], addresses: [{ type: "InternalIP", address: "172.18.0.2" }], nodeInfo: { kubeletVersion: "v1.35.0", osImage: "Debian 13", kernelVersion: "6.12", containerRuntimeVersion: "containerd://2.1", machineID: "", systemUUID: "", bootID: "", kubeProxyVersion: "", operatingSystem: "linux", architecture: "amd64" } };
    await create(t, "/api/v1/nodes", node, nodeStatus);
    assert.match(await get(t, ["nodes", "-o", "wide"]), /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME\nn1\s+Ready\s+control-plane,edge\s+\d+s\s+v1\.35\.0\s+172\.18\.0\.2\s+<none>\s+Debian 13\s+6\.12\s+containerd:\/\/2\.1\n$/);
    const event = { metadata: { name: "web.1" }, involvedObject: { kind: "Pod", name: "web", namespace: "default", fieldPath: "spec.containers{web}" }, reason: "Pulled", message: " pulled nginx ", type: "Normal", source: { component: "kubelet", host: "n1" }, count: 2 };
    await create(t, "/api/v1/namespaces/default/events", event);
    assert.match(await get(t, ["events"]), /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n<unknown>\s+Normal\s+Pulled\s+pod\/web\s+pulled nginx\n$/);
    assert.match(await get(t, ["events", "-o", "wide"]), /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+SUBOBJECT\s+SOURCE\s+MESSAGE\s+FIRST SEEN\s+COUNT\s+NAME\n<unknown>\s+Normal\s+Pulled\s+pod\/web\s+spec\.containers\{web\}\s+kubelet, n1\s+pulled nginx\s+<unknown>\s+2\s+web\.1\n$/);
    await create(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", { metadata: { name: "reader" }, rules: [] });
    assert.match(await get(t, ["roles"]), /^NAME\s+CREATED AT\nreader\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
  } finally {
    await t.close();
  }
});

test("kubectl get prints quotas, flow control, admission policies and controller revisions with the real printers' columns", async () => {
  const t = await testServer();
  try {
    const hard = { pods: "10", "requests.cpu": "1", "limits.cpu": "2" };
    await create(t, "/api/v1/namespaces/default/resourcequotas", { metadata: { name: "compute" }, spec: { hard } });
    // Three pods that count against it; the server's quota loop writes the status the printer shows.
    for (const [name, cpu] of [["a", "100m"], ["b", "200m"], ["c", "200m"]] as const) {
      await create(t, "/api/v1/namespaces/default/pods", { metadata: { name }, spec: { containers: [{ name: "app", image: "nginx", resources: { requests: { cpu }, limits: { cpu } } }] } });
    }
    let quota = "";
    for (let i = 0; i < 50 && !/pods: 3\//.test(quota); i++) quota = await get(t, ["quota"]);
    assert.match(quota, /^NAME\s+REQUEST\s+LIMIT\s+AGE\ncompute\s+pods: 3\/10, requests\.cpu: 500m\/1\s+limits\.cpu: 500m\/2\s+\d+s\n$/);
    const flowcontrol = "/apis/flowcontrol.apiserver.k8s.io/v1";
    const queuing = { type: "Limited", limited: { nominalConcurrencyShares: 20, limitResponse: { type: "Queue", queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 } } } };
    await create(t, `${flowcontrol}/prioritylevelconfigurations`, { metadata: { name: "batch" }, spec: queuing });
    assert.match(await get(t, ["prioritylevelconfigurations", "batch"]), /^NAME\s+TYPE\s+NOMINALCONCURRENCYSHARES\s+QUEUES\s+HANDSIZE\s+QUEUELENGTHLIMIT\s+AGE\nbatch\s+Limited\s+20\s+16\s+4\s+50\s+\d+s\n$/);
    const schema = { metadata: { name: "batch-jobs" }, spec: { priorityLevelConfiguration: { name: "missing" }, matchingPrecedence: 900, distinguisherMethod: { type: "ByNamespace" } } };
    await create(t, `${flowcontrol}/flowschemas`, schema, { conditions: [{ type: "Dangling", status: "True", reason: "NotFound", message: "missing", lastTransitionTime: "2026-01-01T00:00:00Z" }] });
    assert.match(await get(t, ["flowschemas", "batch-jobs"]), /^NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE\s+MISSINGPL\nbatch-jobs\s+missing\s+900\s+ByNamespace\s+\d+s\s+True\n$/);
    const admission = "/apis/admissionregistration.k8s.io/v1";
    const policy = { metadata: { name: "replica-limit" }, spec: { paramKind: { apiVersion: "v1", kind: "ConfigMap" }, matchConstraints: { resourceRules: [{ apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["deployments"] }] }, validations: [{ expression: "object.spec.replicas <= 5" }] } };
    await create(t, `${admission}/validatingadmissionpolicies`, policy);
    assert.match(await get(t, ["validatingadmissionpolicies"]), /^NAME\s+VALIDATIONS\s+PARAMKIND\s+AGE\nreplica-limit\s+1\s+v1\/ConfigMap\s+\d+s\n$/);
    const binding = { metadata: { name: "replica-limit-prod" }, spec: { policyName: "replica-limit", paramRef: { name: "limits", namespace: "prod", parameterNotFoundAction: "Deny" }, validationActions: ["Deny"] } };
    await create(t, `${admission}/validatingadmissionpolicybindings`, binding);
    assert.match(await get(t, ["validatingadmissionpolicybindings"]), /^NAME\s+POLICYNAME\s+PARAMREF\s+AGE\nreplica-limit-prod\s+replica-limit\s+prod\/limits\s+\d+s\n$/);
    // The owner must exist: the garbage collector deletes a revision whose controller is gone.
    const sts = { metadata: { name: "db" }, spec: { serviceName: "db", selector, template } };
    const owned = await request(t.server, "POST", "/apis/apps/v1/namespaces/default/statefulsets", { body: sts });
    assert.equal(owned.status, 201, owned.text);
    const owner = { apiVersion: "apps/v1", kind: "StatefulSet", name: "db", uid: owned.json.metadata.uid, controller: true };
    await create(t, "/apis/apps/v1/namespaces/default/controllerrevisions", { metadata: { name: "db-5d8f", ownerReferences: [owner] }, revision: 2, data: {} });
    assert.match(await get(t, ["controllerrevisions"]), /^NAME\s+CONTROLLER\s+REVISION\s+AGE\ndb-5d8f\s+statefulset\.apps\/db\s+2\s+\d+s\n$/);
  } finally {
    await t.close();
  }
});

test("kubectl get prints CSI drivers as defaulted, CSI nodes, capacities, volume attachments and volume attributes classes", async () => {
  const t = await testServer();
  try {
    const storage = "/apis/storage.k8s.io/v1";
    await create(t, `${storage}/csidrivers`, { metadata: { name: "ebs.csi.aws.com" }, spec: { tokenRequests: [{ audience: "sts.amazonaws.com" }] } });
    assert.match(await get(t, ["csidrivers"]), /^NAME\s+ATTACHREQUIRED\s+PODINFOONMOUNT\s+STORAGECAPACITY\s+TOKENREQUESTS\s+REQUIRESREPUBLISH\s+MODES\s+AGE\nebs\.csi\.aws\.com\s+true\s+false\s+false\s+sts\.amazonaws\.com\s+false\s+Persistent\s+\d+s\n$/);
    await create(t, `${storage}/csinodes`, { metadata: { name: "n1" }, spec: { drivers: [{ name: "ebs.csi.aws.com", nodeID: "i-1" }] } });
    assert.match(await get(t, ["csinodes"]), /^NAME\s+DRIVERS\s+AGE\nn1\s+1\s+\d+s\n$/);
    await create(t, `${storage}/namespaces/default/csistoragecapacities`, { metadata: { name: "cap-1" }, storageClassName: "fast", capacity: "100Gi" });
    assert.match(await get(t, ["csistoragecapacities"]), /^NAME\s+STORAGECLASSNAME\s+CAPACITY\ncap-1\s+fast\s+100Gi\n$/);
    const attachment = { metadata: { name: "csi-abc" }, spec: { attacher: "ebs.csi.aws.com", nodeName: "n1", source: { persistentVolumeName: "pv-1" } } };
    await create(t, `${storage}/volumeattachments`, attachment, { attached: true });
    assert.match(await get(t, ["volumeattachments"]), /^NAME\s+ATTACHER\s+PV\s+NODE\s+ATTACHED\s+AGE\ncsi-abc\s+ebs\.csi\.aws\.com\s+pv-1\s+n1\s+true\s+\d+s\n$/);
    await create(t, `${storage}/volumeattributesclasses`, { metadata: { name: "gold" }, driverName: "ebs.csi.aws.com", parameters: { iops: "3000" } });
    assert.match(await get(t, ["volumeattributesclasses"]), /^NAME\s+DRIVERNAME\s+AGE\ngold\s+ebs\.csi\.aws\.com\s+\d+s\n$/);
  } finally {
    await t.close();
  }
});
