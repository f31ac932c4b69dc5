// The Endpoints and EndpointSlice controllers: for each Service with a selector, the addresses of the pods it selects.
// Endpoints (same name as the Service) list ready pods under `addresses` and the others under `notReadyAddresses`;
// EndpointSlices (`<service>-<suffix>`, owned by the Service, at most `endpointsPerSliceMax` endpoints each) carry
// every pod with an IP, terminating ones too, with `ready`/`serving`/`terminating` conditions. Ports are the
// Service's, with `targetPort` resolved per pod (a named port through the pod's container ports).
import type { Container, EndpointAddress, EndpointPort, EndpointSubset, ServicePort, ServiceSpec } from "kubernetes-types/core/v1.js";
import type { Endpoint, EndpointPort as SlicePort } from "kubernetes-types/discovery/v1.js";
import { assert } from "../api/assert.ts";
import { isAlreadyExists } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { MapContext, ReconcileContext } from "../runtime/controller.ts";
import { indexNames } from "../runtime/cache.ts";
import { canonicalEqual, canonicalJson, controllerActor, deleteIfPresent, isPodFinished, isPodReady, isTerminating, ownedBy, podKind, selectorMatches } from "./common.ts";
import type { Pod } from "./common.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";

export const serviceKind = { apiVersion: "v1", kind: "Service" } as const;
export const endpointsKind = { apiVersion: "v1", kind: "Endpoints" } as const;
export const endpointSliceKind = { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" } as const;
export const endpointsManagedByLabel = "endpoints.kubernetes.io/managed-by";
export const endpointsControllerName = "endpoint-controller";
export const serviceNameLabel = "kubernetes.io/service-name";
export const sliceManagedByLabel = "endpointslice.kubernetes.io/managed-by";
export const sliceControllerName = "endpointslice-controller.k8s.io";
/** Endpoints per EndpointSlice (the real controller's default `--max-endpoints-per-slice`). */
export const endpointsPerSliceMax = 100;

type Service = KubeObject & { spec?: ServiceSpec };
type Endpoints = KubeObject & { subsets?: EndpointSubset[] };
type EndpointSlice = KubeObject & { addressType: string; endpoints: Endpoint[]; ports?: SlicePort[] };

function selectorOf(service: Service): Record<string, string> | undefined {
  const selector = service.spec?.selector;
  return selector === undefined || Object.keys(selector).length === 0 ? undefined : selector;
}

/** The Services in the pod's namespace whose selector matches the pod's labels. */
function servicesOfPod(pod: KubeObject, ctx: MapContext): Array<{ namespace?: string; name: string }> {
  const services = ctx.lister<Service>(serviceKind).byIndex(indexNames.namespace, pod.metadata.namespace ?? "");
  return services
    .filter((service) => {
      const selector = selectorOf(service);
      return selector !== undefined && selectorMatches({ matchLabels: selector }, pod.metadata.labels);
    })
    .map((service) => ({ namespace: service.metadata.namespace, name: service.metadata.name ?? "" }));
}

/** The port a Service port reaches on a pod: a number, or a named container port; undefined when the pod has none. */
function targetPort(port: ServicePort, containers: readonly Container[]): number | undefined {
  const target = port.targetPort ?? port.port;
  if (typeof target === "number") return target;
  if (/^\d+$/.test(target)) return Number(target);
  const protocol = port.protocol ?? "TCP";
  for (const container of containers) {
    const found = (container.ports ?? []).find((p) => p.name === target && (p.protocol ?? "TCP") === protocol);
    if (found !== undefined) return found.containerPort;
  }
  return undefined;
}

/** The pod's ports for the Service, or undefined when a named target port is missing on it (it is left out). */
function podPorts(service: Service, pod: Pod): EndpointPort[] | undefined {
  const ports: EndpointPort[] = [];
  for (const port of service.spec?.ports ?? []) {
    const number = targetPort(port, pod.spec.containers);
    if (number === undefined) return undefined;
    ports.push({ ...(port.name === undefined || port.name === "" ? {} : { name: port.name }), port: number, protocol: port.protocol ?? "TCP" });
  }
  return ports;
}

/** The selected pods that have an IP and have not finished, in name order. */
function selectedPods(service: Service, ctx: ReconcileContext): Pod[] {
  const selector = selectorOf(service);
  assert(selector !== undefined, "endpoints-service-has-selector");
  const pods = ctx.lister<Pod>(podKind).byIndex(indexNames.namespace, service.metadata.namespace ?? "");
  return pods.filter((pod) => selectorMatches({ matchLabels: selector }, pod.metadata.labels) && (pod.status?.podIP ?? "") !== "" && !isPodFinished(pod));
}

function targetRef(pod: Pod): { kind: string; namespace?: string; name: string; uid: string } {
  return { kind: "Pod", ...(pod.metadata.namespace === undefined ? {} : { namespace: pod.metadata.namespace }), name: pod.metadata.name ?? "", uid: pod.metadata.uid ?? "" };
}

/** The Endpoints subsets: pods grouped by their resolved ports; terminating pods are left out. */
function endpointSubsets(service: Service, pods: Pod[]): EndpointSubset[] {
  const subsets = new Map<string, { ports: EndpointPort[]; addresses: EndpointAddress[]; notReadyAddresses: EndpointAddress[] }>();
  const publishNotReady = service.spec?.publishNotReadyAddresses === true;
  for (const pod of pods) {
    const ports = podPorts(service, pod);
    if (ports === undefined || isTerminating(pod)) continue;
    const key = canonicalJson(ports);
    const subset = subsets.get(key) ?? { ports, addresses: [], notReadyAddresses: [] };
    subsets.set(key, subset);
    const hostname = pod.spec.hostname !== undefined && pod.spec.subdomain === service.metadata.name ? { hostname: pod.spec.hostname } : {};
    const address: EndpointAddress = { ip: pod.status?.podIP ?? "", ...hostname, ...(pod.spec.nodeName === undefined ? {} : { nodeName: pod.spec.nodeName }), targetRef: targetRef(pod) };
    (publishNotReady || isPodReady(pod) ? subset.addresses : subset.notReadyAddresses).push(address);
  }
  return [...subsets.values()].map((s) => ({
    ...(s.addresses.length === 0 ? {} : { addresses: s.addresses }),
    ...(s.notReadyAddresses.length === 0 ? {} : { notReadyAddresses: s.notReadyAddresses }),
    ...(s.ports.length === 0 ? {} : { ports: s.ports }),
  }));
}

async function syncEndpoints(service: Service, ctx: ReconcileContext): Promise<Action> {
  if (selectorOf(service) === undefined || isTerminating(service)) return Action.awaitChange();
  const name = service.metadata.name ?? "";
  const labels = { ...(service.metadata.labels ?? {}), [endpointsManagedByLabel]: endpointsControllerName };
  const subsets = endpointSubsets(service, selectedPods(service, ctx));
  const current = ctx.lister<Endpoints>(endpointsKind).getByName(name, service.metadata.namespace);
  const desired = { labels, subsets };
  if (current !== undefined && canonicalEqual({ labels: current.metadata.labels ?? {}, subsets: current.subsets ?? [] }, desired)) return Action.awaitChange();
  const metadata = { ...(current?.metadata ?? { name, namespace: service.metadata.namespace }), labels };
  const object = { ...endpointsKind, metadata, ...(subsets.length === 0 ? {} : { subsets }) };
  if (current === undefined) {
    try {
      await ctx.client.create({ readOnly: true, object });
    } catch (error) {
      // The cache has not caught up with an earlier create: the next event brings it and this runs again.
      if (!isAlreadyExists(error)) throw error;
    }
  } else {
    await ctx.client.update({ readOnly: true, object });
  }
  return Action.awaitChange();
}

/** Endpoints this controller made whose Service is gone are deleted (they carry no owner reference). */
async function removeOrphan(endpoints: Endpoints, ctx: ReconcileContext): Promise<Action> {
  if (endpoints.metadata.labels?.[endpointsManagedByLabel] !== endpointsControllerName) return Action.awaitChange();
  const service = ctx.lister<Service>(serviceKind).getByName(endpoints.metadata.name ?? "", endpoints.metadata.namespace);
  if (service !== undefined && selectorOf(service) !== undefined) return Action.awaitChange();
  await deleteIfPresent(ctx, { ...endpointsKind, namespace: endpoints.metadata.namespace, name: endpoints.metadata.name ?? "", preconditions: { uid: endpoints.metadata.uid ?? "" } });
  return Action.awaitChange();
}

/** Actor `endpoints-controller`. Not part of `cluster()` unless asked for (`with: ["endpoints-controller"]`). */
export function endpointsController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return controllerActor("endpoints-controller", options, (ctx) => {
    const byName = (object: KubeObject) => [{ namespace: object.metadata.namespace, name: object.metadata.name ?? "" }];
    const sync = defineController<Service>({
      name: "endpoints-controller",
      for: serviceKind,
      watches: [
        { ...podKind, map: servicesOfPod },
        { ...endpointsKind, map: byName },
      ],
      resyncMs: 0,
      reconcile: syncEndpoints,
    });
    const orphans = defineController<Endpoints>({
      name: "endpoints-orphans",
      for: endpointsKind,
      watches: [{ ...serviceKind, map: byName }],
      resyncMs: 0,
      reconcile: removeOrphan,
    });
    return [sync, orphans];
  });
}

