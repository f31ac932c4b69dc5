// Who a request is and what it may do, as kube-apiserver with `--authorization-mode=RBAC` decides it.
//
// Identities: the holder of the server's token is `settle-admin` in `system:masters` (allowed everything, as a
// cluster's admin certificate is); a service account token the server minted (`kubectl create token`, the
// TokenRequest API; HS256-signed with a key derived from the server's token, so only this server's tokens count) is
// `system:serviceaccount:<namespace>:<name>` while the account exists with the uid it was minted for; and a request
// that impersonates (`kubectl --as`, `--as-group`: the `Impersonate-*` headers, each thing impersonated allowed by
// the `impersonate` verb, as RBAC grants it) is the impersonated user, in `system:authenticated`. Every identity but
// `system:masters` is checked against the Roles, ClusterRoles and their bindings in the store, with the real matching
// rules (verbs, API groups, resources and `*/subresource`, resource names, non-resource URLs, aggregated
// ClusterRoles), and refused with the real 403 text; writes of roles and bindings are also held to escalation
// prevention (escalation.ts). The server starts with the bootstrap roles every cluster has for this: `cluster-admin`
// (bound to `system:masters`), `system:discovery`, `system:basic-user` and `system:public-info-viewer` (bound to
// `system:authenticated`), and the user-facing `admin`, `edit` and `view`, aggregated from `system:aggregate-to-*`
// with the real rules. Leaves out: the controllers' and nodes' bootstrap roles, anonymous requests (a request
// without a token is a 401, not `system:anonymous`).
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { assert } from "../../api/assert.ts";
import { ApiError } from "../../api/errors.ts";
import { isRecord } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import type { LabelSelector } from "../../api/object.ts";
import { labelSelectorFromSpec, matchesLabels } from "../../api/selectors.ts";
import type { Store } from "../../store/index.ts";

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  /** Extra attributes (`Impersonate-Extra-<key>`); none for the server's own identities. */
  extra?: Record<string, string[]>;
}

/** The holder of the server's token: a cluster administrator. */
export const serverUser: UserInfo = { username: "settle-admin", groups: ["system:masters", "system:authenticated"] };

const usersByRequest = new WeakMap<IncomingMessage, UserInfo>();

/** Who made `req` (the administrator when the server did not say otherwise). */
export function requestUser(req: IncomingMessage): UserInfo {
  return usersByRequest.get(req) ?? serverUser;
}

export function setRequestUser(req: IncomingMessage, user: UserInfo): void {
  if (user !== serverUser) usersByRequest.set(req, user);
}

export function isMaster(user: UserInfo): boolean {
  return user.groups.includes("system:masters");
}

// ---- Service account tokens ----------------------------------------------------------------------------------

/**
 * The bearer tokens a server knows: its own (the administrator's) and the service account tokens it signs, with a key
 * derived from its own. Authentication, TokenReview and the TokenRequest API all ask this one object.
 */
export class Tokens {
  readonly #own: Buffer;
  readonly #key: Buffer;

  constructor(
    serverToken: string,
    private readonly store: Store,
    private readonly nowMs: () => number,
  ) {
    this.#own = Buffer.from(serverToken);
    this.#key = createHmac("sha256", serverToken).update("settle service account tokens").digest();
  }

