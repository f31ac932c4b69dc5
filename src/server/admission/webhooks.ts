// Admission webhooks, as kube-apiserver calls them: the MutatingWebhookConfigurations and
// ValidatingWebhookConfigurations in the store name HTTPS endpoints that see every matching CREATE, UPDATE and DELETE
// as an `admission.k8s.io/v1` AdmissionReview before it is stored. Mutating webhooks run one after the other (by
// configuration name, then in order) and may answer a JSONPatch; validating webhooks all see the result; any of them
// may deny the request (the client gets `admission webhook "NAME" denied the request: ...`). A webhook that cannot be
// called fails the request unless its `failurePolicy` is `Ignore`. Matching follows `rules` (operations, groups,
// versions, resources with `*` and subresources, scope), `namespaceSelector` and `objectSelector`; a dry run is
// refused by a webhook whose `sideEffects` are not `None`/`NoneOnDryRun`.
//
// What settle serve leaves out: webhooks named by `service` (nothing routes to a Service's pods here: give
// `clientConfig.url`, as envtest's users do), `matchConditions` (CEL; the webhook is called as if they held),
// reinvocation (`reinvocationPolicy: IfNeeded`), conversion of a built-in kind's object to the version a rule names
// under `matchPolicy: Equivalent` (a custom resource's is converted, through its CRD's webhook when it has one), and
// the scale subresource.
import { randomUUID } from "node:crypto";
import { ApiError, badRequest } from "../../api/errors.ts";
import type { StatusReason } from "../../api/errors.ts";
import { isRecord } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import { applyJsonPatch } from "../../api/patch.ts";
import type { ResourceType } from "../../api/resources.ts";
import type { LabelSelector } from "../../api/object.ts";
import { labelSelectorFromSpec, matchesLabels } from "../../api/selectors.ts";
import type { Store } from "../../store/index.ts";
import { storeBehind } from "../conversion.ts";
import { convertedTo } from "../crd-conversion.ts";
import { isBuiltinKind } from "../../store/index.ts";
import { postReview, type WebhookClientConfig } from "./webhook-client.ts";

export type Operation = "CREATE" | "UPDATE" | "DELETE";

