// The volume provisioner: the default class `standard`, a volume per claim of its class bound both ways, a class
// given to a claim that names none, claims of other provisioners or of class "" left Pending, WaitForFirstConsumer
// waiting for a pod on a node, and a volume deleted (Delete) or Released (Retain) once its claim is gone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { annotations, cluster, defaultStorageClass, settleProvisioner } from "../../src/cluster/index.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Simulation } from "../../src/sim/index.ts";
import { list, ns, runFor, world } from "./helpers.ts";

type Any = KubeObject & { spec?: any; status?: any };

const claim = (name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, namespace: ns },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "3Gi" } }, ...extra },
});

const storageClass = (name: string, provisioner: string, extra: Record<string, unknown> = {}): KubeObject =>
  ({ apiVersion: "storage.k8s.io/v1", kind: "StorageClass", metadata: { name }, provisioner, ...extra }) as KubeObject;

const claimOf = (sim: Simulation, name: string) => sim.view().get({ apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ns, name }) as Any | undefined;
const volumes = (sim: Simulation) => list(sim, "v1", "PersistentVolume") as Any[];

test("a claim of no class gets the default class, a volume of its size, and both are Bound to each other", async () => {
  const sim = world(3, { actors: cluster({ nodes: 1, with: ["volume-provisioner"] }) });
  sim.store.create(claim("data"));
  sim.store.create(claim("static", { storageClassName: "" }));
  sim.store.create(storageClass("cloud", "ebs.csi.example.com"));
  sim.store.create(claim("elsewhere", { storageClassName: "cloud" }));
  await runFor(sim, 5_000);
  const standard = sim.view().get({ apiVersion: "storage.k8s.io/v1", kind: "StorageClass", name: defaultStorageClass }) as Any;
  assert.equal(standard.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"], "true");
  const bound = claimOf(sim, "data")!;
  assert.equal(bound.spec.storageClassName, defaultStorageClass);
  assert.equal(bound.status.phase, "Bound");
  assert.deepEqual(bound.status.capacity, { storage: "3Gi" });
  assert.equal(bound.metadata.annotations?.["volume.kubernetes.io/storage-provisioner"], settleProvisioner);
  const [volume, ...more] = volumes(sim);
  assert.equal(more.length, 0, "one volume: the other claims are not this provisioner's");
  assert.equal(bound.spec.volumeName, volume!.metadata.name);
  assert.deepEqual([volume!.spec.claimRef.name, volume!.spec.claimRef.uid, volume!.spec.capacity.storage, volume!.status?.phase], ["data", bound.metadata.uid, "3Gi", "Bound"]);
  for (const name of ["static", "elsewhere"]) assert.notEqual(claimOf(sim, name)!.status?.phase, "Bound", `${name} stays Pending`);

  sim.store.delete({ apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ns, name: "data" });
  await runFor(sim, 5_000);
  assert.deepEqual(volumes(sim), [], "the Delete policy deletes the volume with its claim");
});

test("Retain leaves the volume Released; WaitForFirstConsumer provisions once a pod that mounts the claim is on a node", async () => {
  const sim = world(4, { actors: cluster({ nodes: 1, with: ["volume-provisioner"] }) });
  sim.store.create(storageClass("keep", settleProvisioner, { reclaimPolicy: "Retain" }));
  sim.store.create(storageClass("late", settleProvisioner, { volumeBindingMode: "WaitForFirstConsumer" }));
  sim.store.create(claim("kept", { storageClassName: "keep" }));
  sim.store.create(claim("lazy", { storageClassName: "late" }));
  await runFor(sim, 5_000);
  assert.equal(claimOf(sim, "kept")!.status?.phase, "Bound");
  assert.notEqual(claimOf(sim, "lazy")!.status?.phase, "Bound", "no consumer yet");
  sim.store.create({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "user", namespace: ns },
    spec: { containers: [{ name: "main", image: "app:v1" }], volumes: [{ name: "v", persistentVolumeClaim: { claimName: "lazy" } }] },
  });
  await runFor(sim, 5_000);
  assert.equal(claimOf(sim, "lazy")!.status?.phase, "Bound", "bound once its pod is scheduled");
  sim.store.delete({ apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: ns, name: "kept" });
  await runFor(sim, 5_000);
  const kept = volumes(sim).find((v) => v.spec.storageClassName === "keep");
  assert.equal(kept?.status?.phase, "Released");
});

test("with the provisioner, a StatefulSet's claims are bound by it to real volumes; without it, nothing provisions", async () => {
  const set = {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: "db", namespace: ns },
    spec: {
      replicas: 2,
      serviceName: "db",
      selector: { matchLabels: { app: "db" } },
      template: { metadata: { labels: { app: "db" }, annotations: { [annotations.readyMs]: "1000" } }, spec: { containers: [{ name: "db", image: "db:v1" }] } },
      volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "2Gi" } } } }],
    },
  };
  const sim = world(5, { registry: { "db:v1": "sha256:d1" }, actors: cluster({ nodes: 1, with: ["statefulset-controller", "volume-provisioner"] }) });
  sim.store.create(set);
  await runFor(sim, 20_000);
  const claims = list(sim, "v1", "PersistentVolumeClaim") as Any[];
  assert.deepEqual(claims.map((c) => [c.metadata.name, c.status?.phase, c.spec.volumeName === `pvc-${c.metadata.uid}`]), [["data-db-0", "Bound", true], ["data-db-1", "Bound", true]]);
  assert.equal(volumes(sim).length, 2);
  const plain = world(5, { actors: cluster({ nodes: 1, with: ["statefulset-controller"] }) });
  await runFor(plain, 5_000);
  assert.deepEqual(list(plain, "storage.k8s.io/v1", "StorageClass"), []);
});