  /** Who holds `token`: the administrator, a service account, or nobody (undefined). */
  user(token: string): UserInfo | undefined {
    const given = Buffer.from(token);
    if (given.length === this.#own.length && timingSafeEqual(given, this.#own)) return serverUser;
    return this.#accountOf(token);
  }

  /** A JWT for a service account, signed with this server's key. */
  sign(claims: Record<string, unknown>): string {
    const unsigned = `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url(claims)}`;
    return `${unsigned}.${createHmac("sha256", this.#key).update(unsigned).digest("base64url")}`;
  }

  /** The service account of a token this server signed, unexpired, whose account still exists; else undefined. */
  #accountOf(token: string): UserInfo | undefined {
    const parts = token.split(".");
    if (parts.length !== 3) return undefined;
    const expected = createHmac("sha256", this.#key).update(`${parts[0]}.${parts[1]}`).digest();
    const given = Buffer.from(parts[2]!, "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    if (!isRecord(claims) || typeof claims.exp !== "number" || claims.exp * 1000 <= this.nowMs() || !isRecord(claims["kubernetes.io"])) return undefined;
    const { namespace, serviceaccount } = claims["kubernetes.io"] as { namespace?: unknown; serviceaccount?: { name?: unknown; uid?: unknown } };
    if (typeof namespace !== "string" || typeof serviceaccount?.name !== "string") return undefined;
    const account = this.store.list({ apiVersion: "v1", kind: "ServiceAccount", namespace, fieldSelector: `metadata.name=${serviceaccount.name}` }).items[0];
    if (account === undefined || account.metadata.uid !== serviceaccount.uid) return undefined;
    return { username: `system:serviceaccount:${namespace}:${serviceaccount.name}`, uid: String(serviceaccount.uid), groups: serviceAccountGroups(namespace) };
  }
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function serviceAccountGroups(namespace: string): string[] {
  return ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"];
}

// ---- Impersonation -------------------------------------------------------------------------------------------

/** One thing a request impersonates, as kube-apiserver lists them: a user or service account, a group, an extra, a uid. */
interface Impersonation {
  kind: "User" | "ServiceAccount" | "Group" | "UserExtra" | "UID";
  name: string;
  namespace?: string;
  /** The extra's key (UserExtra only). */
  key?: string;
}

const impersonatePrefix = "impersonate-";
const extraPrefix = "impersonate-extra-";

/** True when `req` carries any `Impersonate-*` header (an empty one too: it is a 400 or ignored, as on a real server). */
export function impersonates(req: IncomingMessage): boolean {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length > impersonatePrefix.length && raw[i]!.toLowerCase().startsWith(impersonatePrefix)) return true;
  return false;
}

/**
 * The user `req` impersonates, or `user` itself when it impersonates nobody (no header, or only an empty
 * `Impersonate-User`). Each thing impersonated (the user or service account, each group, each extra value, the uid)
 * needs the `impersonate` verb on it (`users`, `serviceaccounts`, `groups`, `userextras/<key>`, `uids`), checked
 * with RBAC as any request is (`system:masters` may do all), else the real 403; groups, extras or a uid without a
 * user are a 400 as on a real server.
 */
export function impersonated(req: IncomingMessage, user: UserInfo, store: Store): UserInfo {
  const requests = impersonationRequests(req);
  if (requests.length === 0) return user;
  for (const request of requests) {
    const attributes = impersonationAttributes(request);
    if (!allowed(store, user, attributes)) throw forbidden(user, attributes);
  }
  return impersonatedUser(requests, req.headersDistinct["impersonate-group"] !== undefined);
}

/** What `req` asks to impersonate, in kube-apiserver's order; 400 for anything asked without a user. */
function impersonationRequests(req: IncomingMessage): Impersonation[] {
  const headers = req.headersDistinct;
  const requests: Impersonation[] = [];
  const name = headers["impersonate-user"]?.[0] ?? "";
  const account = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(name);
  if (account !== null) requests.push({ kind: "ServiceAccount", namespace: account[1]!, name: account[2]! });
  else if (name !== "") requests.push({ kind: "User", name });
  for (const group of headers["impersonate-group"] ?? []) requests.push({ kind: "Group", name: group });
  for (const [header, values] of Object.entries(headers)) {
    if (!header.startsWith(extraPrefix) || values === undefined) continue;
    const key = unescapeExtraKey(header.slice(extraPrefix.length));
    for (const value of values) requests.push({ kind: "UserExtra", name: value, key });
  }
  const uid = headers["impersonate-uid"]?.[0] ?? "";
  if (uid !== "") requests.push({ kind: "UID", name: uid });
  if (name === "" && requests.length > 0) throw new ApiError("BadRequest", 400, `requested [${requests.map(describeImpersonation).join(" ")}] without impersonating a user`);
  return requests;
}

/** An extra's key from its header name: percent-escapes undone where they are valid, as kube-apiserver reads it. */
function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** A request as kube-apiserver prints it in the 400 (an object reference, Go's %v of its fields). */
function describeImpersonation(request: Impersonation): string {
  const apiVersion = request.kind === "UserExtra" || request.kind === "UID" ? "authentication.k8s.io/v1" : "";
  return `{${[request.kind, request.namespace ?? "", request.name, "", apiVersion, "", request.key ?? ""].join(" ")}}`;
}

function impersonationAttributes(request: Impersonation): RequestAttributes {
  switch (request.kind) {
    case "User":
      return { verb: "impersonate", resource: { group: "", plural: "users", name: request.name } };
    case "ServiceAccount":
      return { verb: "impersonate", resource: { group: "", plural: "serviceaccounts", namespace: request.namespace, name: request.name } };
    case "Group":
      return { verb: "impersonate", resource: { group: "", plural: "groups", name: request.name } };
    case "UserExtra":
      return { verb: "impersonate", resource: { group: "authentication.k8s.io", plural: "userextras", subresource: request.key, name: request.name } };
    case "UID":
      return { verb: "impersonate", resource: { group: "authentication.k8s.io", plural: "uids", name: request.name } };
  }
}

/** The identity the requests make: a service account's groups when none are given, `system:authenticated` added. */
function impersonatedUser(requests: readonly Impersonation[], groupsGiven: boolean): UserInfo {
  const who = requests[0]!;
  assert(who.kind === "User" || who.kind === "ServiceAccount", "impersonation: the user comes first");
  const username = who.kind === "ServiceAccount" ? `system:serviceaccount:${who.namespace}:${who.name}` : who.name;
  const groups = requests.filter((r) => r.kind === "Group").map((r) => r.name);
  if (who.kind === "ServiceAccount" && !groupsGiven) groups.push(...serviceAccountGroups(who.namespace!).filter((g) => g !== "system:authenticated"));
  if (username === "system:anonymous") {
    if (!groups.includes("system:unauthenticated")) groups.push("system:unauthenticated");
  } else if (!groups.includes("system:authenticated") && !groups.includes("system:unauthenticated")) groups.push("system:authenticated");
  const extra: Record<string, string[]> = {};
  for (const r of requests) if (r.kind === "UserExtra") (extra[r.key!] ??= []).push(r.name);
  const uid = requests.find((r) => r.kind === "UID")?.name;
  return { username, ...(uid === undefined ? {} : { uid }), groups, ...(Object.keys(extra).length === 0 ? {} : { extra }) };
}

// ---- Authorization -------------------------------------------------------------------------------------------

/** What a request asks to do: a verb on a resource (its group, plural, subresource, namespace, name) or on a path. */
export interface RequestAttributes {
  verb: string;
  resource?: { group: string; plural: string; subresource?: string | undefined; namespace?: string | undefined; name?: string | undefined };
  path?: string;
}

export interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export type Role = KubeObject & { rules?: PolicyRule[]; aggregationRule?: { clusterRoleSelectors?: LabelSelector[] } };
export type Binding = KubeObject & { roleRef?: { kind?: string; name?: string }; subjects?: Array<{ kind?: string; name?: string; namespace?: string }> };

const rbac = "rbac.authorization.k8s.io/v1";

/** True when one of the rules `user` holds where the request applies allows it. */
export function allowed(store: Store, user: UserInfo, a: RequestAttributes): boolean {
  if (isMaster(user)) return true;
  return rulesOf(store, user, a.resource?.namespace).some((rule) => ruleAllows(rule, a));
}

/** The rules `user` holds cluster-wide and, with `namespace`, in that namespace (a SelfSubjectRulesReview's answer). */
export function rulesOf(store: Store, user: UserInfo, namespace: string | undefined): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const bindings = (kind: string, ns?: string) => store.list({ apiVersion: rbac, kind, ...(ns === undefined ? {} : { namespace: ns }) }).items as Binding[];
  for (const binding of bindings("ClusterRoleBinding")) if (binds(binding, user, undefined)) rules.push(...roleRules(store, binding, undefined));
  if (namespace !== undefined && namespace !== "") {
    for (const binding of bindings("RoleBinding", namespace)) if (binds(binding, user, namespace)) rules.push(...roleRules(store, binding, namespace));
  }
  return rules;
}

function binds(binding: Binding, user: UserInfo, namespace: string | undefined): boolean {
  return (binding.subjects ?? []).some((s) => {
    if (s.kind === "User") return s.name === user.username;
    if (s.kind === "Group") return s.name !== undefined && user.groups.includes(s.name);
    if (s.kind === "ServiceAccount") return `system:serviceaccount:${s.namespace ?? namespace ?? ""}:${s.name ?? ""}` === user.username;
    return false;
  });
}

function roleRules(store: Store, binding: Pick<Binding, "roleRef">, namespace: string | undefined): PolicyRule[] {
  const ref = binding.roleRef;
  if (ref?.name === undefined) return [];
  if (ref.kind === "Role") {
    if (namespace === undefined) return [];
    return roleNamed(store, "Role", ref.name, namespace)?.rules ?? [];
  }
  return clusterRoleRules(store, ref.name);
}

/** The Role (in `namespace`) or ClusterRole called `name`, or undefined. */
export function roleNamed(store: Store, kind: "Role" | "ClusterRole", name: string, namespace?: string): Role | undefined {
  const scope = namespace === undefined ? {} : { namespace };
  return store.list({ apiVersion: rbac, kind, ...scope, fieldSelector: `metadata.name=${name}` }).items[0] as Role | undefined;
}

/**
 * A ClusterRole's rules; an aggregated one's are those of the ClusterRoles its selectors pick (aggregated ones in
 * turn: `edit` picks `view`), as the aggregation controller fills them.
 */
export function clusterRoleRules(store: Store, name: string): PolicyRule[] {
  const roles = store.list({ apiVersion: rbac, kind: "ClusterRole" }).items as Role[];
  const rulesOfRole = (role: Role, seen: Set<Role>): PolicyRule[] => {
    const selectors = role.aggregationRule?.clusterRoleSelectors;
    if (selectors === undefined) return role.rules ?? [];
    seen.add(role);
    const picked = roles.filter((other) => !seen.has(other) && selectors.some((s) => matchesLabels(labelSelectorFromSpec(s), other.metadata.labels ?? {})));
    return picked.flatMap((other) => rulesOfRole(other, seen));
  };
  const role = roles.find((r) => r.metadata.name === name);
  return role === undefined ? [] : rulesOfRole(role, new Set());
}

function ruleAllows(rule: PolicyRule, a: RequestAttributes): boolean {
  const has = (list: string[] | undefined, value: string) => (list ?? []).some((entry) => entry === "*" || entry === value);
  if (!has(rule.verbs, a.verb)) return false;
  if (a.resource === undefined) {
    const path = a.path ?? "";
    return (rule.nonResourceURLs ?? []).some((url) => url === "*" || url === path || (url.endsWith("*") && path.startsWith(url.slice(0, -1))));
  }
  const { group, plural, subresource, name } = a.resource;
  if (!has(rule.apiGroups, group)) return false;
  const combined = subresource === undefined ? plural : `${plural}/${subresource}`;
  const resourceMatches = (rule.resources ?? []).some((r) => r === "*" || r === combined || (subresource !== undefined && r === `*/${subresource}`));
  if (!resourceMatches) return false;
  return rule.resourceNames === undefined || rule.resourceNames.length === 0 || (name !== undefined && rule.resourceNames.includes(name));
}

/**
 * The 403 a real server answers a request RBAC refuses: the object named by its group-qualified resource, without
 * the subresource (`pods "web" is forbidden`, `deployments.apps is forbidden`), then what the user cannot do.
 */
export function forbidden(user: UserInfo, a: RequestAttributes): ApiError {
  if (a.resource === undefined) return new ApiError("Forbidden", 403, `forbidden: User "${user.username}" cannot ${a.verb} path "${a.path ?? ""}"`, {});
  const { group, plural, subresource, namespace, name } = a.resource;
  const resource = subresource === undefined ? plural : `${plural}/${subresource}`;
  const qualified = group === "" ? plural : `${plural}.${group}`;
  const what = name === undefined || name === "" ? qualified : `${qualified} "${name}"`;
  const where = namespace === undefined || namespace === "" ? "at the cluster scope" : `in the namespace "${namespace}"`;
  return new ApiError("Forbidden", 403, `${what} is forbidden: User "${user.username}" cannot ${a.verb} resource "${resource}" in API group "${group}" ${where}`, { ...(name === undefined ? {} : { name }), group, kind: plural });
}

// ---- Bootstrap policy ----------------------------------------------------------------------------------------

const read = ["get", "list", "watch"];
const write = ["create", "delete", "deletecollection", "patch", "update"];
const rule = (apiGroups: string[], resources: string[], verbs: string[]): PolicyRule => ({ apiGroups, resources, verbs });

/** What `admin` adds to `edit`: roles and bindings in the namespace, and local access reviews. */
const aggregateToAdmin = [rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]), rule(["rbac.authorization.k8s.io"], ["rolebindings", "roles"], [...write, ...read].sort())];

