// A Bucket controller: each Bucket object stands for a bucket in an object store outside Kubernetes (the
// external cell `store`, bucket name -> owner). A finalizer keeps the object until the bucket is deleted.
//
// - buggy: on deletion it asks the store to delete the bucket and treats "no such bucket" as a failure to
//   retry. A bucket already gone (deleted by hand, expired by a lifecycle rule) can never be deleted again, so
//   the finalizer stays and the object hangs in Terminating forever.
// - fixed: a bucket that is already gone is what deletion wanted: remove the finalizer.
import { Action, defineController, runController, type KubeObject } from "settle";
import type { ActorContext } from "settle/sim";
import { apiVersion } from "../common.ts";

export const bucketKind = { apiVersion, kind: "Bucket" } as const;
export const finalizer = "zoo.settle.dev/delete-bucket";

export type ObjectStore = Record<string, string>;

export async function runBucketController(ctx: ActorContext, variant: string): Promise<void> {
  const store = ctx.external<ObjectStore>("store");
  const controller = defineController<KubeObject>({
    name: "bucket",
    for: bucketKind,
    async reconcile(bucket, rctx) {
      const name = bucket.metadata.name!;
      const ref = { ...bucketKind, namespace: bucket.metadata.namespace!, name };
      const finalizers = bucket.metadata.finalizers ?? [];
      if (bucket.metadata.deletionTimestamp === undefined) {
        if (!finalizers.includes(finalizer)) {
          await rctx.client.patch({ ...ref, patchType: "merge", patch: { metadata: { finalizers: [...finalizers, finalizer] } } });
        }
        // The finalizer is on before the bucket exists, so no bucket can outlive its object.
        await store.write((buckets) => ({ ...buckets, [name]: bucket.metadata.uid! }));
        return Action.awaitChange();
      }
      if (!finalizers.includes(finalizer)) return Action.awaitChange();
      const buckets = await store.read();
      if (!(name in buckets)) {
        // The bug: the store's "no such bucket" answer is handled like any other failure.
        if (variant === "buggy") throw new Error(`delete bucket ${name}: NoSuchBucket`);
      } else {
        await store.write((current) => Object.fromEntries(Object.entries(current).filter(([key]) => key !== name)));
      }
      const rest = finalizers.filter((f) => f !== finalizer);
      await rctx.client.patch({ ...ref, patchType: "json", patch: [{ op: "test", path: "/metadata/finalizers", value: finalizers }, { op: "replace", path: "/metadata/finalizers", value: rest }] });
      return Action.awaitChange();
    },
  });
  await runController(controller, { client: ctx.client, clock: ctx.clock, log: ctx.log }).done;
}