const mutatingKind = { apiVersion: "admissionregistration.k8s.io/v1", kind: "MutatingWebhookConfiguration" } as const;
const validatingKind = { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration" } as const;

interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

interface Webhook {
  name: string;
  clientConfig?: WebhookClientConfig;
  rules?: Rule[];
  failurePolicy?: string;
  matchPolicy?: string;
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  sideEffects?: string;
  timeoutSeconds?: number;
}

/** What one write asks admission about. */
export interface AdmissionAttributes {
  operation: Operation;
  resource: ResourceType;
  subresource: string | undefined;
  namespace: string | undefined;
  name: string;
  /** The object as it would be stored (undefined for DELETE). */
  object: KubeObject | undefined;
  /** The stored object before the write (undefined for CREATE). */
  oldObject: KubeObject | undefined;
  dryRun: boolean;
  /** `fieldManager` and the like, as the write's options (CreateOptions, UpdateOptions, DeleteOptions). */
  options: Record<string, unknown>;
  userInfo: { username: string; groups: string[] };
  /** The webhooks' warnings are added here, for the response's `Warning` headers. */
  warnings: string[];
}

/** The webhooks of one store, read again whenever a configuration changes. */
export class Webhooks {
  #configurations: { mutating: Webhook[]; validating: Webhook[] } | undefined;

  constructor(private readonly store: Store) {
    // The watches live as long as the store, as this object does (one per store, see `webhooksOf`).
    const forget = () => (this.#configurations = undefined);
    for (const kind of [mutatingKind, validatingKind]) store.watch({ ...kind, fromRevision: store.revision }, forget);
  }

  #current(): { mutating: Webhook[]; validating: Webhook[] } {
    if (this.#configurations !== undefined) return this.#configurations;
    const read = (kind: typeof mutatingKind | typeof validatingKind) =>
      (this.store.list({ ...kind }).items as Array<KubeObject & { webhooks?: Webhook[] }>)
        .slice()
        .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""))
        .flatMap((configuration) => configuration.webhooks ?? []);
    this.#configurations = { mutating: read(mutatingKind), validating: read(validatingKind) };
    return this.#configurations;
  }

  /** Whether any webhook's rules match this kind of write: the cheap question every write asks first. */
  concerns(operation: Operation, resource: ResourceType, subresource: string | undefined): boolean {
    const { mutating, validating } = this.#current();
    if (mutating.length === 0 && validating.length === 0) return false;
    return [...mutating, ...validating].some((hook) => ruleMatches(hook, operation, resource, subresource));
  }

  /**
   * Runs the mutating webhooks over `a.object` and returns the object they leave (the same object when none
   * patched it); throws the Status of a denial or of a failed call.
   */
  async mutate(a: AdmissionAttributes): Promise<KubeObject | undefined> {
    let object = a.object;
    for (const hook of this.#current().mutating) {
      if (!this.#matches(hook, { ...a, object })) continue;
      const called = await this.#call(hook, { ...a, object });
      if (called === undefined || a.operation === "DELETE" || object === undefined || called.response.patch === undefined) continue;
      // A patch applies to the object as the webhook saw it, which is then converted back to the request's version.
      const result = patched(hook, called.seen?.object ?? object, called.response);
      object = called.seen === undefined ? result : await convertedTo(this.store, called.seen.resource, result, a.resource.version);
    }
    return object;
  }

  /** Runs the validating webhooks, all at once; throws the first denial or failed call, in webhook order. */
  async validate(a: AdmissionAttributes): Promise<void> {
    const hooks = this.#current().validating.filter((hook) => this.#matches(hook, a));
    const outcomes = await Promise.allSettled(hooks.map((hook) => this.#call(hook, a)));
    for (const outcome of outcomes) if (outcome.status === "rejected") throw outcome.reason;
  }

  #matches(hook: Webhook, a: AdmissionAttributes): boolean {
    if (!ruleMatches(hook, a.operation, a.resource, a.subresource)) return false;
    if (!selects(hook.objectSelector, a.object) && !selects(hook.objectSelector, a.oldObject)) return false;
    if (hook.namespaceSelector === undefined || Object.keys(hook.namespaceSelector).length === 0) return true;
    // A namespaced object is matched by its namespace's labels; a Namespace by its own; other cluster objects always.
    let namespace: KubeObject | undefined;
    if (a.resource.kind === "Namespace" && a.resource.group === "") namespace = a.object ?? a.oldObject;
    else if (a.resource.namespaced && a.namespace !== undefined) {
      namespace = this.store.list({ apiVersion: "v1", kind: "Namespace", fieldSelector: `metadata.name=${a.namespace}` }).items[0];
    } else return true;
    return selects(hook.namespaceSelector, namespace ?? { apiVersion: "v1", kind: "Namespace", metadata: { name: a.namespace ?? "" } });
  }

  /**
   * One call: the webhook's response when it allowed the request, undefined when it failed and may be ignored. When
   * the webhook's rules name another version of a custom resource (`matchPolicy: Equivalent`), it sees the objects
   * converted to that version (`seen`), as kube-apiserver converts them.
   */
  async #call(hook: Webhook, a: AdmissionAttributes): Promise<{ response: Response; seen: AdmissionAttributes | undefined } | undefined> {
    if (a.dryRun && hook.sideEffects !== "None" && hook.sideEffects !== "NoneOnDryRun") {
      throw badRequest(`admission webhook "${hook.name}" does not support dry run`);
    }
    const version = seenVersion(hook, a.operation, a.resource, a.subresource);
    let seen: AdmissionAttributes | undefined;
    if (version !== a.resource.version && !isBuiltinKind(a.resource)) {
      const resource = { ...a.resource, version };
      const object = a.object === undefined ? undefined : await convertedTo(this.store, a.resource, a.object, version);
      const oldObject = a.oldObject === undefined ? undefined : await convertedTo(this.store, a.resource, a.oldObject, version);
      seen = { ...a, resource, object, oldObject };
    }
    const uid = randomUUID();
    let response: Response;
    try {
      response = await postReview(hook.clientConfig, hook.timeoutSeconds ?? 10, review(uid, seen ?? a, a.resource), "AdmissionReview", responseOf).catch((error: Error) => {
        throw new Error(`failed to call webhook: ${error.message}`);
      });
      if (response.uid !== uid) throw new Error(`expected response.uid="${uid}", got "${String(response.uid)}"`);
    } catch (error) {
      if (hook.failurePolicy === "Ignore") return undefined;
      const message = error instanceof Error ? error.message : String(error);
      throw new ApiError("InternalError", 500, `Internal error occurred: failed calling webhook "${hook.name}": ${message}`);
    }
    if (Array.isArray(response.warnings)) a.warnings.push(...response.warnings.filter((w): w is string => typeof w === "string"));
    if (response.allowed !== true) throw denial(hook, response.status);
    return { response, seen };
  }
}

interface Response {
  uid?: unknown;
  allowed?: unknown;
  status?: { code?: number; message?: string; reason?: string };
  patch?: string;
  patchType?: string;
  warnings?: string[];
}

function ruleMatches(hook: Webhook, operation: Operation, resource: ResourceType, subresource: string | undefined): boolean {
  const has = (list: readonly string[] | undefined, value: string) => (list ?? []).some((entry) => entry === "*" || entry === value);
  return (hook.rules ?? []).some((rule) => {
    if (!has(rule.operations, operation) || !has(rule.apiGroups, resource.group)) return false;
    // Under `Equivalent` (the default) a rule naming another version of the same resource matches as well.
    const versions = rule.apiVersions ?? [];
    if (versions.length === 0 || (hook.matchPolicy === "Exact" && !has(versions, resource.version))) return false;
    const scope = rule.scope ?? "*";
    if ((scope === "Cluster" && resource.namespaced) || (scope === "Namespaced" && !resource.namespaced)) return false;
    return (rule.resources ?? []).some((entry) => {
      const [plural, sub] = entry.split("/", 2) as [string, string | undefined];
      if (plural !== "*" && plural !== resource.plural) return false;
      return subresource === undefined ? sub === undefined : sub === "*" || sub === subresource;
    });
  });
}

/**
 * The version of the resource a matching webhook sees: the request's when a matching rule names it (or `*`), else,
 * under `Equivalent`, the first version a matching rule names.
 */
function seenVersion(hook: Webhook, operation: Operation, resource: ResourceType, subresource: string | undefined): string {
  const named: string[] = [];
  for (const rule of hook.rules ?? []) {
    if (!ruleMatches({ ...hook, rules: [rule] }, operation, resource, subresource)) continue;
    const versions = rule.apiVersions ?? [];
    if (versions.includes("*") || versions.includes(resource.version)) return resource.version;
    named.push(...versions);
  }
  return named[0] ?? resource.version;
}

function selects(selector: LabelSelector | undefined, object: KubeObject | undefined): boolean {
  if (selector === undefined || Object.keys(selector).length === 0) return true;
  if (object === undefined) return false;
  return matchesLabels(labelSelectorFromSpec(selector), object.metadata.labels ?? {});
}

function review(uid: string, a: AdmissionAttributes, requested: ResourceType): Record<string, unknown> {
  const { group, version, kind, plural } = a.resource;
  const optionsKind = a.operation === "CREATE" ? "CreateOptions" : a.operation === "UPDATE" ? "UpdateOptions" : "DeleteOptions";
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group, version, kind },
      resource: { group, version, resource: plural },
      ...(a.subresource === undefined ? {} : { subResource: a.subresource, requestSubResource: a.subresource }),
      requestKind: { group, version: requested.version, kind },
      requestResource: { group, version: requested.version, resource: plural },
      name: a.name,
      ...(a.namespace === undefined ? {} : { namespace: a.namespace }),
      operation: a.operation,
      userInfo: a.userInfo,
      object: a.object ?? null,
      oldObject: a.oldObject ?? null,
      dryRun: a.dryRun,
      options: { apiVersion: "meta.k8s.io/v1", kind: optionsKind, ...a.options },
    },
  };
}

