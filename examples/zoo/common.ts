// What the zoo's cases share: one API group for their custom kinds, a CRD builder, the namespace they live in
// and a short timing. Each case keeps its controller and its scenario in its own folder; this file holds only
// the plumbing that would otherwise be copied twelve times.
import type { KubeObject } from "settle";
import type { Timing } from "settle/sim";

export const group = "zoo.settle.dev";
export const apiVersion = `${group}/v1`;
export const namespace = "zoo";

/** The namespace object every case creates first. */
export function namespaceObject(name: string = namespace): KubeObject {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
}

/**
 * A namespaced CRD in the zoo group with a status subresource, so `metadata.generation` moves only with the
 * spec (as it does for real custom resources). Spec and status keep whatever fields a case gives them: the
 * cases are about controllers, not schemas.
 */
export function crdFor(kind: string, plural: string): KubeObject {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: "Namespaced",
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
                status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
          },
        },
      ],
    },
  };
}

/**
 * Short runs: every case's workload is done within a few seconds, so 20 s of faults are enough to hit it. The
 * settle window stays at the default 60 s because it must outlast the longest pause the default budget draws
 * (30 s): a shorter window would call a world settled while a paused controller still has work queued. The
 * step bound catches a hot loop (two controllers fighting) long before the default 200,000 steps would.
 */
export const zooTiming: Partial<Timing> = { faultPhaseMs: 20_000, settleWindowMs: 60_000, horizonMs: 300_000, stepsMax: 20_000 };

export const configMapKind = { apiVersion: "v1", kind: "ConfigMap" } as const;
