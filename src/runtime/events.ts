// An Event recorder: writes core `v1` `Event` objects about an object, and counts repeats of the same event
// (same object, type, reason and message) by patching `count` and `lastTimestamp` instead of creating a new
// Event, as client-go's event correlator does. Recording is best effort: an API failure is logged, never
// thrown, because a reconciler must not fail for want of an Event.
import { assert } from "../api/assert.ts";
import type { Client } from "../api/client.ts";
import type { Clock } from "../api/clock.ts";
import { formatMicroTime, formatTimestamp } from "../api/clock.ts";
import { isApiError, isNotFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import { silentLog } from "./log.ts";
import type { Log } from "./log.ts";

export type EventType = "Normal" | "Warning";

export interface EventOptions {
  type: EventType;
  /** UpperCamelCase, machine-readable: `Created`, `FailedSync`. */
  reason: string;
  message: string;
  /** What was done or failed: `Create`, `Reconcile`. Default: the reason. */
  action?: string;
  /** The part of the object the event is about, e.g. `spec.containers{app}`. Default: the whole object. */
  fieldPath?: string;
}

export interface EventRecorder {
  /** Resolves once written (or once a failure was logged); never rejects on an API error. */
  record(regarding: KubeObject, event: EventOptions): Promise<void>;
}

export interface EventRecorderOptions {
  client: Client;
  clock: Clock;
  /** The reporting component, e.g. the controller's name. */
  component: string;
  /** The node the component runs on (a kubelet's): the events' `source.host` and reporting instance. */
  host?: string;
  log?: Log;
  /** Distinct events remembered for counting repeats. Default 4096 (client-go's LRU size). */
  correlationEntriesMax?: number;
}

/** Message length cap, as the API server's Event validation (1 KiB note in events.k8s.io; we keep it short). */
const messageBytesMax = 1024;

interface Seen {
  name: string;
  namespace: string;
  count: number;
}

export function createEventRecorder(options: EventRecorderOptions): EventRecorder {
  assert(options.component.length > 0, "event-recorder-component-named");
  const log = options.log ?? silentLog;
  const entriesMax = options.correlationEntriesMax ?? 4096;
  assert(entriesMax > 0, "event-recorder-entries-positive");
  const seen = new Map<string, Seen>();
  let sequence = 0;

  function remember(key: string, entry: Seen): void {
    seen.delete(key);
    seen.set(key, entry);
    // Map iteration is insertion order, so the first key is the least recently used.
    if (seen.size > entriesMax) seen.delete(seen.keys().next().value as string);
  }

  async function create(regarding: KubeObject, event: EventOptions, key: string): Promise<void> {
    const nowMs = options.clock.now();
    const namespace = regarding.metadata.namespace ?? "default";
    // client-go names events `<object>.<unix nanos in hex>`; a sequence number keeps names unique at one instant.
    const name = `${regarding.metadata.name}.${(nowMs * 1000 + (sequence++ % 1000)).toString(16)}`;
    const object: KubeObject = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: regarding.metadata.name,
        ...(regarding.metadata.namespace === undefined ? {} : { namespace: regarding.metadata.namespace }),
        ...(regarding.metadata.uid === undefined ? {} : { uid: regarding.metadata.uid }),
        ...(regarding.metadata.resourceVersion === undefined ? {} : { resourceVersion: regarding.metadata.resourceVersion }),
        ...(event.fieldPath === undefined ? {} : { fieldPath: event.fieldPath }),
      },
      type: event.type,
      reason: event.reason,
      message: event.message.slice(0, messageBytesMax),
      action: event.action ?? event.reason,
      source: options.host === undefined ? { component: options.component } : { component: options.component, host: options.host },
      reportingComponent: options.component,
      reportingInstance: options.host ?? options.component,
      firstTimestamp: formatTimestamp(nowMs),
      lastTimestamp: formatTimestamp(nowMs),
      eventTime: formatMicroTime(nowMs),
      count: 1,
    };
    await options.client.create({ readOnly: true, object });
    remember(key, { name, namespace, count: 1 });
  }

  async function bump(entry: Seen, key: string): Promise<void> {
    const count = entry.count + 1;
    await options.client.patch({
      readOnly: true,
      apiVersion: "v1",
      kind: "Event",
      namespace: entry.namespace,
      name: entry.name,
      patchType: "merge",
      patch: { count, lastTimestamp: formatTimestamp(options.clock.now()) },
    });
    remember(key, { ...entry, count });
  }

  return {
    async record(regarding, event) {
      assert(regarding.metadata.name !== undefined, "event-regarding-named");
      assert(event.reason.length > 0, "event-reason-given");
      const key = JSON.stringify([regarding.kind, regarding.metadata.namespace, regarding.metadata.name, regarding.metadata.uid, event.fieldPath, event.type, event.reason, event.message]);
      const entry = seen.get(key);
      try {
        if (entry === undefined) return await create(regarding, event, key);
        try {
          await bump(entry, key);
        } catch (error) {
          // The Event expired (the API server keeps them an hour) or was deleted: start a new one.
          if (!isNotFound(error)) throw error;
          seen.delete(key);
          await create(regarding, event, key);
        }
      } catch (error) {
        if (!isApiError(error)) throw error;
        log("event not recorded", { reason: event.reason, error: error.message });
      }
    },
  };
}
