// CRUD on collections, items and the status subresource, for built-in and custom kinds: the HTTP side of the
// store's methods, with the request checks kube-apiserver makes before its registry sees the object.
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { assert } from "../api/assert.ts";
import type { DeleteOptions, PatchOptions, PropagationPolicy, WriteOptions } from "../api/client.ts";
import { ApiError, badRequest, conflict, invalid, isNotFound, notFound } from "../api/errors.ts";
import type { KubeObject, ObjectRef } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { Clock } from "../api/clock.ts";
import type { Store, StoreListOptions } from "../store/index.ts";
import { apiVersionOf, isBuiltinKind } from "../store/index.ts";
import { applyJsonPatch, applyMergePatch } from "../api/patch.ts";
import { isRecord } from "../api/json.ts";
import { handOver } from "../store/util.ts";
import { applySteps, checkApplyRequest, computeApply, decoratedWith, managerOf, recordUpdate, requestedEntries } from "./apply/apply.ts";
import type { ApplyRequest, ApplyResult, ManagedFields } from "./apply/apply.ts";
import { decodeBody, mediaType, parseJson, parseYamlBody, prefersProtobuf, sendJson, sendJsonText, sendProtobuf } from "./http.ts";
import { encodeProtobuf, messageFor } from "./encoding/protobuf.ts";
import { pathNotFound } from "./routes.ts";
import type { ResourceRoute } from "./routes.ts";
import { schemaOf } from "./schema.ts";
import { includeObjectOf } from "./encoding/table.ts";
import type { Tables } from "./encoding/table.ts";
import { applyStrategicPatch } from "./strategic.ts";
import { duplicateFields } from "./duplicate-fields.ts";
import { customUnknownFields } from "./unknown-fields.ts";
import { patchScale, replicasFrom, scaleOf, withReplicas } from "./scale.ts";
import { messageOfKind, wireFields } from "./encoding/wire.ts";
import { allowed, forbidden, isMaster, requestUser } from "./auth/rbac.ts";
import { confirmNoEscalation, isRbacWrite } from "./auth/escalation.ts";
import { admitWrite, webhooksOf } from "./admission/webhooks.ts";
import type { Operation } from "./admission/webhooks.ts";

export interface ResourceRequest {
  store: Store;
  route: ResourceRoute;
  resource: ResourceType;
  query: URLSearchParams;
  req: IncomingMessage;
  res: ServerResponse;
  /** The request body, read under the size bound. */
  body(): Promise<Buffer>;
  /** Called after every successful write: garbage collection may have work. */
  wrote(): void;
  /** Field ownership beside the store (server-side apply). */
  managed: ManagedFields;
  /** Set when the client asked for Tables (`as=Table`): reads answer with them. */
  tables: Tables | undefined;
  /** A stale-read fault: this `resourceVersion=0` list or watch is served this many revisions behind. */
  lagRevisions?: number;
  /**
   * Resolves once the store has reached `revision`: at once when it has, otherwise after waiting for it on the
   * server's clock, as long as kube-apiserver's watch cache waits (3 s); then rejects with 504 Too large resource
   * version. Other requests go on meanwhile.
   */
  untilRevision(revision: number): Promise<void>;
  /**
   * Lets other work run (the next turn of the event loop) between phases of a long request; undefined where a
   * request must run to its end at once (the simulator's in-process server, whose steps are the requests).
   */
  pause?: (() => Promise<void>) | undefined;
}

/** How long a read at a revision the store has not reached waits for it: kube-apiserver's watch cache's blockTimeout. */
export const revisionWaitMsDefault = 3000;

/** 504 for a revision the store did not reach in time, as kube-apiserver's storage words it (a Timeout StatusError). */
export function tooLargeResourceVersion(revision: number, current: number): ApiError {
  return new ApiError("Timeout", 504, `Timeout: Too large resource version: ${revision}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
}

/** How often a waiting read looks at the store's revision again. */
const revisionPollMs = 10;

/**
 * Waits until `store` reaches `revision`, for at most `waitMs` of `clock`'s time, looking every few milliseconds (the
 * store has no revision event to wait on, and the wait is rare and short); `signal` ends it early (a client gone).
 */
export async function waitForRevision(store: Store, clock: Clock, revision: number, waitMs: number, signal?: AbortSignal): Promise<void> {
  const startMs = clock.now();
  while (store.revision < revision) {
    const leftMs = startMs + waitMs - clock.now();
    if (leftMs <= 0 || signal?.aborted === true) throw tooLargeResourceVersion(revision, store.revision);
    await clock.sleep(Math.min(revisionPollMs, leftMs), signal === undefined ? undefined : { signal }).catch(() => undefined);
  }
}

/** The revision named by a `resourceVersion` parameter (absent, empty and "0" are none); 400 when it is not a number. */
function revisionParam(r: ResourceRequest): number | undefined {
  const rv = r.query.get("resourceVersion");
  if (rv === null || rv === "" || rv === "0") return undefined;
  if (!/^\d+$/.test(rv) || !Number.isSafeInteger(Number(rv))) throw badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  return Number(rv);
}

/** An integer query parameter, or undefined when absent; 400 when it is not a non-negative integer. */
export function intParam(query: URLSearchParams, name: string): number | undefined {
  const text = query.get(name);
  if (text === null || text === "") return undefined;
  const n = Number(text);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(n)) throw badRequest(`invalid value for ${name}: ${JSON.stringify(text)}: not an integer`);
  return n;
}

const goTrue = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const goFalse = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * A boolean query parameter read as Go's strconv.ParseBool reads it (`True`, `t`, `1`... as Python's client and
 * others send them); absent or empty is false, anything else a 400.
 */
export function boolParam(query: URLSearchParams, name: string): boolean {
  const text = query.get(name);
  if (text === null || text === "" || goFalse.has(text)) return false;
  if (goTrue.has(text)) return true;
  throw badRequest(`invalid value for ${name}: strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`);
}

function dryRunOf(query: URLSearchParams, fromBody?: unknown): boolean {
  const values: unknown[] = query.getAll("dryRun");
  if (Array.isArray(fromBody)) values.push(...fromBody);
  for (const value of values) {
    if (value !== "All") throw invalid("DeleteOptions", "", [{ field: "dryRun", type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(value)}: supported values: "All"` }]);
  }
  return values.length > 0;
}

