// A `Client` over a real API server, configured by a kubeconfig through `@kubernetes/client-node` 1.4
// (its auth, TLS and contexts), speaking the REST API directly so that every verb, the status subresource
// and watches behave exactly as settle's other clients do: same options, same typed `ApiError`s.
import { KubeConfig } from "@kubernetes/client-node";
import fetch, { type RequestInit, type Response } from "node-fetch";
import type { Readable } from "node:stream";
import type {
  Client,
  CreateOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  UpdateOptions,
  Watch,
  WatchOptions,
} from "../api/client.ts";
import { ApiError, badRequest, internalError } from "../api/errors.ts";
import { isPathSegmentName } from "../api/validation.ts";
import { parseApiVersion, type KindRef, type KubeObject, type ObjectList, type WatchEvent } from "../api/object.ts";
import { checkClientOptions } from "../api/client-options.ts";

export interface KubeClientOptions {
  /** A kubeconfig path or a loaded `KubeConfig`. Default: `$KUBECONFIG`, `~/.kube/config`, or in-cluster. */
  kubeconfig?: string | KubeConfig;
  /** A context other than the current one. */
  context?: string;
  /** Sent as the User-Agent. Default "settle". */
  userAgent?: string;
}

interface ResourceInfo {
  plural: string;
  namespaced: boolean;
}

const patchContentTypes = { merge: "application/merge-patch+json", json: "application/json-patch+json" } as const;

export function loadKubeConfig(options: KubeClientOptions = {}): KubeConfig {
  if (options.kubeconfig instanceof KubeConfig) return options.kubeconfig;
  const kc = new KubeConfig();
  if (typeof options.kubeconfig === "string") kc.loadFromFile(options.kubeconfig);
  else kc.loadFromDefault();
  if (options.context !== undefined) kc.setCurrentContext(options.context);
  if (kc.getCurrentCluster() === null) throw new Error("kubeconfig: no current cluster (set a context or pass --kubeconfig)");
  return kc;
}

export function createKubeClient(options: KubeClientOptions = {}): Client {
  return new KubeClient(loadKubeConfig(options), options.userAgent ?? "settle");
}

class KubeClient implements Client {
  private readonly server: string;
  private readonly discovery = new Map<string, Promise<Map<string, ResourceInfo>>>();

  constructor(
    private readonly kc: KubeConfig,
    private readonly userAgent: string,
  ) {
    this.server = kc.getCurrentCluster()!.server.replace(/\/+$/, "");
  }

  async get<T extends KubeObject>(o: GetOptions): Promise<T> {
    checkClientOptions("get", o);
    return (await this.request("GET", await this.path(o, o.namespace, o.name))) as T;
  }

  async list<T extends KubeObject>(o: ListOptions): Promise<ObjectList<T>> {
    checkClientOptions("list", o);
    const query = { labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, limit: o.limit, continue: o.continue, resourceVersion: o.resourceVersion };
    return (await this.request("GET", await this.path(o, o.namespace), { query })) as ObjectList<T>;
  }

  async create<T extends KubeObject>(o: CreateOptions<T>): Promise<T> {
    checkClientOptions("create", o);
    const path = await this.path(o.object, o.object.metadata.namespace);
    return (await this.request("POST", path, { body: o.object, query: writeQuery(o) })) as T;
  }

  async update<T extends KubeObject>(o: UpdateOptions<T>): Promise<T> {
    checkClientOptions("update", o);
    const path = await this.path(o.object, o.object.metadata.namespace, o.object.metadata.name);
    return (await this.request("PUT", path, { body: o.object, query: writeQuery(o) })) as T;
  }

  async updateStatus<T extends KubeObject>(o: UpdateOptions<T>): Promise<T> {
    checkClientOptions("updateStatus", o);
    const path = await this.path(o.object, o.object.metadata.namespace, o.object.metadata.name, "status");
    return (await this.request("PUT", path, { body: o.object, query: writeQuery(o) })) as T;
  }

  async patch<T extends KubeObject>(o: PatchOptions): Promise<T> {
    checkClientOptions("patch", o);
    const path = await this.path(o, o.namespace, o.name);
    return (await this.request("PATCH", path, { body: o.patch, contentType: patchContentTypes[o.patchType], query: writeQuery(o) })) as T;
  }

  async patchStatus<T extends KubeObject>(o: PatchOptions): Promise<T> {
    checkClientOptions("patchStatus", o);
    const path = await this.path(o, o.namespace, o.name, "status");
    return (await this.request("PATCH", path, { body: o.patch, contentType: patchContentTypes[o.patchType], query: writeQuery(o) })) as T;
  }

