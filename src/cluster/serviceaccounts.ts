// The service account controller: every namespace that is not being deleted has a ServiceAccount named `default`,
// created when the namespace appears and again when someone deletes it, as kube-controller-manager's
// serviceaccount controller does. Pods that name no service account run as `default`, `kubectl create token default`
// needs it, and charts that set `serviceAccount.create: false` rely on it.
import { isAlreadyExists } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { controllerActor, isTerminating } from "./common.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";

export const namespaceKind = { apiVersion: "v1", kind: "Namespace" } as const;
export const serviceAccountKind = { apiVersion: "v1", kind: "ServiceAccount" } as const;
export const defaultServiceAccount = "default";

/** A namespace being deleted: nothing new is made in it. */
export function isNamespaceGoing(namespace: KubeObject): boolean {
  return isTerminating(namespace) || (namespace.status as { phase?: string } | undefined)?.phase === "Terminating";
}

/**
 * An actor of the controller manager that keeps one object named `watched.name` in every namespace: its reconcile
 * runs per namespace, and a change to (or the deletion of) that object in a namespace brings the namespace back.
 */
export function perNamespaceActor(
  name: string,
  options: WorkloadControllerOptions,
  watched: { apiVersion: string; kind: string; name: string },
  reconcile: (namespace: KubeObject, ctx: ReconcileContext) => Promise<Action>,
): ActorDefinition {
  return controllerActor(name, options, () => {
    const controller = defineController<KubeObject>({
      name,
      for: namespaceKind,
      watches: [{ apiVersion: watched.apiVersion, kind: watched.kind, map: (object) => (object.metadata.name === watched.name ? [{ name: object.metadata.namespace ?? "" }] : []) }],
      resyncMs: 0,
      reconcile,
    });
    return [controller];
  });
}

async function ensureDefault(namespace: KubeObject, ctx: ReconcileContext): Promise<Action> {
  const name = namespace.metadata.name ?? "";
  if (isNamespaceGoing(namespace)) return Action.awaitChange();
  if (ctx.lister(serviceAccountKind).getByName(defaultServiceAccount, name) !== undefined) return Action.awaitChange();
  try {
    await ctx.client.create({ readOnly: true, object: { ...serviceAccountKind, metadata: { name: defaultServiceAccount, namespace: name } } });
  } catch (error) {
    // Created since the cache was read (by this controller before a restart, or by someone else): the goal holds.
    if (!isAlreadyExists(error)) throw error;
  }
  return Action.awaitChange();
}

/** Actor `serviceaccount-controller`. Not part of `cluster()` unless asked for (`with: ["serviceaccount-controller"]`). */
export function serviceAccountController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return perNamespaceActor("serviceaccount-controller", options, { ...serviceAccountKind, name: defaultServiceAccount }, ensureDefault);
}