function writeOptions(query: URLSearchParams): WriteOptions {
  const fieldManager = query.get("fieldManager");
  const validation = query.get("fieldValidation");
  if (validation !== null && !["", "Ignore", "Warn", "Strict"].includes(validation)) {
    throw badRequest(`fieldValidation must be one of "Ignore", "Warn" or "Strict", got ${JSON.stringify(validation)}`);
  }
  const options: WriteOptions = { dryRun: dryRunOf(query) };
  if (fieldManager !== null && fieldManager !== "") options.fieldManager = fieldManager;
  return options;
}

function kindRef(resource: ResourceType): { apiVersion: string; kind: string } {
  return { apiVersion: apiVersionOf(resource), kind: resource.kind };
}

function refOf(r: ResourceRequest): ObjectRef {
  const name = r.route.name ?? "";
  const apiVersion = apiVersionOf(r.resource);
  if (r.resource.namespaced) return { apiVersion, kind: r.resource.kind, namespace: r.route.namespace ?? "", name };
  return { apiVersion, kind: r.resource.kind, name };
}

/** Top-level fields of the built-in kinds besides apiVersion, kind and metadata (others are dropped, or 400 if Strict). */
const eventFields = ["involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type", "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"];
const topLevelFields: Readonly<Record<string, readonly string[]>> = {
  "/ConfigMap": ["data", "binaryData", "immutable"],
  "/Secret": ["data", "stringData", "type", "immutable"],
  "/ServiceAccount": ["secrets", "imagePullSecrets", "automountServiceAccountToken"],
  "/Event": eventFields,
  "coordination.k8s.io/Lease": ["spec"],
};
const commonFields = new Set(["apiVersion", "kind", "metadata"]);

/** The top-level fields of a built-in kind as its wire definition lists them. */
function wireTopLevel(resource: ResourceType): string[] | undefined {
  const message = messageOfKind(resource.group, resource.version, resource.kind);
  return message === undefined ? undefined : wireFields(message).map((f) => f.name);
}

/**
 * Unknown top-level fields of a built-in kind, as kube-apiserver's decoder meets them: reported (`reportFields`), then
 * dropped. Custom kinds are pruned by the store.
 */
function unknownFields(r: ResourceRequest, keys: readonly string[], duplicates: readonly string[] = []): string[] {
  const known = knownTopLevelOf(r.resource);
  const unknown = known === undefined ? [] : keys.filter((k) => !known.has(k));
  reportFields(r, [...unknown.map((k) => `unknown field ${JSON.stringify(k)}`), ...duplicates.map((k) => `duplicate field ${JSON.stringify(k)}`)]);
  return unknown;
}

/**
 * What the decoder found wrong with a body's fields, as `fieldValidation` asks: with `Strict` a 400 listing them all,
 * with `Warn` (the default) a `Warning: 299 - "..."` header each, with `Ignore` nothing.
 */
function reportFields(r: ResourceRequest, problems: readonly string[]): void {
  if (problems.length === 0) return;
  const validation = r.query.get("fieldValidation");
  if (validation === "Ignore") return;
  const kind = r.resource.kind;
  if (validation === "Strict") throw badRequest(`${kind} in version ${JSON.stringify(r.resource.version)} cannot be handled as a ${kind}: strict decoding error: ${problems.join(", ")}`);
  for (const problem of problems) r.res.appendHeader("Warning", `299 - ${JSON.stringify(problem)}`);
}

/** The body of a create or update, decoded, with the fields a JSON body repeats (unless they are to be ignored). */
async function decodedBody(r: ResourceRequest): Promise<{ decoded: unknown; duplicates: string[] }> {
  const body = await r.body();
  const contentType = r.req.headers["content-type"];
  const decoded = decodeBody(contentType, body);
  const json = mediaType(contentType) === "" || mediaType(contentType) === "application/json";
  return { decoded, duplicates: json ? duplicatesOf(r, body) : [] };
}

/** The fields a JSON body repeats, unless the request asks to ignore such things (`fieldValidation=Ignore`). */
function duplicatesOf(r: ResourceRequest, body: Buffer): string[] {
  return r.query.get("fieldValidation") === "Ignore" ? [] : duplicateFields(body.toString("utf8"));
}

const knownTopLevel = new WeakMap<ResourceType, ReadonlySet<string> | null>();

/** The top-level fields of a built-in kind (the common ones included), looked up once per resource type; custom kinds have none. */
function knownTopLevelOf(resource: ResourceType): ReadonlySet<string> | undefined {
  let known = knownTopLevel.get(resource);
  if (known === undefined) {
    const own = isBuiltinKind(resource) ? (topLevelFields[`${resource.group}/${resource.kind}`] ?? wireTopLevel(resource) ?? ["spec", "status"]) : undefined;
    known = own === undefined ? null : new Set([...commonFields, ...own]);
    knownTopLevel.set(resource, known);
  }
  return known ?? undefined;
}

