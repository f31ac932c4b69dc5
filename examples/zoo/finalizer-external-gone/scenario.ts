// A deletion that hangs because the finalizer waits for an external resource that is already gone (a class every
// cloud-resource operator's tracker has: "stuck in Terminating after the resource was deleted manually").
import { defineActor, eventually, scenario, type WorldView } from "settle/sim";
import type { KubeObject } from "settle";
import { crdFor, namespace, namespaceObject, zooTiming } from "../common.ts";
import { bucketKind, runBucketController, type ObjectStore } from "./controller.ts";

const name = "logs";

function bucketObject(view: WorldView): KubeObject | undefined {
  return view.get({ ...bucketKind, namespace, name });
}

export default scenario({
  name: "zoo-finalizer-external-gone",
  description: "A finalizer that treats an already-deleted external bucket as an error keeps the object forever.",
  variants: {
    buggy: { expect: "finding", description: "NoSuchBucket on delete is retried forever" },
    fixed: { expect: "ok", description: "a bucket already gone counts as deleted" },
  },
  setup: () => [crdFor("Bucket", "buckets"), namespaceObject(), { ...bucketKind, metadata: { name, namespace }, spec: {} } as KubeObject],
  externals: () => ({ store: {} satisfies ObjectStore }),
  actors: ({ variant }) => [defineActor({ name: "bucket-controller", start: (ctx) => runBucketController(ctx, variant) })],
  workloads: {
    // An operator deletes the bucket by hand, then the user deletes the object.
    "bucket-deleted-first": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.external<ObjectStore>("store").write((buckets) => Object.fromEntries(Object.entries(buckets).filter(([key]) => key !== name)));
      await ctx.clock.sleep(1000);
      await ctx.client.delete({ ...bucketKind, namespace, name });
    },
    // The plain path: the controller deletes the bucket itself.
    "object-deleted": async (ctx) => {
      await ctx.clock.sleep(2000);
      await ctx.client.delete({ ...bucketKind, namespace, name });
    },
  },
  timing: zooTiming,
  summary: (view) => {
    const b = bucketObject(view);
    const state = b === undefined ? "gone" : b.metadata.deletionTimestamp !== undefined ? "terminating" : "live";
    return `object ${state}, buckets [${Object.keys(view.external<ObjectStore>("store")).join(", ")}]`;
  },
  properties: () => [
    eventually("a deleted Bucket object is removed", (view) => bucketObject(view)?.metadata.deletionTimestamp === undefined),
    eventually("no bucket outlives its object", (view) => Object.keys(view.external<ObjectStore>("store")).every((b) => bucketObject(view) !== undefined && b === name)),
  ],
});
