// The modeled system: the tracebloc client chart's control plane (jobs-manager, requests-proxy, the
// resource-monitor DaemonSet), the images they run, the annotations the image-refresh script keeps, and the
// objects a `helm install` renders. Everything here is plain data and pure helpers shared by the script, the
// helm actor, the scenario and the properties.
import type { KubeObject } from "settle";
import { daemonSetRolloutStatus, deploymentRolloutStatus, digestOf, type Registry } from "settle/sim";

export const namespace = "tracebloc";
/** The chart's `global.imageRegistry`: the script only acts when it is docker.io. */
export const imageRegistry = "docker.io";
export const imageTag = "prod";
/** The registry a prefix-rewriting admission webhook moves images to (scenario c). */
export const mirrorRegistry = "mirror.example.org";
export const mirrorLabel = "mirror.example.org/rewrite";

/** The annotations the script keeps on deployment/jobs-manager. */
export const keys = {
  attempt: "tracebloc.io/refresh-attempt",
  flap: "tracebloc.io/refresh-flap-detected",
  skipStreak: "tracebloc.io/refresh-skip-streak",
  record: (image: string) => `tracebloc.io/last-refreshed-${image}-digest`,
} as const;

/** The flap bound (MAX_REFRESH_ATTEMPTS) and the skip bound (MAX_SKIP_TICKS) of the script. */
export const refreshAttemptsMax = 3;
export const skipTicksMax = 8;

export type WorkloadName = "jobs-manager" | "requests-proxy" | "resource-monitor";

export interface WorkloadRef {
  name: WorkloadName;
  apiVersion: "apps/v1";
  kind: "Deployment" | "DaemonSet";
}

export const workloads: Record<WorkloadName, WorkloadRef> = {
  "jobs-manager": { name: "jobs-manager", apiVersion: "apps/v1", kind: "Deployment" },
  "requests-proxy": { name: "requests-proxy", apiVersion: "apps/v1", kind: "Deployment" },
  "resource-monitor": { name: "resource-monitor", apiVersion: "apps/v1", kind: "DaemonSet" },
};

export interface ContainerSlot {
  workload: WorkloadName;
  container: string;
}

export interface ManagedImage {
  /** The short name in the annotations and logs. */
  name: string;
  /** The repository under the registry: `tracebloc/jobs-manager`. */
  repo: string;
  /** Every container that runs this image (the proxy runs the jobs-manager image). */
  slots: ContainerSlot[];
}

/** The unpinned control-plane images the script refreshes, in the order it visits them. */
export const managedImages: ManagedImage[] = [
  {
    name: "jobs-manager",
    repo: "tracebloc/jobs-manager",
    slots: [
      { workload: "jobs-manager", container: "api" },
      { workload: "requests-proxy", container: "proxy" },
    ],
  },
  { name: "pods-monitor", repo: "tracebloc/pods-monitor", slots: [{ workload: "jobs-manager", container: "pods-monitor-container" }] },
  { name: "resource-monitor", repo: "tracebloc/resource-monitor", slots: [{ workload: "resource-monitor", container: "resource-monitor" }] },
];

/** The images of the two cron programs (the kubelets run them as code). */
export const refreshImage = `${imageRegistry}/tracebloc/image-refresh:1.9.108`;
export const helmImage = `${imageRegistry}/alpine/helm:3.16.4`;

/** What the chart renders for an image: `docker.io/repo:prod` (no digest). */
export function taggedRef(image: ManagedImage): string {
  return `${imageRegistry}/${image.repo}:${imageTag}`;
}

/** What the script pins: `docker.io/repo@sha256:...`. */
export function pinnedRef(image: ManagedImage, digest: string): string {
  return `${imageRegistry}/${image.repo}@${digest}`;
}

/** The registry key the script HEADs for an image. */
export function registryKey(image: ManagedImage): string {
  return taggedRef(image);
}