function dropUnknown(r: ResourceRequest, object: Record<string, unknown>, duplicates: readonly string[] = []): void {
  if (!isBuiltinKind(r.resource)) {
    // A custom kind: the store prunes what its schema does not declare; what it will prune is reported here.
    const unknown = r.query.get("fieldValidation") === "Ignore" ? [] : customUnknownFields(r.store, r.resource, object as unknown as KubeObject);
    return reportFields(r, [...unknown.map((k) => `unknown field ${JSON.stringify(k)}`), ...duplicates.map((k) => `duplicate field ${JSON.stringify(k)}`)]);
  }
  for (const key of unknownFields(r, Object.keys(object), duplicates)) delete object[key];
}

/**
 * The body as an object of the route's kind: apiVersion and kind default to the route's, and must match it. The
 * fields it repeats (`duplicates`) and those the kind lacks are reported as `fieldValidation` asks.
 */
function objectFrom(r: ResourceRequest, decoded: unknown, duplicates: readonly string[] = []): KubeObject {
  if (typeof decoded !== "object" || decoded === null || Array.isArray(decoded)) throw badRequest("the request body must be a JSON object");
  const object = { ...(decoded as Record<string, unknown>) };
  const expected = formatApiVersion(r.resource);
  if (object.apiVersion === undefined || object.apiVersion === "") object.apiVersion = expected;
  if (object.kind === undefined || object.kind === "") object.kind = r.resource.kind;
  if (object.apiVersion !== expected) {
    throw badRequest(`the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${expected})`);
  }
  if (object.kind !== r.resource.kind) throw badRequest(`the kind in the data (${String(object.kind)}) does not match the expected kind (${r.resource.kind})`);
  dropUnknown(r, object, duplicates);
  const meta = object.metadata;
  if (meta === undefined || meta === null) object.metadata = {};
  else if (typeof meta !== "object" || Array.isArray(meta)) throw badRequest("metadata must be a JSON object");
  else object.metadata = { ...(meta as Record<string, unknown>) };
  const metadata = object.metadata as Record<string, unknown>;
  if (r.resource.namespaced) {
    const namespace = r.route.namespace ?? "";
    if (metadata.namespace === undefined || metadata.namespace === "") metadata.namespace = namespace;
    else if (metadata.namespace !== namespace) {
      throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
  }
  return object as KubeObject;
}

/** Not async (see `#dispatch`): a read answers at once; a write returns its handler's promise. */
export function handleResource(r: ResourceRequest): Promise<void> | void {
  const { route, resource } = r;
  const method = r.req.method ?? "GET";
  if (route.namespace !== undefined && !resource.namespaced) throw pathNotFound();
  if (route.subresource === "scale" && resource.scaleSubresource === true && route.name !== undefined) return handleScale(r, method);
  if (route.subresource !== undefined && !(route.subresource === "status" && resource.statusSubresource)) throw pathNotFound();
  if (route.name === undefined) {
    if (method === "GET") return handleList(r);
    if (method === "POST") return handleCreate(r);
    if (method === "DELETE") return handleDeleteCollection(r);
  } else {
    if (method === "GET") return handleGet(r);
    if (method === "PUT") return handleUpdate(r);
    if (method === "PATCH") return handlePatch(r);
    if (method === "DELETE" && route.subresource === undefined) return handleDelete(r);
  }
  throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${method} ${resource.plural})`);
}

export function listOptions(r: ResourceRequest): StoreListOptions {
  const q = r.query;
  const options: StoreListOptions = { ...kindRef(r.resource) };
  if (r.route.namespace !== undefined) options.namespace = r.route.namespace;
  const labelSelector = q.get("labelSelector");
  const fieldSelector = q.get("fieldSelector");
  if (labelSelector !== null) options.labelSelector = labelSelector;
  if (fieldSelector !== null) options.fieldSelector = fieldSelector;
  return options;
}

/**
 * The revision a list reads: the latest, or an exact older one (`resourceVersionMatch=Exact`). Either way the store
 * must have reached the one asked for first (`untilRevision`).
 */
async function listRevision(r: ResourceRequest, continued: boolean): Promise<number | undefined> {
  const match = r.query.get("resourceVersionMatch");
  if (match !== null && match !== "" && match !== "Exact" && match !== "NotOlderThan") {
    throw badRequest(`resourceVersionMatch: unsupported value ${JSON.stringify(match)}: supported values: "Exact", "NotOlderThan"`);
  }
  const revision = revisionParam(r);
  if (revision === undefined) {
    if (match === "Exact") throw badRequest("resourceVersionMatch: Exact requires a resourceVersion other than 0");
    return undefined;
  }
  // A continue token carries its own revision: kube-apiserver's storage refuses a second one ("0" aside).
  if (continued) throw badRequest("specifying resource version is not allowed when using continue");
  if (revision > r.store.revision) await r.untilRevision(revision);
  return match === "Exact" ? revision : undefined;
}

async function handleList(r: ResourceRequest): Promise<void> {
  const options = listOptions(r);
  const limit = intParam(r.query, "limit");
  if (limit !== undefined && limit > 0) options.limit = limit;
  const token = r.query.get("continue");
  if (token !== null && token !== "") options.continue = token;
  const revision = await listRevision(r, options.continue !== undefined);
  if (revision !== undefined) options.revision = revision;
  else if (r.lagRevisions !== undefined && options.continue === undefined) options.revision = staleRevision(r.store, r.lagRevisions);
  const list = r.store.list(options);
  if (r.tables !== undefined) return sendJson(r.res, 200, r.tables.table(r.resource, list.items, includeObjectOf(r.query), list.metadata));
  sendObject(r, 200, list);
}

/** The revision a lagging watch cache serves: `lagRevisions` behind, never before the compaction point. */
export function staleRevision(store: Store, lagRevisions: number): number {
  return Math.max(store.compactedRevision, 1, store.revision - lagRevisions);
}

function handleGet(r: ResourceRequest): Promise<void> | void {
  // A read at a resourceVersion is served once the store has reached it, as from kube-apiserver's watch cache.
  const rv = r.query.get("resourceVersion");
  const revision = rv !== null && /^\d{1,15}$/.test(rv) ? Number(rv) : 0;
  if (revision > r.store.revision) return r.untilRevision(revision).then(() => handleGet(r));
  const stored = r.store.get(refOf(r));
  if (r.tables !== undefined) return sendJson(r.res, 200, r.tables.fromObject(r.resource, r.managed.decorate(stored), includeObjectOf(r.query)));
  sendStored(r, 200, stored);
}

async function handleCreate(r: ResourceRequest): Promise<void> {
  if (r.resource.namespaced && r.route.namespace === undefined) {
    throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (POST ${r.resource.plural} without a namespace)`);
  }
  const options = writeOptions(r.query);
  const { decoded, duplicates } = await decodedBody(r);
  const object = objectFrom(r, decoded, duplicates);
  const name = object.metadata.name ?? "";
  const created = await admitted(r, options, "CREATE", undefined, name, (dry) => r.store.create(object, asDryRun(options, dry)), (m) => r.store.create(m, options));
  if (options.dryRun === true) return sendStored(r, 201, withDryRunUid(r.store, created, name === "" ? (object.metadata.generateName ?? "") : ""));
  recordUpdate(r.managed, r.resource, undefined, created, managerOf(options.fieldManager, r.req.headers["user-agent"]), undefined);
  r.wrote();
  sendStored(r, 201, created);
}

