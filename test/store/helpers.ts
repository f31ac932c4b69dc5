// Fixtures shared by the store tests: objects of each kind, and an assertion that a failed write changed nothing.
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { isApiError } from "../../src/api/errors.ts";
import { createStore } from "../../src/store/index.ts";
import type { CreateStoreOptions } from "../../src/store/index.ts";
import type { Store } from "../../src/store/types.ts";

export const t0 = Date.UTC(2026, 0, 1, 12, 0, 0);

export function newStore(options: CreateStoreOptions = {}): Store {
  return createStore({ now: () => t0, ...options });
}

export function configMap(name: string, extra: Partial<KubeObject> & { labels?: Record<string, string>; namespace?: string } = {}): KubeObject {
  const { labels, namespace = "default", ...rest } = extra;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace, ...(labels === undefined ? {} : { labels }) },
    data: { key: "value" },
    ...rest,
  };
}

export function podSpec(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { containers: [{ name: "main", image: "busybox" }], ...extra };
}

export function pod(name: string, extra: { nodeName?: string; labels?: Record<string, string>; namespace?: string } = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: extra.namespace ?? "default", ...(extra.labels === undefined ? {} : { labels: extra.labels }) },
    spec: podSpec(extra.nodeName === undefined ? {} : { nodeName: extra.nodeName }),
  };
}

export function deployment(name: string, replicas = 1): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "default" },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: podSpec() },
    },
  };
}

export function ownedBy(owner: KubeObject, options: { blockOwnerDeletion?: boolean } = {}) {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    ...(options.blockOwnerDeletion === undefined ? {} : { blockOwnerDeletion: options.blockOwnerDeletion }),
  };
}

export function widgetCrd(extra: { scope?: string; status?: boolean; versions?: unknown[] } = {}): KubeObject {
  const schema = {
    type: "object",
    properties: {
      spec: {
        type: "object",
        properties: { size: { type: "integer" }, color: { type: "string", enum: ["red", "blue"] } },
        required: ["size"],
      },
      status: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
    },
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      scope: extra.scope ?? "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget", shortNames: ["wd"] },
      versions: extra.versions ?? [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: { openAPIV3Schema: schema },
          ...(extra.status === false ? {} : { subresources: { status: {} } }),
        },
      ],
    },
  };
}

export function widget(name: string, spec: Record<string, unknown> = { size: 1 }): KubeObject {
  return { apiVersion: "example.com/v1", kind: "Widget", metadata: { name, namespace: "default" }, spec };
}

/** Everything observable about a store's state: revision, compaction point, every object of every kind. */
export function snapshot(store: Store): unknown {
  const kinds = store.resources().map((r) => ({ apiVersion: r.group === "" ? r.version : `${r.group}/${r.version}`, kind: r.kind }));
  return {
    revision: store.revision,
    compacted: store.compactedRevision,
    history: store.history(store.compactedRevision).length,
    objects: kinds.map((k) => store.list(k).items),
  };
}

/** Runs `write`, which must fail with `code`/`reason`, and checks that the store is exactly as before. */
export function assertFails(store: Store, write: () => unknown, code: number, reason: string, message?: RegExp): void {
  const before = snapshot(store);
  let thrown: unknown;
  try {
    write();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown !== undefined, `expected ${code} ${reason}, but the write succeeded`);
  assert.ok(isApiError(thrown), `expected an ApiError, got ${String(thrown)}`);
  assert.equal(thrown.code, code, thrown.message);
  assert.equal(thrown.reason, reason, thrown.message);
  if (message !== undefined) assert.match(thrown.message, message);
  assert.deepEqual(snapshot(store), before, "a failed write changed nothing");
}

export function ref(object: KubeObject) {
  const { apiVersion, kind } = object;
  const { name, namespace } = object.metadata;
  return namespace === undefined ? { apiVersion, kind, name: name! } : { apiVersion, kind, namespace, name: name! };
}

/** Runs the collector until it has nothing left to do; returns what it did. */
export function drainGarbage(store: Store, stepsMax = 1000): string[] {
  const done: string[] = [];
  for (let i = 0; i < stepsMax; i++) {
    const step = store.collectGarbage();
    if (step === undefined) return done;
    done.push(step);
  }
  throw new Error(`garbage collection did not finish in ${stepsMax} steps: ${done.slice(-5).join("; ")}`);
}
