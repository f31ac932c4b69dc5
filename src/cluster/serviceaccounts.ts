// The service account controller: every namespace that is not being deleted has a ServiceAccount named `default`,
// created when the namespace appears and again when someone deletes it, as kube-controller-manager's
// serviceaccount controller does. Pods that name no service account run as `default`, `kubectl create token default`
// needs it, and charts that set `serviceAccount.create: false` rely on it.
import { isAlreadyExists } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ActorDefinition } from "../sim/types.ts";
import { defineActor } from "../sim/simulation.ts";
import { Action, defineController } from "../runtime/controller.ts";
import type { ReconcileContext } from "../runtime/controller.ts";
import { isTerminating, runControllers } from "./common.ts";
import type { WorkloadControllerOptions } from "./replicaset.ts";

export const namespaceKind = { apiVersion: "v1", kind: "Namespace" } as const;
export const serviceAccountKind = { apiVersion: "v1", kind: "ServiceAccount" } as const;
export const defaultServiceAccount = "default";

async function ensureDefault(namespace: KubeObject, ctx: ReconcileContext): Promise<Action> {
  const name = namespace.metadata.name ?? "";
  if (isTerminating(namespace) || (namespace.status as { phase?: string } | undefined)?.phase === "Terminating") return Action.awaitChange();
  if (ctx.lister(serviceAccountKind).getByName(defaultServiceAccount, name) !== undefined) return Action.awaitChange();
  try {
    await ctx.client.create({ object: { ...serviceAccountKind, metadata: { name: defaultServiceAccount, namespace: name } } });
  } catch (error) {
    // Created since the cache was read (by this controller before a restart, or by someone else): the goal holds.
    if (!isAlreadyExists(error)) throw error;
  }
  return Action.awaitChange();
}

/** Actor `serviceaccount-controller`. Not part of `cluster()` unless asked for (`with: ["serviceaccount-controller"]`). */
export function serviceAccountController(options: WorkloadControllerOptions = {}): ActorDefinition {
  return defineActor({
    name: "serviceaccount-controller",
    restartDelayMs: options.restartDelayMs ?? 1000,
    crashable: options.crashable ?? true,
    async start(ctx) {
      const controller = defineController<KubeObject>({
        name: "serviceaccount-controller",
        for: namespaceKind,
        // Only the `default` account matters: a deleted one brings its namespace back to the queue.
        watches: [{ ...serviceAccountKind, map: (account) => (account.metadata.name === defaultServiceAccount ? [{ name: account.metadata.namespace ?? "" }] : []) }],
        resyncMs: 0,
        reconcile: ensureDefault,
      });
      await runControllers(ctx, [controller]);
    },
  });
}