/** The slice endpoints, grouped by resolved ports, each group cut into slices of at most `endpointsPerSliceMax`. */
function desiredSlices(service: Service, pods: Pod[]): Array<{ ports: SlicePort[]; endpoints: Endpoint[] }> {
  const groups = new Map<string, { ports: SlicePort[]; endpoints: Endpoint[] }>();
  for (const pod of pods) {
    const resolved = podPorts(service, pod);
    if (resolved === undefined) continue;
    // A slice port always has a name, "" for an unnamed Service port (a pointer the real controller always sets, which
    // clients dereference: kubectl describe service crashes without it); an Endpoints port leaves it out.
    const ports = resolved.map((port) => ({ name: "", ...port }));
    const key = canonicalJson(ports);
    const group = groups.get(key) ?? { ports, endpoints: [] };
    groups.set(key, group);
    const ready = isPodReady(pod) && !isTerminating(pod);
    const hostname = pod.spec.hostname !== undefined && pod.spec.subdomain === service.metadata.name ? { hostname: pod.spec.hostname } : {};
    group.endpoints.push({
      addresses: [pod.status?.podIP ?? ""],
      conditions: { ready: service.spec?.publishNotReadyAddresses === true || ready, serving: isPodReady(pod), terminating: isTerminating(pod) },
      ...hostname,
      ...(pod.spec.nodeName === undefined ? {} : { nodeName: pod.spec.nodeName }),
      targetRef: targetRef(pod),
    });
  }
  const slices: Array<{ ports: SlicePort[]; endpoints: Endpoint[] }> = [];
  for (const group of groups.values()) {
    for (let at = 0; at < group.endpoints.length; at += endpointsPerSliceMax) slices.push({ ports: group.ports, endpoints: group.endpoints.slice(at, at + endpointsPerSliceMax) });
  }
  // A Service that selects nothing still gets one empty slice, as the real controller keeps a placeholder.
  return slices.length === 0 ? [{ ports: [], endpoints: [] }] : slices;
}

