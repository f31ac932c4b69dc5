// Two controllers fighting over one field (the HPA-versus-operator fight every operator tracker has an issue
// about): the App says 2 replicas, the autoscaler says the load needs 4.
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import { crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { appKind, autoscaledReplicas, runAppOperator, runAutoscaler, workloadKind, type App, type Workload } from "./controllers.ts";

const name = "checkout";
const bounds = { min: 2, max: 6 };

function replicas(view: WorldView): number | undefined {
  return (view.get({ ...workloadKind, namespace, name }) as Workload | undefined)?.spec.replicas;
}

export default scenario({
  name: "zoo-fighting-controllers",
  description: "An operator and an autoscaler both write spec.replicas and undo each other forever.",
  variants: {
    buggy: { expect: "finding", description: "the operator writes replicas even when the App is autoscaled" },
    fixed: { expect: "ok", description: "the operator sets replicas only at create when the App is autoscaled" },
  },
  setup: () => [
    crdFor("App", "apps"),
    crdFor("Workload", "workloads"),
    namespaceObject(),
    { ...appKind, metadata: { name, namespace }, spec: { replicas: 2, autoscaling: bounds } } satisfies App,
  ],
  externals: () => ({ metrics: { load: 350 } }),
  actors: ({ variant }) => [
    defineActor({ name: "app-operator", start: (ctx) => runAppOperator(ctx, variant) }),
    defineActor({ name: "autoscaler", start: (ctx) => runAutoscaler(ctx) }),
  ],
  workloads: {
    "load-rises": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.external<{ load: number }>("metrics").write({ load: 520 });
    },
  },
  // A fixed run takes about 40 steps and a faulted one a few hundred: 2,000 steps is a fight, and a small bound
  // keeps the shrinking of the hot loop (every candidate runs to the bound) quick.
  timing: { ...zooTiming, stepsMax: 2000 },
  summary: (view) => `workload replicas ${String(replicas(view))}, load ${view.external<{ load: number }>("metrics").load}`,
  properties: () => [
    eventually("workload replicas == what the load asks", (view) => replicas(view) === autoscaledReplicas(view.external<{ load: number }>("metrics").load, bounds)),
  ],
});
