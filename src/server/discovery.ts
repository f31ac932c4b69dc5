// Discovery and OpenAPI documents, computed from the store's kinds on every request, so a CRD's kind appears
// (and disappears) the moment its write commits. Legacy discovery only: clients that ask for aggregated v2 read
// the plain `application/json` Content-Type and fall back to it.
//
// OpenAPI v3: one document per group version, built-in or custom, with the kinds' schemas (openapi.ts) and a PATCH
// operation per item path that takes the `fieldValidation` query parameter: kubectl's and helm's default
// `--validate=strict` asks for it and then leaves validation to the server. Request bodies never list strategic
// merge patch, as the notes on real clients advise.
import { createHash } from "node:crypto";
import { formatApiVersion } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import { builtinKinds } from "../store/index.ts";
import type { Store } from "../store/index.ts";
import { convertedGroupVersions, servedResources } from "./conversion.ts";
import { builtinRoots, customSchemas, schemasFrom } from "./openapi.ts";
import { virtualDiscovery, virtualGroupVersions } from "./auth/reviews.ts";
import { pathNotFound } from "./routes.ts";
import type { JsonObject } from "../api/json.ts";

export const serverVersion = { major: "1", minor: "34", gitVersion: "v1.34.0-settle", platform: "linux/amd64" };

const itemVerbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const statusVerbs = ["get", "patch", "update"];

export function versionInfo(): Record<string, string> {
  return {
    ...serverVersion,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.24.0",
    compiler: "gc",
  };
}

/** kube's version priority: GA before beta before alpha, higher numbers first, then others by name. */
export function versionPriority(a: string, b: string): number {
  const rank = (v: string): [number, number, number, string] => {
    const match = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (match === null) return [3, 0, 0, v];
    const level = match[2] === undefined ? 0 : match[2] === "beta" ? 1 : 2;
    return [level, -Number(match[1]), -Number(match[3] ?? 0), v];
  };
  const ra = rank(a);
  const rb = rank(b);
  for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return (ra[i] as number) - (rb[i] as number);
  return ra[3] < rb[3] ? -1 : ra[3] > rb[3] ? 1 : 0;
}

/** Group name -> served versions, in priority order. */
function groupsOf(store: Store): Map<string, string[]> {
  const groups = new Map<string, Set<string>>();
  for (const resource of servedResources(store)) {
    let versions = groups.get(resource.group);
    if (versions === undefined) groups.set(resource.group, (versions = new Set()));
    versions.add(resource.version);
  }
  for (const [name, served] of virtualGroupVersions) {
    let versions = groups.get(name);
    if (versions === undefined) groups.set(name, (versions = new Set()));
    for (const version of served) versions.add(version);
  }
  const sorted = new Map<string, string[]>();
  for (const name of [...groups.keys()].sort()) sorted.set(name, [...groups.get(name)!].sort(versionPriority));
  return sorted;
}

export function apiVersions(host: string): Record<string, unknown> {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: host }] };
}

function apiGroup(name: string, versions: string[]): Record<string, unknown> {
  const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: list, preferredVersion: list[0] };
}

export function apiGroupList(store: Store): Record<string, unknown> {
  const groups = [...groupsOf(store)].filter(([name]) => name !== "").map(([name, versions]) => apiGroup(name, versions));
  return { kind: "APIGroupList", apiVersion: "v1", groups };
}

export function apiGroupOf(store: Store, group: string): Record<string, unknown> {
  const versions = group === "" ? undefined : groupsOf(store).get(group);
  if (versions === undefined) throw pathNotFound();
  return { kind: "APIGroup", apiVersion: "v1", ...apiGroup(group, versions) };
}

function resourcesIn(store: Store, group: string, version: string): ResourceType[] {
  return servedResources(store)
    .filter((r) => r.group === group && r.version === version)
    .sort((a, b) => (a.plural < b.plural ? -1 : a.plural > b.plural ? 1 : 0));
}

export function apiResourceList(store: Store, group: string, version: string): Record<string, unknown> {
  const resources = resourcesIn(store, group, version);
  const virtual = virtualDiscovery(group, version);
  if (resources.length === 0 && virtual.length === 0) throw pathNotFound();
  const list: Record<string, unknown>[] = [...virtual];
  for (const r of resources) {
    const entry: Record<string, unknown> = { name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: r.verbs ?? itemVerbs };
    if (r.shortNames.length > 0) entry.shortNames = r.shortNames;
    if (r.categories !== undefined && r.categories.length > 0) entry.categories = r.categories;
    list.push(entry);
    // The scale subresource is an autoscaling/v1 Scale whatever the group of its parent.
    if (r.scaleSubresource === true) list.push({ name: `${r.plural}/scale`, singularName: "", namespaced: r.namespaced, group: "autoscaling", version: "v1", kind: "Scale", verbs: statusVerbs });
    if (r.statusSubresource) list.push({ name: `${r.plural}/status`, singularName: "", namespaced: r.namespaced, kind: r.kind, verbs: statusVerbs });
  }
  list.sort((a, b) => (String(a.name) < String(b.name) ? -1 : String(a.name) > String(b.name) ? 1 : 0));
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: formatApiVersion({ group, version }), resources: list };
}

// ---- OpenAPI v3 ----

const builtinGroupVersions = new Set([...builtinKinds.map((k) => formatApiVersion(k.resource)), ...convertedGroupVersions]);