/** What `edit` adds to `view`: writing workloads and their objects, secrets, exec and the like. */
const aggregateToEdit = [
  rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], read),
  rule([""], ["serviceaccounts"], ["impersonate"]),
  rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], write),
  rule([""], ["pods/eviction"], ["create"]),
  rule([""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"], write),
  rule([""], ["serviceaccounts/token"], ["create"]),
  rule(["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"], write),
  rule(["autoscaling"], ["horizontalpodautoscalers"], write),
  rule(["batch"], ["cronjobs", "jobs"], write),
  rule(["policy"], ["poddisruptionbudgets"], write),
  rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], write),
  rule(["coordination.k8s.io"], ["leases"], [...write, ...read].sort()),
];

/** `view`: reading the namespace's objects, but not its secrets. */
const aggregateToView = [
  rule([""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"], read),
  rule([""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status", "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"], read),
  rule([""], ["namespaces"], read),
  rule(["discovery.k8s.io"], ["endpointslices"], read),
  rule(["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"], read),
  rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], read),
  rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], read),
  rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], read),
  rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], read),
];

const discoveryURLs = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"];

/** The bootstrap ClusterRoles and bindings RBAC rests on, made when absent (see the top of this file). */
export function createBootstrapPolicy(store: Store): void {
  const role = (name: string, rules: PolicyRule[]) => ({ apiVersion: rbac, kind: "ClusterRole", metadata: { name, labels: { "kubernetes.io/bootstrapping": "rbac-defaults" }, annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" } }, rules });
  const binding = (name: string, group: string) => ({
    apiVersion: rbac,
    kind: "ClusterRoleBinding",
    metadata: { name, labels: { "kubernetes.io/bootstrapping": "rbac-defaults" }, annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" } },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
  });
  // An aggregated role is stored with the rules the aggregation controller would have filled in at start; authorizing
  // reads them afresh from the roles its selectors pick.
  const aggregated = (name: string, from: string, rules: PolicyRule[], labels: Record<string, string> = {}) => {
    const base = role(name, rules);
    return { ...base, metadata: { ...base.metadata, labels: { ...base.metadata.labels, ...labels } }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [`rbac.authorization.k8s.io/aggregate-to-${from}`]: "true" } }] } };
  };
  const part = (name: string, to: string, rules: PolicyRule[]) => {
    const base = role(name, rules);
    return { ...base, metadata: { ...base.metadata, labels: { ...base.metadata.labels, [`rbac.authorization.k8s.io/aggregate-to-${to}`]: "true" } } };
  };
  const objects = [
    aggregated("admin", "admin", [...aggregateToAdmin, ...aggregateToEdit, ...aggregateToView]),
    aggregated("edit", "edit", [...aggregateToEdit, ...aggregateToView], { "rbac.authorization.k8s.io/aggregate-to-admin": "true" }),
    aggregated("view", "view", aggregateToView, { "rbac.authorization.k8s.io/aggregate-to-edit": "true" }),
    part("system:aggregate-to-admin", "admin", aggregateToAdmin),
    part("system:aggregate-to-edit", "edit", aggregateToEdit),
    part("system:aggregate-to-view", "view", aggregateToView),
    role("cluster-admin", [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }, { nonResourceURLs: ["*"], verbs: ["*"] }]),
    binding("cluster-admin", "system:masters"),
    role("system:discovery", [{ nonResourceURLs: discoveryURLs, verbs: ["get"] }]),
    binding("system:discovery", "system:authenticated"),
    role("system:basic-user", [
      { apiGroups: ["authorization.k8s.io"], resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], verbs: ["create"] },
      { apiGroups: ["authentication.k8s.io"], resources: ["selfsubjectreviews"], verbs: ["create"] },
    ]),
    binding("system:basic-user", "system:authenticated"),
    role("system:public-info-viewer", [{ nonResourceURLs: ["/healthz", "/livez", "/readyz", "/version", "/version/"], verbs: ["get"] }]),
    binding("system:public-info-viewer", "system:authenticated"),
  ];
  for (const object of objects) {
    const exists = store.list({ apiVersion: rbac, kind: object.kind, fieldSelector: `metadata.name=${object.metadata.name}` }).items.length > 0;
    if (!exists) store.create(object as unknown as KubeObject);
  }
}
