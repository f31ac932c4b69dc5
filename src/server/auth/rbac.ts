// Who a request is and what it may do, as kube-apiserver with `--authorization-mode=RBAC` decides it.
//
// Identities: the holder of the server's token is `settle-admin` in `system:masters` (allowed everything, as a
// cluster's admin certificate is); a service account token the server minted (`kubectl create token`, the
// TokenRequest API; HS256-signed with a key derived from the server's token, so only this server's tokens count) is
// `system:serviceaccount:<namespace>:<name>` while the account exists with the uid it was minted for; and a request
// that impersonates (`kubectl --as`, `--as-group`: the `Impersonate-*` headers, allowed to `system:masters` only) is
// the impersonated user, in `system:authenticated`. Every identity but `system:masters` is checked against the
// Roles, ClusterRoles and their bindings in the store, with the real matching rules (verbs, API groups, resources and
// `*/subresource`, resource names, non-resource URLs, aggregated ClusterRoles), and refused with the real 403 text.
// The server starts with the bootstrap roles every cluster has for this: `cluster-admin` (bound to `system:masters`),
// `system:discovery`, `system:basic-user` and `system:public-info-viewer` (bound to `system:authenticated`), and the
// user-facing `admin`, `edit` and `view`, aggregated from `system:aggregate-to-*` with the real rules. Leaves out:
// the controllers' and nodes' bootstrap roles, escalation checks on writing roles and bindings, user `extra` fields.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
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

/**
 * The user `req` impersonates, or `user` itself when it impersonates nobody. Only `system:masters` may impersonate
 * (403 for anyone else, in the real words); groups given without a user are a 400 as on a real server.
 */
export function impersonated(req: IncomingMessage, user: UserInfo): UserInfo {
  const headers = req.headersDistinct;
  const name = headers["impersonate-user"]?.[0];
  const groups = headers["impersonate-group"] ?? [];
  if (name === undefined) {
    if (groups.length > 0 || headers["impersonate-uid"] !== undefined) throw new ApiError("BadRequest", 400, "requested [Impersonate-Group Impersonate-Uid] without impersonating a user");
    return user;
  }
  if (!isMaster(user)) {
    throw new ApiError("Forbidden", 403, `users "${name}" is forbidden: User "${user.username}" cannot impersonate resource "users" in API group "" at the cluster scope`, { name, group: "", kind: "users" });
  }
  const account = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(name);
  const own = groups.length === 0 && account !== null ? serviceAccountGroups(account[1]!) : [...groups];
  if (name !== "system:anonymous" && !own.includes("system:authenticated")) own.push("system:authenticated");
  const uid = headers["impersonate-uid"]?.[0];
  return { username: name, ...(uid === undefined ? {} : { uid }), groups: own };
}

// ---- Authorization -------------------------------------------------------------------------------------------

/** What a request asks to do: a verb on a resource (its group, plural, subresource, namespace, name) or on a path. */
export interface RequestAttributes {
  verb: string;
  resource?: { group: string; plural: string; subresource?: string | undefined; namespace?: string | undefined; name?: string | undefined };
  path?: string;
}

interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

type Role = KubeObject & { rules?: PolicyRule[]; aggregationRule?: { clusterRoleSelectors?: LabelSelector[] } };
type Binding = KubeObject & { roleRef?: { kind?: string; name?: string }; subjects?: Array<{ kind?: string; name?: string; namespace?: string }> };

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

function roleRules(store: Store, binding: Binding, namespace: string | undefined): PolicyRule[] {
  const ref = binding.roleRef;
  if (ref?.name === undefined) return [];
  if (ref.kind === "Role") {
    if (namespace === undefined) return [];
    const role = store.list({ apiVersion: rbac, kind: "Role", namespace, fieldSelector: `metadata.name=${ref.name}` }).items[0] as Role | undefined;
    return role?.rules ?? [];
  }
  return clusterRoleRules(store, ref.name);
}

/**
 * A ClusterRole's rules; an aggregated one's are those of the ClusterRoles its selectors pick (aggregated ones in
 * turn: `edit` picks `view`), as the aggregation controller fills them.
 */
function clusterRoleRules(store: Store, name: string): PolicyRule[] {
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

/** The 403 a real server answers a request RBAC refuses. */
export function forbidden(user: UserInfo, a: RequestAttributes): ApiError {
  if (a.resource === undefined) return new ApiError("Forbidden", 403, `forbidden: User "${user.username}" cannot ${a.verb} path "${a.path ?? ""}"`, {});
  const { group, plural, subresource, namespace, name } = a.resource;
  const resource = subresource === undefined ? plural : `${plural}/${subresource}`;
  const what = name === undefined || name === "" ? resource : `${resource} "${name}"`;
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
