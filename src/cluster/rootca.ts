// The root CA publisher: every namespace that is not being deleted has a ConfigMap `kube-root-ca.crt` holding the
// cluster's CA certificate under `ca.crt`, made again when someone deletes it and set back when someone changes it,
// as kube-controller-manager's root-ca-cert-publisher does. The token volume every pod mounts (see the server's pod
// admission) reads it.
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { isNamespaceGoing, perNamespaceActor } from "./serviceaccounts.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";

export const rootCaConfigMap = "kube-root-ca.crt";
const configMapKind = { apiVersion: "v1", kind: "ConfigMap" } as const;

/** What a simulated cluster publishes when it is given no certificate: a stand-in, not a certificate anyone can parse. */
export const simulatedRootCa = "-----BEGIN CERTIFICATE-----\nc2V0dGxlIHNpbXVsYXRlZCBjbHVzdGVyIENB\n-----END CERTIFICATE-----\n";

export interface RootCaPublisherOptions extends WorkloadControllerOptions {
  /** The CA certificate (PEM) to publish. Default `simulatedRootCa`. */
  certificate?: string;
}

async function publish(namespace: KubeObject, ctx: ReconcileContext, certificate: string): Promise<Action> {
  const name = namespace.metadata.name ?? "";
  if (isNamespaceGoing(namespace)) return Action.awaitChange();
  const data = { "ca.crt": certificate };
  const current = ctx.lister(configMapKind).getByName(rootCaConfigMap, name);
  try {
    if (current === undefined) await ctx.client.create({ readOnly: true, object: { ...configMapKind, metadata: { name: rootCaConfigMap, namespace: name }, data } });
    else if (Object.keys(current.data ?? {}).length !== 1 || (current.data as Record<string, unknown>)["ca.crt"] !== certificate) {
      await ctx.client.update({ readOnly: true, object: { ...current, data } });
    }
  } catch (error) {
    // Made or changed since the cache was read: the watch brings the namespace back with what is there now.
    if (!isAlreadyExists(error) && !isNotFound(error)) throw error;
  }
  return Action.awaitChange();
}

/** Actor `root-ca-cert-publisher`. Not part of `cluster()` unless asked for (`with: ["root-ca-cert-publisher"]`). */
export function rootCaPublisher(options: RootCaPublisherOptions = {}): ActorDefinition {
  const certificate = options.certificate ?? simulatedRootCa;
  return perNamespaceActor("root-ca-cert-publisher", options, { ...configMapKind, name: rootCaConfigMap }, (namespace, ctx) => publish(namespace, ctx, certificate));
}
