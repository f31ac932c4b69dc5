// Persistent volumes as a small cluster has them (kind's, minikube's): a default StorageClass `standard` whose
// provisioner makes a PersistentVolume for each claim of that class, and the binder of kube-controller-manager's
// persistent volume controller, which binds each such claim to its volume, gives a claim that names no class the
// default class (the retroactive default assignment), and reclaims a volume once its claim is gone (`Delete`: the
// volume goes; `Retain`: it is `Released`). Claims of another provisioner's class, of no class when there is no
// default, or of class "" stay `Pending`, as they would on a cluster without that provisioner. A class with
// `WaitForFirstConsumer` provisions once a pod that mounts the claim is on a node. No storage exists: a volume is a
// `hostPath` nobody mounts.
import type { PersistentVolume, PersistentVolumeClaim } from "kubernetes-types/core/v1.js";
import type { StorageClass } from "kubernetes-types/storage/v1.js";
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { clusterActor, deleteIfPresent, eventNote, isTerminating, podKind, runControllers } from "./common.ts";
import type { Pod } from "./common.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";

export const storageClassKind = { apiVersion: "storage.k8s.io/v1", kind: "StorageClass" } as const;
export const persistentVolumeKind = { apiVersion: "v1", kind: "PersistentVolume" } as const;
const claimKind = { apiVersion: "v1", kind: "PersistentVolumeClaim" } as const;

/** The provisioner of the default class. */
export const settleProvisioner = "settle.dev/hostpath";
export const defaultStorageClass = "standard";
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";

type Claim = KubeObject & PersistentVolumeClaim;
type Volume = KubeObject & PersistentVolume;
type Class = KubeObject & StorageClass;

export interface VolumeProvisionerOptions extends WorkloadControllerOptions {
  /** Make the default StorageClass `standard` when the actor starts and no class is the default. Default true. */
  defaultClass?: boolean;
}

/** The default class: the newest of those annotated as default, as the API server's admission picks it. */
function defaultClassOf(classes: readonly Class[]): Class | undefined {
  const defaults = classes.filter((c) => c.metadata.annotations?.[defaultClassAnnotation] === "true");
  defaults.sort((a, b) => (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? "") || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  return defaults[0];
}

/** The claims a pod mounts, as `{ namespace, name }` keys. */
function claimsOf(pod: Pod): Array<{ namespace: string; name: string }> {
  const namespace = pod.metadata.namespace ?? "";
  return (pod.spec.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim?.claimName === undefined ? [] : [{ namespace, name: v.persistentVolumeClaim.claimName }]));
}