/** The registry at t=0: docker.io and its mirror carry the same digests. */
export function initialRegistry(): Registry {
  const registry: Registry = {
    [refreshImage]: "sha256:refresh-1",
    [helmImage]: "sha256:helm-3164",
  };
  const digests: Record<string, string> = { "jobs-manager": "sha256:jm-1", "pods-monitor": "sha256:pm-1", "resource-monitor": "sha256:rm-1" };
  for (const image of managedImages) {
    registry[taggedRef(image)] = digests[image.name]!;
    registry[`${mirrorRegistry}/${image.repo}:${imageTag}`] = digests[image.name]!;
  }
  return registry;
}

/** A publish: the tag moves to a new digest, on docker.io and on the mirror. */
export function publish(registry: Registry, image: ManagedImage, digest: string): Registry {
  return { ...registry, [taggedRef(image)]: digest, [`${mirrorRegistry}/${image.repo}:${imageTag}`]: digest };
}

/** `${have##*@}`: the digest of a reference, or undefined for a tag reference. */
export function digestPart(ref: string | undefined): string | undefined {
  return ref === undefined ? undefined : digestOf(ref);
}

type Container = { name: string; image?: string };

export function containersOf(object: KubeObject | undefined): Container[] {
  const spec = object?.spec as { template?: { spec?: { containers?: Container[] } } } | undefined;
  return spec?.template?.spec?.containers ?? [];
}

/** The image of one container in a workload's spec, or undefined when absent. */
export function liveImage(object: KubeObject | undefined, container: string): string | undefined {
  return containersOf(object).find((c) => c.name === container)?.image;
}

/** What `kubectl rollout status` would say: done or not. */
export function rolloutDone(object: KubeObject | undefined): boolean {
  if (object === undefined) return false;
  return object.kind === "DaemonSet" ? daemonSetRolloutStatus(object).done : deploymentRolloutStatus(object).done;
}

export function attemptOf(object: KubeObject | undefined): number {
  const text = object?.metadata.annotations?.[keys.attempt];
  const value = Number(text ?? "0");
  return Number.isInteger(value) && value >= 0 ? value : 0;
}

export interface ChartManifests {
  version: string;
  objects: KubeObject[];
}

const labelsOf = (app: string, version: string, mirrored: boolean) => ({
  app,
  "app.kubernetes.io/managed-by": "Helm",
  "helm.sh/chart": `client-${version}`,
  ...(mirrored ? { [mirrorLabel]: "enabled" } : {}),
});

/** The chart's workload objects as `helm template` renders them: every image on `repo:tag`. */
export function renderChart(version: string, options: { mirrored: boolean; jobsManagerReadyMs?: number }): KubeObject[] {
  const image = (name: string) => taggedRef(managedImages.find((i) => i.name === name)!);
  const podAnnotations = options.jobsManagerReadyMs === undefined ? {} : { annotations: { "sim.settle.dev/ready-ms": String(options.jobsManagerReadyMs) } };
  const deployment = (name: string, strategy: string, containers: Container[], extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels: labelsOf(name, version, options.mirrored) },
    spec: {
      replicas: 1,
      strategy: { type: strategy },
      progressDeadlineSeconds: 600,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name }, ...extra }, spec: { terminationGracePeriodSeconds: 60, containers } },
    },
  });
  return [
    deployment("jobs-manager", "Recreate", [
      { name: "api", image: image("jobs-manager") },
      { name: "pods-monitor-container", image: image("pods-monitor") },
    ], podAnnotations),
    deployment("requests-proxy", "RollingUpdate", [{ name: "proxy", image: image("jobs-manager") }]),
    {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "resource-monitor", namespace, labels: labelsOf("resource-monitor", version, options.mirrored) },
      spec: {
        selector: { matchLabels: { app: "resource-monitor" } },
        updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: { labels: { app: "resource-monitor" } },
          // Tolerates every taint, so a NotReady node keeps a pod it can never run: the rollout never settles.
          spec: { tolerations: [{ operator: "Exists" }], containers: [{ name: "resource-monitor", image: image("resource-monitor") }] },
        },
      },
    },
  ];
}
