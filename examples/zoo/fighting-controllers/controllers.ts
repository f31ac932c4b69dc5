// Two controllers that write one field: `spec.replicas` of a Deployment-like Workload.
//
// - the app operator renders an App into its Workload. buggy: it always writes `spec.replicas` from the App,
//   even when the App says an autoscaler owns it. fixed: with `spec.autoscaling` set it sets replicas only when
//   it creates the Workload and leaves the field alone after that (what the HPA documentation asks of anything
//   that manages a Deployment an HPA scales).
// - the autoscaler sets `spec.replicas` to what the load asks, within the App's bounds.
// Each write of one wakes the other, so the buggy pair rewrites the field forever.
import { Action, defineController, isAlreadyExists, runController, setControllerReference, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion } from "../common.ts";

export const appKind = { apiVersion, kind: "App" } as const;
export const workloadKind = { apiVersion, kind: "Workload" } as const;

export interface App extends KubeObject {
  spec: { replicas: number; autoscaling?: { min: number; max: number } };
}

export interface Workload extends KubeObject {
  spec: { replicas: number };
}

/** The replicas the current load asks for, in the App's bounds: the autoscaler's whole policy. */
export function autoscaledReplicas(load: number, bounds: { min: number; max: number }): number {
  return Math.min(bounds.max, Math.max(bounds.min, Math.ceil(load / 100)));
}

export async function runAppOperator(ctx: ActorContext, variant: string): Promise<void> {
  const controller = defineController<App>({
    name: "app-operator",
    for: appKind,
    owns: [workloadKind],
    async reconcile(app, rctx) {
      const ns = app.metadata.namespace!;
      const name = app.metadata.name!;
      const existing = rctx.lister<Workload>(workloadKind).getByName(name, ns);
      if (existing === undefined) {
        const workload = { ...workloadKind, metadata: { name, namespace: ns }, spec: { replicas: app.spec.replicas } };
        try {
          await rctx.client.create({ object: setControllerReference(app, workload) });
        } catch (error) {
          if (!isAlreadyExists(error)) throw error;
        }
        return Action.awaitChange();
      }
      const owned = variant === "fixed" && app.spec.autoscaling !== undefined;
      if (owned || existing.spec.replicas === app.spec.replicas) return Action.awaitChange();
      await rctx.client.patch({ ...workloadKind, namespace: ns, name, patchType: "merge", patch: { spec: { replicas: app.spec.replicas } } });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}

/** The autoscaler reads the load from an external metrics cell named `metrics` (`{ load }`). */
export async function runAutoscaler(ctx: ActorContext): Promise<void> {
  const metrics = ctx.external<{ load: number }>("metrics");
  const controller = defineController<Workload>({
    name: "autoscaler",
    for: workloadKind,
    watches: [{ ...appKind, map: (app) => [{ namespace: app.metadata.namespace!, name: app.metadata.name! }] }],
    async reconcile(workload, rctx) {
      const ns = workload.metadata.namespace!;
      const app = rctx.lister<App>(appKind).getByName(workload.metadata.name!, ns);
      if (app?.spec.autoscaling === undefined) return Action.awaitChange();
      const replicas = autoscaledReplicas((await metrics.read()).load, app.spec.autoscaling);
      if (workload.spec.replicas !== replicas) {
        await rctx.client.patch({ ...workloadKind, namespace: ns, name: workload.metadata.name!, patchType: "merge", patch: { spec: { replicas } } });
      }
      // Load changes outside Kubernetes: look again every 15 s, as the HPA does.
      return Action.requeueAfter(15_000);
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