async function reconcileClaim(claim: Claim, ctx: ReconcileContext, events: boolean | undefined): Promise<Action> {
  if (isTerminating(claim) || claim.status?.phase === "Bound") return Action.awaitChange();
  const namespace = claim.metadata.namespace ?? "";
  const name = claim.metadata.name ?? "";
  const className = claim.spec?.storageClassName;
  if (className === undefined || className === null) {
    const fallback = defaultClassOf(ctx.lister<Class>(storageClassKind).list());
    // The class joins the spec; the update brings the claim back to provision it.
    if (fallback !== undefined) await ctx.client.update({ readOnly: true, object: { ...claim, spec: { ...claim.spec, storageClassName: fallback.metadata.name } } });
    return Action.awaitChange();
  }
  const storageClass = ctx.lister<Class>(storageClassKind).getByName(className);
  if (storageClass?.provisioner !== settleProvisioner || claim.spec?.volumeName) return Action.awaitChange();
  if (storageClass.volumeBindingMode === "WaitForFirstConsumer") {
    const consumer = ctx.lister<Pod>(podKind).list({ namespace }).some((pod) => pod.spec.nodeName && claimsOf(pod).some((c) => c.name === name));
    if (!consumer) return Action.awaitChange();
  }
  const volume = volumeFor(claim, storageClass);
  try {
    await ctx.client.create({ readOnly: true, object: volume });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
  const annotations = { ...claim.metadata.annotations, "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes", "volume.beta.kubernetes.io/storage-provisioner": settleProvisioner, "volume.kubernetes.io/storage-provisioner": settleProvisioner };
  const bound = await ctx.client.update({ object: { ...claim, metadata: { ...claim.metadata, annotations }, spec: { ...claim.spec, volumeName: volume.metadata.name } } });
  await ctx.client.updateStatus({ readOnly: true, object: { ...bound, status: { phase: "Bound", accessModes: volume.spec?.accessModes ?? [], capacity: volume.spec?.capacity ?? {} } } });
  const note = eventNote(events, ctx.events);
  if (note !== undefined) await note(claim, "ProvisioningSucceeded", `Successfully provisioned volume ${volume.metadata.name}`);
  return Action.awaitChange();
}

/** The volume provisioned for a claim: `pvc-<claim uid>`, the claim's size and access modes, the class's policy. */
function volumeFor(claim: Claim, storageClass: Class): Volume {
  const name = `pvc-${claim.metadata.uid}`;
  return {
    ...persistentVolumeKind,
    metadata: { name, annotations: { "pv.kubernetes.io/provisioned-by": settleProvisioner } },
    spec: {
      capacity: { storage: String(claim.spec?.resources?.requests?.storage ?? "1Gi") },
      accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? "Delete",
      storageClassName: storageClass.metadata.name,
      ...(claim.spec?.volumeMode === undefined ? {} : { volumeMode: claim.spec.volumeMode }),
      claimRef: { apiVersion: "v1", kind: "PersistentVolumeClaim", namespace: claim.metadata.namespace, name: claim.metadata.name, uid: claim.metadata.uid },
      hostPath: { path: `/var/lib/settle/volumes/${name}`, type: "DirectoryOrCreate" },
    },
  };
}

/** A volume follows its claim: `Bound` while the claim it names exists, then deleted or `Released` by its policy. */
async function reconcileVolume(volume: Volume, ctx: ReconcileContext): Promise<Action> {
  if (isTerminating(volume)) return Action.awaitChange();
  const ref = volume.spec?.claimRef;
  const claim = ref === undefined ? undefined : ctx.lister<Claim>(claimKind).getByName(ref.name ?? "", ref.namespace);
  let phase: string;
  if (ref === undefined) phase = "Available";
  else if (claim !== undefined && claim.metadata.uid === ref.uid) phase = "Bound";
  else if (volume.status?.phase === "Bound" || volume.status?.phase === "Released") {
    if (volume.spec?.persistentVolumeReclaimPolicy === "Delete") {
      await deleteIfPresent(ctx, { ...persistentVolumeKind, name: volume.metadata.name ?? "" });
      return Action.awaitChange();
    }
    phase = "Released";
  } else return Action.awaitChange(); // the claim is not in the cache yet
  if (volume.status?.phase !== phase) {
    try {
      await ctx.client.updateStatus({ readOnly: true, object: { ...volume, status: { phase } } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return Action.awaitChange();
}

/** Actor `volume-provisioner`. Not part of `cluster()` unless asked for (`with: ["volume-provisioner"]`). */
export function volumeProvisioner(options: VolumeProvisionerOptions = {}): ActorDefinition {
  // The default class is made before the controllers start (an await), so this actor runs them itself.
  return clusterActor("volume-provisioner", options, async (ctx) => {
    if (options.defaultClass !== false) await ensureDefaultClass(ctx.client);
    const claims = defineController<Claim>({
      name: "volume-provisioner",
      for: claimKind,
      watches: [
        { ...storageClassKind, map: (_object, m) => m.lister<Claim>(claimKind).list().filter((c) => c.status?.phase !== "Bound").map((c) => ({ namespace: c.metadata.namespace, name: c.metadata.name ?? "" })) },
        { ...podKind, map: (pod) => claimsOf(pod as Pod) },
      ],
      resyncMs: 0,
      reconcile: (claim, c) => reconcileClaim(claim, c, options.events),
    });
    const volumes = defineController<Volume>({
      name: "persistent-volume-binder",
      for: persistentVolumeKind,
      watches: [{ ...claimKind, map: (claim) => ((claim as Claim).spec?.volumeName ? [{ name: (claim as Claim).spec!.volumeName! }] : []) }],
      resyncMs: 0,
      reconcile: reconcileVolume,
    });
    await runControllers(ctx, [claims, volumes]);
  });
}

/** The default class `standard` of this provisioner, made when no class is the default. */
async function ensureDefaultClass(client: ReconcileContext["client"]): Promise<void> {
  const classes = await client.list<Class>({ ...storageClassKind });
  if (defaultClassOf(classes.items) !== undefined) return;
  const object: Class = {
    ...storageClassKind,
    metadata: { name: defaultStorageClass, annotations: { [defaultClassAnnotation]: "true" } },
    provisioner: settleProvisioner,
    reclaimPolicy: "Delete",
    volumeBindingMode: "Immediate",
  };
  try {
    await client.create({ readOnly: true, object });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  }
}