  async delete<T extends KubeObject>(o: DeleteOptions): Promise<T> {
    checkClientOptions("delete", o);
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (o.preconditions !== undefined) body.preconditions = o.preconditions;
    if (o.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = o.gracePeriodSeconds;
    if (o.propagationPolicy !== undefined) body.propagationPolicy = o.propagationPolicy;
    if (o.dryRun === true) body.dryRun = ["All"];
    return (await this.request("DELETE", await this.path(o, o.namespace, o.name), { body })) as T;
  }

  watch<T extends KubeObject>(o: WatchOptions): Watch<T> {
    checkClientOptions("watch", o);
    const abort = new AbortController();
    const query = { watch: "true", labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, resourceVersion: o.resourceVersion, allowWatchBookmarks: o.allowBookmarks ? "true" : undefined };
    const open = async (): Promise<Readable> => {
      const path = await this.path(o, o.namespace);
      const response = await this.send("GET", path, { query, signal: abort.signal });
      return response.body as unknown as Readable;
    };
    return { close: () => abort.abort(), [Symbol.asyncIterator]: () => watchEvents<T>(open, abort.signal) };
  }

  /** The REST path of a kind (and optionally one object and a subresource), found through discovery. */
  private async path(kind: KindRef, namespace: string | undefined, name?: string, subresource?: string): Promise<string> {
    const info = await this.resource(kind);
    const { group, version } = parseApiVersion(kind.apiVersion);
    let path = group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
    if (info.namespaced && namespace !== undefined) path += `/namespaces/${encodeURIComponent(checkSegment("namespace", namespace))}`;
    path += `/${info.plural}`;
    if (name !== undefined) path += `/${encodeURIComponent(checkSegment("resource name", name))}`;
    if (subresource !== undefined) path += `/${subresource}`;
    return path;
  }

  private async resource(kind: KindRef): Promise<ResourceInfo> {
    let resources = this.discovery.get(kind.apiVersion);
    if (resources === undefined) {
      resources = this.discover(kind.apiVersion);
      this.discovery.set(kind.apiVersion, resources);
      resources.catch(() => this.discovery.delete(kind.apiVersion));
    }
    const info = (await resources).get(kind.kind);
    if (info === undefined) {
      // A CRD may have been created since: look again once.
      this.discovery.delete(kind.apiVersion);
      const fresh = await this.discover(kind.apiVersion);
      const found = fresh.get(kind.kind);
      if (found === undefined) throw new ApiError("NotFound", 404, `the server doesn't have a resource type for ${kind.kind} in ${kind.apiVersion}`);
      return found;
    }
    return info;
  }

  private async discover(apiVersion: string): Promise<Map<string, ResourceInfo>> {
    const { group, version } = parseApiVersion(apiVersion);
    const list = (await this.request("GET", group === "" ? `/api/${version}` : `/apis/${group}/${version}`)) as {
      resources?: Array<{ name: string; kind: string; namespaced: boolean }>;
    };
    const map = new Map<string, ResourceInfo>();
    for (const r of list.resources ?? []) if (!r.name.includes("/")) map.set(r.kind, { plural: r.name, namespaced: r.namespaced });
    return map;
  }

  private async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const response = await this.send(method, path, options);
    const text = await response.text();
    return text.length === 0 ? {} : JSON.parse(text);
  }

  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const init = (await this.kc.applyToFetchOptions({})) as RequestInit;
    // client-node returns a Headers object: spreading it would drop the Authorization header it holds.
    const given: Record<string, string> = {};
    new Headers(init.headers as ConstructorParameters<typeof Headers>[0]).forEach((value, key) => (given[key] = value));
    const headers: Record<string, string> = { ...given, Accept: "application/json", "User-Agent": this.userAgent };
    if (options.body !== undefined) headers["Content-Type"] = options.contentType ?? "application/json";
    let response: Response;
    try {
      response = await fetch(url.href, {
        ...init,
        method,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        ...(options.signal === undefined ? {} : { signal: options.signal as never }),
      });
    } catch (error) {
      throw internalError(`${method} ${url.pathname}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (response.ok) return response;
    const text = await response.text();
    try {
      throw ApiError.fromStatus(JSON.parse(text));
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw new ApiError("InternalError", response.status, `${method} ${url.pathname}: ${response.status} ${text.slice(0, 200)}`);
    }
  }
}

interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | undefined>;
  signal?: AbortSignal;
}

function writeQuery(o: { dryRun?: boolean; fieldManager?: string }): Record<string, string | undefined> {
  return { dryRun: o.dryRun ? "All" : undefined, fieldManager: o.fieldManager };
}

/** Events of one watch request, as NDJSON lines; an ERROR event becomes a thrown `ApiError` (410 means relist). */
async function* watchEvents<T extends KubeObject>(open: () => Promise<Readable>, signal: AbortSignal): AsyncGenerator<WatchEvent<T>> {
  let body: Readable;
  try {
    body = await open();
  } catch (error) {
    if (signal.aborted) return;
    throw error;
  }
  let buffer = "";
  try {
    for await (const chunk of body) {
      buffer += String(chunk);
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line.length === 0) continue;
        const event = JSON.parse(line) as { type: string; object: KubeObject };
        if (event.type === "ERROR") throw ApiError.fromStatus(event.object as never);
        yield event as WatchEvent<T>;
      }
    }
  } catch (error) {
    if (signal.aborted) return;
    if (error instanceof ApiError) throw error;
    throw internalError(`watch: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    body.destroy();
  }
}

/**
 * A name or namespace must stand in the path as itself, as client-go's request builder checks: `.` and `..` are not
 * escaped by encodeURIComponent, and fetch's URL parser would resolve them (a ConfigMap named `..` would address its
 * namespace). Refused before anything is sent.
 */
function checkSegment(what: string, value: string): string {
  const problems = isPathSegmentName(value);
  if (problems.length > 0) throw badRequest(`invalid ${what} ${JSON.stringify(value)}: ${problems.join(", ")}`);
  return value;
}