function openapiKey(group: string, version: string): string {
  return group === "" ? `api/${version}` : `apis/${group}/${version}`;
}

const queryParameter = (name: string, description: string) => ({ name, in: "query", description, schema: { type: "string", uniqueItems: true } });

function patchOperation(r: ResourceType): Record<string, unknown> {
  const schema = { schema: { type: "object" } };
  return {
    operationId: `patch${r.kind}`,
    "x-kubernetes-action": "patch",
    "x-kubernetes-group-version-kind": { group: r.group, version: r.version, kind: r.kind },
    parameters: [
      queryParameter("dryRun", "When present, indicates that modifications should not be persisted."),
      queryParameter("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
      queryParameter("fieldValidation", "Ignore, Warn or Strict: how the server treats unknown or duplicate fields."),
    ],
    requestBody: { content: { "application/json-patch+json": schema, "application/merge-patch+json": schema }, required: true },
    responses: { "200": { description: "OK", content: { "application/json": schema } } },
  };
}

function openapiPaths(resources: readonly ResourceType[], group: string, version: string): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const r of resources) {
    const base = group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
    const item = r.namespaced ? `${base}/namespaces/{namespace}/${r.plural}/{name}` : `${base}/${r.plural}/{name}`;
    paths[item] = { patch: patchOperation(r) };
  }
  return paths;
}

/** Built-in documents never change while the server runs: built once, with their hash. */
const builtinDocuments = new Map<string, { doc: Record<string, unknown>; hash: string }>();

function hashOf(doc: unknown): string {
  return createHash("sha256").update(JSON.stringify(doc)).digest("hex").slice(0, 32).toUpperCase();
}

function openapiDocument(store: Store, group: string, version: string): { doc: Record<string, unknown>; hash: string } {
  const key = formatApiVersion({ group, version });
  const cached = builtinDocuments.get(key);
  if (cached !== undefined) return cached;
  const resources = resourcesIn(store, group, version);
  const builtin = builtinGroupVersions.has(key);
  const schemas = builtin ? schemasFrom(builtinRoots(group, version)) : customSchemas(store, resources);
  const doc = { openapi: "3.0.0", info: { title: "Kubernetes", version: serverVersion.gitVersion }, paths: openapiPaths(resources, group, version), components: { schemas } };
  const built = { doc, hash: hashOf(doc) };
  if (builtin) builtinDocuments.set(key, built);
  return built;
}

export function openapiIndex(store: Store): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [group, versions] of groupsOf(store)) {
    for (const version of versions) {
      if (resourcesIn(store, group, version).length === 0) continue;
      const { hash } = openapiDocument(store, group, version);
      paths[openapiKey(group, version)] = { serverRelativeURL: `/openapi/v3/${openapiKey(group, version)}?hash=${hash}` };
    }
  }
  return { paths };
}

export function openapiDoc(store: Store, group: string, version: string): Record<string, unknown> {
  if (resourcesIn(store, group, version).length === 0) throw pathNotFound();
  return openapiDocument(store, group, version).doc;
}

// ---- aggregated discovery (apidiscovery.k8s.io/v2) ----

export const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/** True when the client's first choice is the aggregated form (kubectl and client-go ask for it first). */
export function wantsAggregated(accept: string | undefined): boolean {
  const first = (accept ?? "").split(",")[0]!.toLowerCase().replace(/\s/g, "");
  return first.startsWith("application/json;") && first.includes("g=apidiscovery.k8s.io") && first.includes("v=v2;") && first.includes("as=apigroupdiscoverylist");
}

/** One group version's resources in the aggregated form: subresources nested under their parent. */
function versionDiscovery(store: Store, group: string, version: string): JsonObject {
  const entries = apiResourceList(store, group, version).resources as JsonObject[];
  const resources: JsonObject[] = [];
  for (const entry of entries) {
    const name = String(entry.name);
    const slash = name.indexOf("/");
    const responseKind = { group: (entry.group as string | undefined) ?? group, version: (entry.version as string | undefined) ?? version, kind: entry.kind };
    if (slash === -1) {
      const resource: JsonObject = { resource: name, responseKind, scope: entry.namespaced === true ? "Namespaced" : "Cluster", singularResource: entry.singularName, verbs: entry.verbs };
      if (entry.shortNames !== undefined) resource.shortNames = entry.shortNames;
      if (entry.categories !== undefined) resource.categories = entry.categories;
      resources.push(resource);
      continue;
    }
    const parent = resources.find((r) => r.resource === name.slice(0, slash));
    if (parent === undefined) continue;
    ((parent.subresources ??= []) as JsonObject[]).push({ subresource: name.slice(slash + 1), responseKind, verbs: entry.verbs });
  }
  return { version, resources, freshness: "Current" };
}

/** `/api` (the legacy group only) or `/apis` (every named group) as an APIGroupDiscoveryList. */
export function aggregatedDiscovery(store: Store, legacy: boolean): JsonObject {
  const items: JsonObject[] = [];
  for (const [name, versions] of groupsOf(store)) {
    if ((name === "") !== legacy) continue;
    items.push({ metadata: { name, creationTimestamp: null }, versions: versions.map((v) => versionDiscovery(store, name, v)) });
  }
  return { kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2", metadata: {}, items };
}
