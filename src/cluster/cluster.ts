// One line for a whole cluster: kubelets for N nodes, the scheduler, node lifecycle and the workload
// controllers, plus the external state they need (hosts, image caches, the registry, pod logs).
import { assert } from "../api/assert.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { emptyImageCache, registryCell } from "./images.ts";
import type { ImageCache, Registry } from "./images.ts";
import { kubelet, kubeletExternals, podLogsCell } from "./kubelet.ts";
import type { KubeletOptions } from "./kubelet.ts";
import { scheduler } from "./scheduler.ts";
import { replicaSetController } from "./replicaset.ts";
import { deploymentController } from "./deployment.ts";
import { daemonSetController } from "./daemonset.ts";
import { cronJobController, jobController } from "./job.ts";
import { disruptionController, nodeLifecycle } from "./node.ts";
import type { NodeLifecycleOptions } from "./node.ts";
import { statefulSetController } from "./statefulset.ts";
import { endpointSliceController, endpointsController } from "./endpoints.ts";
import { serviceAccountController } from "./serviceaccounts.ts";
import { rootCaPublisher } from "./rootca.ts";
import { volumeProvisioner } from "./volumes.ts";
import { hpaController } from "./hpa.ts";

/**
 * Actors `cluster()` adds only when asked: they came after scenarios whose recorded runs must replay unchanged, and an
 * extra actor (even an idle one) changes every schedule.
 */
export const optionalClusterActors = {
  "statefulset-controller": (options: ClusterOptions) => statefulSetController({ ...(options.events === true ? { events: true } : {}), provisioned: options.with?.includes("volume-provisioner") === true }),
  "endpoints-controller": () => endpointsController(),
  "endpointslice-controller": () => endpointSliceController(),
  "serviceaccount-controller": () => serviceAccountController(),
  "root-ca-cert-publisher": (options: ClusterOptions) => rootCaPublisher(options.rootCa === undefined ? {} : { certificate: options.rootCa }),
  "volume-provisioner": (options: ClusterOptions) => volumeProvisioner(options.events === true ? { events: true } : {}),
  "horizontal-pod-autoscaler": (options: ClusterOptions) => hpaController(options.events === true ? { events: true } : {}),
} as const;
export type OptionalClusterActor = keyof typeof optionalClusterActors;

export interface ClusterOptions {
  /** A node count (named n1..nN) or the node names. Default 1. */
  nodes?: number | readonly string[];
  /** Options every kubelet gets (its `node` is filled in). */
  kubelet?: Omit<KubeletOptions, "node">;
  nodeLifecycle?: NodeLifecycleOptions;
  /** Leave out actors by name prefix ("scheduler", "node-lifecycle", "deployment-controller", ...). */
  without?: readonly string[];
  /** Add the optional actors named (after the others, in this order). Default none. */
  with?: readonly OptionalClusterActor[];
  /**
   * Give node i (from 1, in `nodes` order) the InternalIP 10.0.0.(i+1) and the pod range 10.244.i.0/24, so pods get
   * distinct IPs (the kubelet's `network` option). Default false: every pod reports 10.1.0.1, as before addresses.
   */
  network?: boolean;
  /**
   * The kubelets, scheduler and workload controllers record the Events their real counterparts record (`Scheduled`,
   * `Pulled`/`Created`/`Started`/`Killing`, `SuccessfulCreate`/`SuccessfulDelete`, `ScalingReplicaSet`, `Completed`),
   * what `kubectl describe` and `kubectl events` show. Default false: each is a write.
   */
  events?: boolean;
  /** The CA certificate (PEM) `root-ca-cert-publisher` publishes. Default: a stand-in (`simulatedRootCa`). */
  rootCa?: string;
  /**
   * Rollout history as kube-controller-manager keeps it, what `kubectl rollout history` and `rollout undo` read: the
   * Deployment's revision annotation and the renumbering of a restored ReplicaSet, and a DaemonSet's
   * ControllerRevisions (StatefulSets always have theirs). Default false: runs recorded before it replay unchanged.
   */
  revisionHistory?: boolean;
}

export interface ClusterExternalsOptions {
  nodes?: number | readonly string[];
  /** The registry at t=0: `"repo:tag" -> digest`. Default empty. */
  registry?: Registry;
  /** Host state every node starts with (besides boot id and count). */
  host?: Record<string, unknown>;
  /** Image cache every node starts with. */
  images?: ImageCache;
}

export function nodeNames(nodes: number | readonly string[] | undefined): string[] {
  if (typeof nodes === "object") return [...nodes];
  const count = nodes ?? 1;
  assert(Number.isInteger(count) && count >= 0, "cluster-node-count-integer");
  return Array.from({ length: count }, (_, i) => `n${i + 1}`);
}

/** The external cells the cluster actors use, with their initial values (a scenario's `externals`). */
export function clusterExternals(options: ClusterExternalsOptions = {}): Record<string, unknown> {
  const cells: Record<string, unknown> = { [registryCell]: options.registry ?? {}, [podLogsCell]: {} };
  for (const node of nodeNames(options.nodes)) Object.assign(cells, kubeletExternals(node, options.host, options.images ?? emptyImageCache()));
  return cells;
}

/** Every cluster actor: kubelets, scheduler, node lifecycle and the workload controllers. */
export function cluster(options: ClusterOptions = {}): ActorDefinition[] {
  const names = nodeNames(options.nodes);
  assert(options.network !== true || names.length <= 254, "cluster-network-nodes-at-most-254");
  const network = (i: number) => (options.network === true ? { network: { hostIP: `10.0.0.${i + 2}`, podCIDR: `10.244.${i + 1}.0/24` } } : {});
  const events = options.events === true ? { events: true } : {};
  const actors: ActorDefinition[] = [
    ...names.map((node, i) => kubelet({ ...(options.kubelet ?? {}), ...network(i), ...events, node })),
    scheduler(events),
    nodeLifecycle(options.nodeLifecycle ?? {}),
    replicaSetController(events),
    deploymentController({ revisions: options.revisionHistory === true, ...events }),
    daemonSetController({ revisions: options.revisionHistory === true, ...events }),
    jobController(events),
    cronJobController(events),
    disruptionController(),
    ...(options.with ?? []).map((name) => optionalClusterActors[name](options)),
  ];
  const without = options.without ?? [];
  return actors.filter((actor) => !without.some((prefix) => actor.name.startsWith(prefix)));
}