/** Dry-run creates answered so far, per store: what a dry run's uid is drawn from. */
const dryRunCreates = new WeakMap<Store, number>();

/**
 * A dry-run create's object with a uid no object gets, and a name of its own when it was generated (`generatedFrom`,
 * its generateName): the store's dry run draws the uid and name the next real create will get (and rewinds its
 * sequences), where kube-apiserver draws fresh random ones. These are derived from a count of the store's dry-run
 * creates, so a simulated run that makes them stays the same run for the same seed.
 */
function withDryRunUid(store: Store, object: KubeObject, generatedFrom: string): KubeObject {
  const count = (dryRunCreates.get(store) ?? 0) + 1;
  dryRunCreates.set(store, count);
  const hex = createHash("sha256").update(`settle dry-run create ${count} ${object.metadata.uid ?? ""}`).digest("hex");
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const uid = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  assert(uid !== object.metadata.uid, "dry-run uid: not the next real one");
  const metadata = { ...object.metadata, uid };
  if (generatedFrom !== "" && object.metadata.name !== undefined) metadata.name = dryRunName(store, object, hex);
  return { ...object, metadata };
}

/** The alphabet and length of generated name suffixes, as kube-apiserver draws them. */
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789";
const suffixLength = 5;

/** A generated name for a dry run: the stored draw's prefix, a suffix from `hex`, not one a live object has. */
function dryRunName(store: Store, object: KubeObject, hex: string): string {
  const drawn = object.metadata.name!;
  assert(drawn.length >= suffixLength, "dry-run name: a generated name ends in a suffix");
  const base = drawn.slice(0, -suffixLength);
  for (let attempt = 0; attempt + suffixLength <= 32; attempt++) {
    let suffix = "";
    for (let i = 0; i < suffixLength; i++) suffix += suffixAlphabet[parseInt(hex.slice(2 * (attempt + i), 2 * (attempt + i) + 2), 16) % suffixAlphabet.length];
    const name = base + suffix;
    if (name !== drawn && !exists(store, object, name)) return name;
  }
  return drawn;
}