function responseOf(body: unknown): Response {
  if (!isRecord(body) || body.kind !== "AdmissionReview" || !isRecord(body.response)) throw new Error("expected an AdmissionReview with a response");
  return body.response as Response;
}

/** The Status a denial answers, in the real server's words: at least 400, the webhook named. */
function denial(hook: Webhook, status: Response["status"]): ApiError {
  const deniedBy = `admission webhook "${hook.name}" denied the request`;
  const code = typeof status?.code === "number" && status.code >= 400 ? status.code : 400;
  const message = status?.message ? `${deniedBy}: ${status.message}` : status?.reason ? `${deniedBy}: ${status.reason}` : `${deniedBy} without explanation`;
  // A webhook may give any reason, or none, as the real server passes it on.
  return new ApiError((status?.reason ?? "") as StatusReason, code, message);
}

/** The object after a mutating webhook's JSONPatch. */
function patched(hook: Webhook, object: KubeObject, response: Response): KubeObject {
  if (response.patchType !== "JSONPatch") {
    throw new ApiError("InternalError", 500, `Internal error occurred: failed calling webhook "${hook.name}": unsupported patch type "${String(response.patchType)}"`);
  }
  let operations: unknown;
  try {
    operations = JSON.parse(Buffer.from(response.patch ?? "", "base64").toString("utf8"));
  } catch {
    throw new ApiError("InternalError", 500, `Internal error occurred: failed calling webhook "${hook.name}": the patch is not valid JSON`);
  }
  try {
    return applyJsonPatch(object, operations) as KubeObject;
  } catch (error) {
    throw new ApiError("InternalError", 500, `Internal error occurred: failed calling webhook "${hook.name}": the patch cannot apply: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const webhooksByStore = new WeakMap<Store, Webhooks>();

/** The webhooks of a store, made on first use. */
export function webhooksOf(viewed: Store): Webhooks {
  // A converting view (autoscaling/v1 HPAs) is made per request: the webhooks belong to the store behind it.
  const store = storeBehind(viewed);
  let webhooks = webhooksByStore.get(store);
  if (webhooks === undefined) {
    webhooks = new Webhooks(store);
    webhooksByStore.set(store, webhooks);
  }
  return webhooks;
}

/** A write through admission: the store call, as a dry run or for real, and how to store what webhooks changed. */
export interface AdmittedWrite {
  operation: Operation;
  /** The stored object before the write (undefined for a create). */
  old: KubeObject | undefined;
  write(dryRun: boolean): KubeObject;
  /** Stores `object`, what the mutating webhooks made of the dry run's result, instead of the write. */
  persist(object: KubeObject): KubeObject;
}

/**
 * Runs a write that some webhook's rules concern (`Webhooks.concerns`: the caller asks first, so that other writes
 * make nothing for admission) through the store's webhooks. The write runs as a dry run first, so that webhooks see the object as it would be stored; the mutating webhooks' result is stored in its
 * place (`persist`), or, when they changed nothing, the write runs for real; the validating webhooks see the final
 * object before anything is stored.
 */
export async function admitWrite(store: Store, a: Omit<AdmissionAttributes, "object" | "oldObject" | "operation">, w: AdmittedWrite): Promise<KubeObject> {
  const webhooks = webhooksOf(store);
  const candidate = w.operation === "DELETE" ? undefined : w.write(true);
  const attributes: AdmissionAttributes = { ...a, operation: w.operation, object: candidate, oldObject: w.old };
  const mutated = await webhooks.mutate(attributes);
  await webhooks.validate({ ...attributes, object: mutated });
  // A dry run stores nothing: its answer is what would have been stored.
  if (a.dryRun) return mutated ?? w.write(true);
  if (mutated === candidate || mutated === undefined) return w.write(false);
  return w.persist(asWrite(mutated, w.old));
}

/**
 * The mutated dry-run result as a write: a create leaves out what the store sets (so it sets them afresh); an update
 * names the version it was computed from, so that a write in between is a 409 rather than lost.
 */
function asWrite(object: KubeObject, old: KubeObject | undefined): KubeObject {
  if (old !== undefined) return { ...object, metadata: { ...object.metadata, resourceVersion: old.metadata.resourceVersion } };
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _created, generation: _generation, ...metadata } = object.metadata;
  return { ...object, metadata };
}
