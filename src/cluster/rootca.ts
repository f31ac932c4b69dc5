// The root CA publisher: every namespace that is not being deleted has a ConfigMap `kube-root-ca.crt` holding the
// cluster's CA certificate under `ca.crt`, made again when someone deletes it and set back when someone changes it,
// as kube-controller-manager's root-ca-cert-publisher does. The token volume every pod mounts (see the server's pod
// admission) reads it.
import { isAlreadyExists, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { defineActor } from "../sim/simulation.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { isTerminating, runControllers } from "./common.ts";
import { namespaceKind } from "./serviceaccounts.ts";
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
  if (isTerminating(namespace) || (namespace.status as { phase?: string } | undefined)?.phase === "Terminating") return Action.awaitChange();
  const data = { "ca.crt": certificate };
  const current = ctx.lister(configMapKind).getByName(rootCaConfigMap, name);
  try {
    if (current === undefined) await ctx.client.create({ object: { ...configMapKind, metadata: { name: rootCaConfigMap, namespace: name }, data } });
    else if (Object.keys(current.data ?? {}).length !== 1 || (current.data as Record<string, unknown>)["ca.crt"] !== certificate) {
      await ctx.client.update({ object: { ...current, data } });
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
  return defineActor({
    name: "root-ca-cert-publisher",
    restartDelayMs: options.restartDelayMs ?? 1000,
    crashable: options.crashable ?? true,
    async start(ctx) {
      const controller = defineController<KubeObject>({
        name: "root-ca-cert-publisher",
        for: namespaceKind,
        // Only the published ConfigMap matters: its change or deletion brings its namespace back to the queue.
        watches: [{ ...configMapKind, map: (cm) => (cm.metadata.name === rootCaConfigMap ? [{ name: cm.metadata.namespace ?? "" }] : []) }],
        resyncMs: 0,
        reconcile: (namespace, rctx) => publish(namespace, rctx, certificate),
      });
      await runControllers(ctx, [controller]);
    },
  });
}