function exists(store: Store, object: KubeObject, name: string): boolean {
  const ref: ObjectRef = { apiVersion: object.apiVersion, kind: object.kind, name, ...(object.metadata.namespace === undefined ? {} : { namespace: object.metadata.namespace }) };
  try {
    store.get(ref);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** As kube-apiserver's checkName: the body must name the object the URL names (an absent name is a mismatch too). */
function checkName(r: ResourceRequest, object: KubeObject): void {
  const name = object.metadata.name ?? "";
  if (name !== r.route.name) throw badRequest(`the name of the object (${String(name)}) does not match the name on the URL (${r.route.name})`);
}

async function handleUpdate(r: ResourceRequest): Promise<void> {
  const options = writeOptions(r.query);
  const { decoded, duplicates } = await decodedBody(r);
  const object = objectFrom(r, decoded, duplicates);
  checkName(r, object);
  const before = currentOrUndefined(r);
  const store = (o: KubeObject, opts: WriteOptions) => (r.route.subresource === "status" ? r.store.updateStatus(o, opts) : r.store.update(o, opts));
  const updated = await admitted(r, options, before === undefined ? "CREATE" : "UPDATE", before, r.route.name ?? "", (dry) => store(object, asDryRun(options, dry)), (m) => store(m, options));
  if (r.route.subresource === undefined) keepRequestedEntries(r, options, updated, object.metadata.managedFields);
  written(r, options, before, updated);
  sendStored(r, 200, updated);
}

const patchTypes: Record<string, "merge" | "json" | "strategic" | "apply"> = {
  "application/merge-patch+json": "merge",
  "application/json-patch+json": "json",
  "application/strategic-merge-patch+json": "strategic",
  "application/apply-patch+yaml": "apply",
  "application/apply-patch+cbor": "apply",
};

function unsupportedPatch(r: ResourceRequest): ApiError {
  const accepted = isBuiltinKind(r.resource)
    ? "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    : "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";
  return new ApiError("UnsupportedMediaType", 415, `the body of the request was in an unknown format - accepted media types include: ${accepted}`);
}

async function handlePatch(r: ResourceRequest): Promise<void> {
  const media = mediaType(r.req.headers["content-type"]);
  const type = patchTypes[media];
  // Strategic merge is for built-in kinds only, as on a real server; apply in CBOR is not served.
  if (type === undefined || (type === "strategic" && !isBuiltinKind(r.resource))) throw unsupportedPatch(r);
  if (media === "application/apply-patch+cbor") throw unsupportedPatch(r);
  if (type === "apply") return handleApply(r);
  if (r.query.has("force")) {
    throw invalid("PatchOptions", "", [{ field: "force", type: "FieldValueForbidden", message: "Forbidden: may not be specified for non-apply patch" }], "meta.k8s.io");
  }
  const body = await r.body();
  let patch = parseJson(body, "the patch");
  reportFields(r, duplicatesOf(r, body).map((k) => `duplicate field ${JSON.stringify(k)}`));
  const options = writeOptions(r.query);
  const status = r.route.subresource === "status";
  const ref = refOf(r);
  const current = r.store.get(ref);
  if (type === "merge" && typeof patch === "object" && patch !== null && !Array.isArray(patch)) {
    const unknown = unknownFields(r, Object.keys(patch));
    if (unknown.length > 0) patch = Object.fromEntries(Object.entries(patch).filter(([k]) => !unknown.includes(k)));
  } else if (type === "json" && Array.isArray(patch)) {
    const first = firstPathSegment;
    const unknown = unknownFields(r, patch.flatMap((op) => (typeof op === "object" && op !== null ? [first(op.path), ...(op.from === undefined ? [] : [first(op.from)])] : [])).filter((k) => k !== ""));
    if (unknown.length > 0) patch = patch.filter((op) => !(typeof op === "object" && op !== null && (unknown.includes(first(op.path)) || unknown.includes(first(op.from)))));
  }
  let patched: KubeObject;
  if (!status && writesManagedFields(type, patch)) {
    // A patch of managedFields applies to the object as clients see it, with them (kubectl's move of client-side
    // ownership to server-side apply is such a JSON patch); the entries it leaves replace the object's.
    const seen = r.managed.decorate(current);
    const next = (type === "json" ? applyJsonPatch(seen, patch) : type === "merge" ? applyMergePatch(seen, patch) : applyStrategicPatch(seen, patch, schemaOf(r.resource))) as KubeObject;
    if (!isRecord(next) || !isRecord(next.metadata)) throw badRequest("the patched object has no metadata");
    const { managedFields, ...metadata } = next.metadata;
    const object = { ...next, metadata: { ...metadata, resourceVersion: metadata.resourceVersion ?? current.metadata.resourceVersion! } } as KubeObject;
    patched = await admitted(r, options, "UPDATE", current, ref.name, (dry) => r.store.update(object, asDryRun(options, dry)), (m) => r.store.update(m, options));
    keepRequestedEntries(r, options, patched, managedFields);
  } else if (type === "strategic") {
    const next = applyStrategicPatch(current, patch, schemaOf(r.resource)) as unknown as KubeObject;
    dropUnknown(r, next as unknown as Record<string, unknown>);
    // The patch applies to the object read just now: the store is synchronous, so nothing wrote in between.
    if (typeof next.metadata !== "object" || next.metadata === null || Array.isArray(next.metadata)) throw badRequest("the patched object has no metadata");
    if (next.metadata.resourceVersion === undefined) next.metadata = { ...next.metadata, resourceVersion: current.metadata.resourceVersion! };
    patched = await admitted(r, options, "UPDATE", current, ref.name, (dry) => (status ? r.store.updateStatus(next, asDryRun(options, dry)) : r.store.update(next, asDryRun(options, dry))), (m) => storeUpdate(r, m, options));
  } else {
    const request = (dry: boolean) => patchRequest(ref, asDryRun(options, dry), type, patch);
    patched = await admitted(r, options, "UPDATE", current, ref.name, (dry) => (status ? r.store.patchStatus(request(dry)) : r.store.patch(request(dry))), (m) => storeUpdate(r, m, options));
  }
  written(r, options, current, patched);
  sendStored(r, 200, patched);
}

/**
 * The store's patch request, built field by field: on Node 20 an object literal that spreads a plain (unfrozen)
 * object and then adds fields takes V8's slow path (about 2 us for this one in a micro-benchmark, where the literal
 * takes nanoseconds).
 */
function patchRequest(ref: ObjectRef, options: WriteOptions, patchType: "merge" | "json", patch: unknown): PatchOptions {
  const request: PatchOptions = { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, patchType, patch };
  if (ref.namespace !== undefined) request.namespace = ref.namespace;
  if (options.dryRun !== undefined) request.dryRun = options.dryRun;
  if (options.fieldManager !== undefined) request.fieldManager = options.fieldManager;
  return request;
}

/** Write options with `dryRun` set when `dry`, as the dry run before admission webhooks makes the write. */
function asDryRun<T extends { dryRun?: boolean }>(options: T, dry: boolean): T {
  return dry && options.dryRun !== true ? { ...options, dryRun: true } : options;
}

/** An update of the main resource or of `/status`, as the request's route says. */
function storeUpdate(r: ResourceRequest, object: KubeObject, options: WriteOptions): KubeObject {
  return r.route.subresource === "status" ? r.store.updateStatus(object, options) : r.store.update(object, options);
}

/**
 * A write through the admission webhooks (webhooks.ts); with none concerned, just the write. A write of a role or a
 * binding by anyone but `system:masters` is first judged by the escalation check (escalation.ts).
 */
function admitted(r: ResourceRequest, options: { dryRun?: boolean; fieldManager?: string }, operation: Operation, old: KubeObject | undefined, name: string, write: (dryRun: boolean) => KubeObject, persist: (object: KubeObject) => KubeObject): KubeObject | Promise<KubeObject> {
  if (operation !== "DELETE" && isRbacWrite(r.route.group, r.route.plural) && !isMaster(requestUser(r.req))) {
    ({ write, persist } = withEscalationCheck(r, old, write, persist));
  }
  // Most writes concern no webhook: they are the write alone, with nothing made for admission.
  if (!webhooksOf(r.store).concerns(operation, r.resource, r.route.subresource)) return write(options.dryRun === true);
  return throughWebhooks(r, options, operation, old, name, write, persist);
}

/**
 * The write and persist of an RBAC write, each judging the object it would store first: the write through a dry
 * run of itself (the store's defaulting included), the persist on the object the webhooks mutated.
 */
function withEscalationCheck(r: ResourceRequest, old: KubeObject | undefined, write: (dryRun: boolean) => KubeObject, persist: (object: KubeObject) => KubeObject) {
  const user = requestUser(r.req);
  const check = (object: KubeObject) => confirmNoEscalation(r.store, { user, plural: r.route.plural, namespace: r.route.namespace, name: r.route.name, old, object });
  return {
    write: (dryRun: boolean): KubeObject => {
      const preview = write(true);
      check(preview);
      return dryRun ? preview : write(false);
    },
    persist: (object: KubeObject): KubeObject => {
      check(object);
      return persist(object);
    },
  };
}

/**
 * An apply that would create the object needs `create` as well as the `patch` its request was authorized for, as
 * kube-apiserver asks its authorizer before an apply creates (with the object's name, so `resourceNames` count).
 */
function authorizeCreate(r: ResourceRequest): void {
  const user = requestUser(r.req);
  const { group, plural, subresource, namespace, name } = r.route;
  const attributes = { verb: "create", resource: { group, plural, subresource, namespace, name } };
  if (!allowed(r.store, user, attributes)) throw forbidden(user, attributes);
}

async function throughWebhooks(r: ResourceRequest, options: { dryRun?: boolean; fieldManager?: string }, operation: Operation, old: KubeObject | undefined, name: string, write: (dryRun: boolean) => KubeObject, persist: (object: KubeObject) => KubeObject): Promise<KubeObject> {
  const warnings: string[] = [];
  const attributes = { resource: r.resource, subresource: r.route.subresource, namespace: r.route.namespace, name, dryRun: options.dryRun === true, options: options.fieldManager === undefined ? {} : { fieldManager: options.fieldManager }, userInfo: requestUser(r.req), warnings };
  try {
    return await admitWrite(r.store, attributes, { operation, old, write, persist });
  } finally {
    for (const warning of warnings) r.res.appendHeader("Warning", `299 - ${JSON.stringify(warning)}`);
  }
}

/** The top-level field a JSON patch operation's path names (`/data/x` -> `data`), or "". */
function firstPathSegment(path: unknown): string {
  return typeof path === "string" ? (path.split("/")[1] ?? "") : "";
}

function currentOrUndefined(r: ResourceRequest): KubeObject | undefined {
  try {
    return r.store.get(refOf(r));
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** True when a patch writes `metadata.managedFields`. */
function writesManagedFields(type: "merge" | "json" | "strategic", patch: unknown): boolean {
  if (type === "json") return Array.isArray(patch) && patch.some((op) => isRecord(op) && typeof op.path === "string" && op.path.startsWith("/metadata/managedFields"));
  return isRecord(patch) && isRecord(patch.metadata) && Object.hasOwn(patch.metadata, "managedFields");
}

/** Entries a write's client set in `metadata.managedFields` (see `requestedEntries`) replace the object's. */
function keepRequestedEntries(r: ResourceRequest, options: WriteOptions, written: KubeObject, managedFields: unknown): void {
  const entries = options.dryRun === true ? undefined : requestedEntries(managedFields, r.managed.now());
  if (entries !== undefined) r.managed.set(written, entries);
}

/** After a write through the server: field ownership for its manager, and a kick for the collector. */
function written(r: ResourceRequest, options: WriteOptions, before: KubeObject | undefined, after: KubeObject): void {
  if (options.dryRun === true) return;
  const sameObject = before !== undefined && before.metadata.uid === after.metadata.uid;
  recordUpdate(r.managed, r.resource, sameObject ? before : undefined, after, managerOf(options.fieldManager, r.req.headers["user-agent"]), r.route.subresource === "status" ? "status" : undefined);
  r.wrote();
}

/** Times an apply computes again when a write came in while it paused (`ResourceRequest.pause`), before it stops pausing. */
const applyPausedAttemptsMax = 3;

/**
 * Server-side apply: create if absent (201), else merge with field ownership (conflicts: 409). Where the request
 * may pause (`settle serve`), it does so between its phases (decoding, computing the merge, writing), so that a
 * big body keeps other requests waiting for one phase at a time; a write that came in meanwhile makes it compute
 * again against the object as it is now, as kube-apiserver retries an apply's update on a conflict.
 */
async function handleApply(r: ResourceRequest): Promise<void> {
  const fieldManager = r.query.get("fieldManager");
  const force = boolParam(r.query, "force");
  const body = await r.body();
  let decoded = decodeApplied(r, body, fieldManager, force);
  const options = writeOptions(r.query);
  const subresource = r.route.subresource === "status" ? "status" : undefined;
  let attempt = 0;
  if (r.pause !== undefined) await r.pause();
  for (;;) {
    const { applied, json } = decoded;
    const live = currentOrUndefined(r);
    if (live === undefined && subresource !== undefined) r.store.get(refOf(r));
    const rv = applied.metadata.resourceVersion;
    if (rv !== undefined && rv !== (live?.metadata.resourceVersion ?? "")) {
      throw conflict(r.resource.plural, r.route.name!, "the object has been modified; please apply your changes to the latest version and try again", r.resource.group);
    }
    // The live object is the store's, frozen: the merge copies what it keeps of it, so its result is all ours.
    const request: ApplyRequest = { resource: r.resource, live, applied, manager: fieldManager!, force, subresource };
    const pausing = r.pause !== undefined && attempt < applyPausedAttemptsMax;
    let computed: ApplyResult;
    if (!pausing) computed = computeApply(r.managed, request);
    else {
      const steps = applySteps(r.managed, request);
      let step = steps.next();
      for (; step.done !== true; step = steps.next()) await r.pause!();
      computed = step.value;
      await r.pause!();
    }
    const { object, entries } = computed;
    if (pausing) {
      if (currentOrUndefined(r) !== live) {
        attempt++;
        decoded = decodeApplied(r, body, fieldManager, force);
        continue;
      }
    }
    // Nobody else holds the merged object (a body from the JSON parser has no container twice): the store may keep
    // it rather than copy it. A dry run's write (before admission webhooks) copies, as the real write may follow.
    const given = (dry: boolean) => (json && !dry ? handOver(object) : object);
    let result: KubeObject;
    if (live === undefined) {
      authorizeCreate(r);
      result = await admitted(r, options, "CREATE", undefined, r.route.name ?? "", (dry) => r.store.create(given(dry), asDryRun(options, dry)), (m) => r.store.create(m, options));
    } else {
      object.metadata = { ...object.metadata, resourceVersion: live.metadata.resourceVersion! };
      result = await admitted(r, options, "UPDATE", live, r.route.name ?? "", (dry) => storeUpdate(r, given(dry), asDryRun(options, dry)), (m) => storeUpdate(r, m, options));
    }
    const code = live === undefined ? 201 : 200;
    if (options.dryRun === true) return sendStored(r, code, live === undefined ? withDryRunUid(r.store, result, "") : result);
    r.managed.set(result, entries);
    r.wrote();
    if (pausing) {
      // Writing the answer is a phase of its own; a write that came in meanwhile moved the table on.
      await r.pause!();
      if (currentOrUndefined(r) !== result) return sendObject(r, code, decoratedWith(result, entries));
    }
    return sendStored(r, code, result);
  }
}

/** The applied configuration of an apply request, checked, and whether it came from the JSON parser. */
function decodeApplied(r: ResourceRequest, body: Buffer, fieldManager: string | null, force: boolean): { applied: KubeObject; json: boolean } {
  const { value, json } = parseYamlBody(body, "the applied configuration");
  checkApplyRequest(fieldManager, force, value);
  const applied = objectFrom(r, value, json ? duplicatesOf(r, body) : []);
  if (applied.metadata.name === undefined || applied.metadata.name === "") applied.metadata = { ...applied.metadata, name: r.route.name! };
  checkName(r, applied);
  return { applied, json };
}

const policies = new Set<string>(["Background", "Foreground", "Orphan"]);

/** DeleteOptions from the body (JSON or protobuf) and the query, as kube-apiserver merges them. */
async function deleteOptions(r: ResourceRequest, ref: ObjectRef): Promise<DeleteOptions> {
  const raw = await r.body();
  const body = raw.length === 0 ? {} : decodeBody(r.req.headers["content-type"], raw, "the DeleteOptions body");
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("DeleteOptions must be a JSON object");
  const b = body as Record<string, unknown>;
  const options: DeleteOptions = { ...ref, dryRun: dryRunOf(r.query, b.dryRun) };
  const grace = intParam(r.query, "gracePeriodSeconds") ?? b.gracePeriodSeconds;
  if (grace !== undefined && grace !== null) {
    if (typeof grace !== "number" || !Number.isSafeInteger(grace)) throw badRequest("gracePeriodSeconds must be an integer");
    options.gracePeriodSeconds = grace;
  }
  const orphan = r.query.has("orphanDependents") ? boolParam(r.query, "orphanDependents") : b.orphanDependents;
  const policy = r.query.get("propagationPolicy") ?? b.propagationPolicy;
  if (policy !== undefined && policy !== null && policy !== "") {
    if (typeof policy !== "string" || !policies.has(policy)) {
      throw invalid("DeleteOptions", "", [{ field: "propagationPolicy", type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"` }]);
    }
    if (orphan !== undefined && orphan !== null) throw invalid("DeleteOptions", "", [{ field: "propagationPolicy", type: "FieldValueForbidden", message: "Forbidden: orphanDependents and propagationPolicy cannot both be set" }]);
    options.propagationPolicy = policy as PropagationPolicy;
  } else if (orphan === true) options.propagationPolicy = "Orphan";
  else if (orphan === false) options.propagationPolicy = "Background";
  const pre = b.preconditions;
  if (pre !== undefined && pre !== null) {
    if (typeof pre !== "object" || Array.isArray(pre)) throw badRequest("preconditions must be a JSON object");
    const { uid, resourceVersion } = pre as Record<string, unknown>;
    options.preconditions = {};
    if (typeof uid === "string") options.preconditions.uid = uid;
    if (typeof resourceVersion === "string") options.preconditions.resourceVersion = resourceVersion;
  }
  return options;
}

async function handleDelete(r: ResourceRequest): Promise<void> {
  const options = await deleteOptions(r, refOf(r));
  const last = await admitted(r, options, "DELETE", currentOrUndefined(r), options.name, (dry) => r.store.delete({ ...options, dryRun: dry || options.dryRun === true }), () => r.store.delete(options));
  if (options.dryRun !== true) {
    if (last.metadata.deletionTimestamp === undefined) r.managed.forget(last.metadata.uid);
    r.wrote();
  }
  sendObject(r, 200, last);
}

/** deletecollection: every object the selectors match, each deleted as a single delete would be. */
async function handleDeleteCollection(r: ResourceRequest): Promise<void> {
  const template = await deleteOptions(r, { ...kindRef(r.resource), name: "" });
  const list = r.store.list(listOptions(r));
  const items: KubeObject[] = [];
  for (const item of list.items) {
    const ref: ObjectRef = { ...kindRef(r.resource), name: item.metadata.name ?? "" };
    if (item.metadata.namespace !== undefined) ref.namespace = item.metadata.namespace;
    try {
      // Each item goes through admission as its own DELETE, as the registry's deletecollection does.
      const options = { ...template, ...ref };
      items.push(await admitted(r, options, "DELETE", item, ref.name, (dry) => r.store.delete({ ...options, dryRun: dry || options.dryRun === true }), () => r.store.delete(options)));
    } catch (error) {
      // Another delete (or the collector) got there first: the object is gone, which is what was asked.
      if (!(error instanceof ApiError && error.reason === "NotFound")) throw error;
    }
  }
  if (template.dryRun !== true) r.wrote();
  sendObject(r, 200, { ...list, items });
}

/**
 * Writes an object or list of a built-in kind in protobuf when the client asks for it first (client-go typed
 * clients), in JSON otherwise. Custom resources and kinds the wire table does not hold are always JSON, as on a
 * real server.
 */
export function sendObject(r: ResourceRequest, code: number, body: KubeObject | { apiVersion: string; kind: string }): void {
  const message = prefersProtobuf(r.req.headers.accept) ? messageFor(body.apiVersion, body.kind) : undefined;
  // A frozen answer (a stored object, or its decorated form) never changes: its encoding is kept for the next read.
  const frozen = Object.isFrozen(body);
  if (message === undefined) {
    let text = frozen ? jsonTexts.get(body) : undefined;
    if (text === undefined) {
      text = JSON.stringify(body);
      if (frozen) jsonTexts.set(body, text);
    }
    return sendJsonText(r.res, code, text);
  }
  let bytes = frozen ? protobufBytes.get(body) : undefined;
  if (bytes === undefined) {
    bytes = encodeProtobuf(body as unknown as Record<string, unknown>, message);
    if (frozen) protobufBytes.set(body, bytes);
  }
  sendProtobuf(r.res, code, bytes);
}

/**
 * Writes a stored object as the client sees it, with its managed fields. In JSON its text comes from the table's
 * cache (`ManagedFields.decoratedJson`) rather than from serializing a decorated copy; protobuf encodes the copy.
 */
function sendStored(r: ResourceRequest, code: number, stored: KubeObject): void {
  const json = prefersProtobuf(r.req.headers.accept) ? undefined : r.managed.decoratedJson(stored);
  if (json === undefined) return sendObject(r, code, r.managed.decorate(stored));
  sendJsonText(r.res, code, json);
}

const jsonTexts = new WeakMap<object, string>();
const protobufBytes = new WeakMap<object, Uint8Array>();

/** GET, PUT and PATCH of `/scale`: the Scale view in, `spec.replicas` of the parent out. */
async function handleScale(r: ResourceRequest, method: string): Promise<void> {
  const current = r.store.get(refOf(r));
  if (method === "GET") return sendObject(r, 200, scaleOf(r.resource, current));
  let body: unknown;
  if (method === "PUT") body = decodeBody(r.req.headers["content-type"], await r.body());
  else if (method === "PATCH") {
    const type = patchTypes[mediaType(r.req.headers["content-type"])];
    if (type === undefined || type === "apply") throw unsupportedPatch(r);
    body = patchScale(scaleOf(r.resource, current), type, parseJson(await r.body(), "the patch"));
  } else throw new ApiError("MethodNotAllowed", 405, `the server does not allow this method on the requested resource (${method} ${r.resource.plural}/scale)`);
  const replicas = replicasFrom(body, current, r.resource);
  const options = writeOptions(r.query);
  const updated = r.store.update(withReplicas(r.resource, current, replicas), options);
  written(r, options, current, updated);
  sendObject(r, 200, scaleOf(r.resource, updated));
}

export { notFound };