/** Slices created but not yet seen in the cache, by Service uid, with when they were created. */
type PendingSlices = Map<string, { names: Set<string>; sinceMs: number }>;
/** How long a created slice may stay unseen before the controller stops waiting for it. */
const pendingSliceMsMax = 30_000;

async function syncSlices(service: Service, ctx: ReconcileContext, pending: PendingSlices): Promise<Action> {
  if (selectorOf(service) === undefined || isTerminating(service)) return Action.awaitChange();
  const uid = service.metadata.uid;
  assert(uid !== undefined, "endpointslice-service-has-uid");
  const name = service.metadata.name ?? "";
  const labels = { ...(service.metadata.labels ?? {}), [serviceNameLabel]: name, [sliceManagedByLabel]: sliceControllerName };
  const existing = ownedBy(ctx.lister<EndpointSlice>(endpointSliceKind).byIndex(indexNames.ownerUid, uid), service).filter(
    (slice) => slice.metadata.labels?.[sliceManagedByLabel] === sliceControllerName,
  );
  // Acting before the cache shows a slice this controller created would create a second one: wait for it first.
  const waiting = pending.get(uid);
  for (const slice of existing) waiting?.names.delete(slice.metadata.name ?? "");
  if (waiting !== undefined && waiting.names.size > 0 && ctx.clock.now() - waiting.sinceMs < pendingSliceMsMax) return Action.requeueAfter(1000);
  pending.delete(uid);
  const desired = desiredSlices(service, selectedPods(service, ctx));
  const owner = { ...serviceKind, name, uid, controller: true, blockOwnerDeletion: true };
  for (const [index, want] of desired.entries()) {
    const body = { addressType: "IPv4", endpoints: want.endpoints, ports: want.ports };
    const slice = existing[index];
    if (slice === undefined) {
      const metadata = { generateName: `${name}-`, namespace: service.metadata.namespace, labels, ownerReferences: [owner] };
      const created: KubeObject = await ctx.client.create({ object: { ...endpointSliceKind, metadata, ...body } });
      const entry = pending.get(uid) ?? { names: new Set<string>(), sinceMs: ctx.clock.now() };
      entry.names.add(created.metadata.name ?? "");
      pending.set(uid, entry);
    } else if (!canonicalEqual({ labels: slice.metadata.labels ?? {}, addressType: slice.addressType, endpoints: slice.endpoints ?? [], ports: slice.ports ?? [] }, { labels, ...body })) {
      await ctx.client.update({ readOnly: true, object: { ...endpointSliceKind, metadata: { ...slice.metadata, labels }, ...body } });
    }
  }
  for (const slice of existing.slice(desired.length)) {
    await deleteIfPresent(ctx, { ...endpointSliceKind, namespace: slice.metadata.namespace, name: slice.metadata.name ?? "", preconditions: { uid: slice.metadata.uid ?? "" } });
  }
  return Action.awaitChange();
}

/**
 * Actor `endpointslice-controller`. Not part of `cluster()` unless asked for (`with: ["endpointslice-controller"]`).
 * Like the real controller's tracker of expected slices, it waits for the slices it created to show in its cache
 * before it acts on a Service again (a crash forgets them; a surplus slice is then deleted on the next pass).
 */
export function endpointSliceController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return controllerActor("endpointslice-controller", options, (ctx) => {
    const pending: PendingSlices = new Map();
    const controller = defineController<Service>({
      name: "endpointslice-controller",
      for: serviceKind,
      owns: [endpointSliceKind],
      watches: [{ ...podKind, map: servicesOfPod }],
      resyncMs: 0,
      reconcile: (service, rctx) => syncSlices(service, rctx, pending),
    });
    return [controller];
  });
}
