// Escalation prevention on writes of Roles, ClusterRoles and their bindings, as kube-apiserver's RBAC storage does
// it: RBAC alone would let anyone who may write a role or a binding grant itself (or anyone) any permission.
//
// The rule, as Kubernetes states it:
//   - A Role or ClusterRole may be created or updated only by a user who already holds every permission its rules
//     grant (where the role applies: the role's namespace, or cluster-wide for a ClusterRole), or who may `escalate`
//     that role. Setting a ClusterRole's aggregationRule (which can gather any rule) needs every permission there is.
//   - A RoleBinding or ClusterRoleBinding may be created or updated only by a user who holds every permission of the
//     role it refers to (in the binding's namespace: a RoleBinding to a ClusterRole grants the ClusterRole's rules in
//     that namespace only, so that is where the writer must hold them), or who may `bind` that role (the `bind` verb
//     on `roles` or `clusterroles`, with its name as resource name, in the binding's namespace).
//   - `system:masters` is never checked; an update that changes nothing but the fields garbage collection writes
//     (owner references, finalizers) is not checked either.
// "Holds" means the writer's own rules, aggregated ClusterRoles included, cover the role's rules one by one: each
// (API group, resource, verb, resource name) or (URL, verb) of the role must be allowed by one rule of the writer's.
// The refusal is a 403 naming the permissions missing, grouped per resource, in the words kube-apiserver uses.
import { assert } from "../../api/assert.ts";
import { ApiError } from "../../api/errors.ts";
import { isRecord, jsonEqual } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import type { Store } from "../../store/index.ts";
import { allowed, clusterRoleRules, isMaster, roleNamed, rulesOf } from "./rbac.ts";
import type { Binding, PolicyRule, Role, UserInfo } from "./rbac.ts";

const rbacGroup = "rbac.authorization.k8s.io";
const rolePlurals = new Set(["roles", "clusterroles"]);
const bindingPlurals = new Set(["rolebindings", "clusterrolebindings"]);

/** A write the escalation check judges: who writes which RBAC object, where, and the object before and after. */
export interface RbacWrite {
  user: UserInfo;
  /** `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`. */
  plural: string;
  /** The request's namespace; undefined for the cluster-scoped kinds. */
  namespace: string | undefined;
  /** The request's name; undefined for a create (a POST to the collection names no object). */
  name: string | undefined;
  /** The stored object an update replaces; undefined for a create. */
  old: KubeObject | undefined;
  /** The object as it would be stored. */
  object: KubeObject;
}

/** True when a write to `plural` of `group` is one the escalation check judges. */
export function isRbacWrite(group: string, plural: string): boolean {
  return group === rbacGroup && (rolePlurals.has(plural) || bindingPlurals.has(plural));
}

/** Throws the 403 kube-apiserver answers when `write` would grant permissions its writer does not hold. */
export function confirmNoEscalation(store: Store, write: RbacWrite): void {
  assert(isRbacWrite(rbacGroup, write.plural), "escalation: an RBAC kind");
  assert(write.object.metadata !== undefined, "escalation: the object has metadata");
  if (isMaster(write.user)) return;
  if (write.old !== undefined && onlyGcFieldsChange(write.old, write.object)) return;
  if (rolePlurals.has(write.plural)) confirmRole(store, write);
  else confirmBinding(store, write);
}

function confirmRole(store: Store, write: RbacWrite): void {
  const { user, plural, namespace, name } = write;
  const escalate = { verb: "escalate", resource: { group: rbacGroup, plural, namespace, name } };
  if (allowed(store, user, escalate)) return;
  const role = write.object as Role;
  const held = rulesOf(store, user, namespace);
  confirmCovered(held, role.rules ?? [], write);
  const aggregation = role.aggregationRule;
  const oldAggregation = (write.old as Role | undefined)?.aggregationRule;
  if (plural === "clusterroles" && aggregation != null && !jsonEqual(aggregation, oldAggregation)) {
    // A selector can gather any rule of any role to come: only who holds every permission may set one.
    if (missingRules(held, fullAuthority).length > 0) throw forbiddenWrite(write, "must have cluster-admin privileges to use the aggregationRule");
  }
}

const fullAuthority: PolicyRule[] = [
  { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
  { verbs: ["*"], nonResourceURLs: ["*"] },
];

function confirmBinding(store: Store, write: RbacWrite): void {
  const { user, namespace } = write;
  const ref = (write.object as Binding).roleRef;
  const kind = ref?.kind;
  const roleName = ref?.name ?? "";
  if (kind !== "Role" && kind !== "ClusterRole") throw forbiddenWrite(write, `unknown role kind ${JSON.stringify(kind ?? "")}`);
  const resource = kind === "Role" ? "roles" : "clusterroles";
  const bind = { verb: "bind", resource: { group: rbacGroup, plural: resource, namespace, name: roleName } };
  if (allowed(store, user, bind)) return;
  const role = kind === "Role" ? roleNamed(store, "Role", roleName, namespace ?? "") : roleNamed(store, "ClusterRole", roleName);
  if (role === undefined) throw forbiddenWrite(write, `${resource}.${rbacGroup} ${JSON.stringify(roleName)} not found`);
  const granted = kind === "Role" ? (role.rules ?? []) : clusterRoleRules(store, roleName);
  confirmCovered(rulesOf(store, user, namespace), granted, write);
}

/** Throws when `held` does not cover every rule of `granted`, naming what is missing. */
function confirmCovered(held: readonly PolicyRule[], granted: readonly PolicyRule[], write: RbacWrite): void {
  const missing = missingRules(held, granted);
  if (missing.length === 0) return;
  const descriptions = [...new Set(compactRules(missing).map(describeRule))].sort();
  const groups = `[${write.user.groups.map((g) => JSON.stringify(g)).join(" ")}]`;
  throw forbiddenWrite(write, `user ${JSON.stringify(write.user.username)} (groups=${groups}) is attempting to grant RBAC permissions not currently held:\n${descriptions.join("\n")}`);
}

/** The 403 of a refused RBAC write: `<plural>.rbac.authorization.k8s.io "<name>" is forbidden: <why>`. */
function forbiddenWrite(write: RbacWrite, why: string): ApiError {
  const name = write.object.metadata.name ?? "";
  const what = name === "" ? `${write.plural}.${rbacGroup}` : `${write.plural}.${rbacGroup} ${JSON.stringify(name)}`;
  return new ApiError("Forbidden", 403, `${what} is forbidden: ${why}`, { ...(name === "" ? {} : { name }), group: rbacGroup, kind: write.plural });
}

// ---- Coverage ----------------------------------------------------------------------------------------------

/** The single-permission rules of `granted` that no rule of `held` covers, in the order `granted` lists them. */
export function missingRules(held: readonly PolicyRule[], granted: readonly PolicyRule[]): PolicyRule[] {
  const missing: PolicyRule[] = [];
  for (const rule of granted) {
    for (const one of breakdown(rule)) if (!held.some((owner) => covers(owner, one))) missing.push(one);
  }
  return missing;
}

/** A rule as the single permissions it grants: one (group, resource, verb[, name]) or one (URL, verb) each. */
function breakdown(rule: PolicyRule): PolicyRule[] {
  const verbs = rule.verbs ?? [];
  const names = rule.resourceNames ?? [];
  const out: PolicyRule[] = [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of verbs) {
        if (names.length === 0) out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
        for (const name of names) out.push({ apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [name] });
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
  return out;
}

/** True when `owner` grants the single permission `one` (see `breakdown`). A `*` the role asks for needs a `*`. */
function covers(owner: PolicyRule, one: PolicyRule): boolean {
  const all = (set: readonly string[] | undefined, wanted: readonly string[] | undefined) => (set ?? []).includes("*") || (wanted ?? []).every((w) => (set ?? []).includes(w));
  if (!all(owner.verbs, one.verbs) || !all(owner.apiGroups, one.apiGroups)) return false;
  if (!resourcesCover(owner.resources ?? [], one.resources ?? [])) return false;
  if (!(one.nonResourceURLs ?? []).every((url) => (owner.nonResourceURLs ?? []).some((o) => urlCovers(o, url)))) return false;
  const ownerNames = owner.resourceNames ?? [];
  return ownerNames.length === 0 || ((one.resourceNames ?? []).length > 0 && (one.resourceNames ?? []).every((n) => ownerNames.includes(n)));
}

// Resources covered: a star, the same name, or for a subresource a star with that subresource (star-slash-status
// covers pods/status).
function resourcesCover(owner: readonly string[], wanted: readonly string[]): boolean {
  if (owner.includes("*")) return true;
  return wanted.every((resource) => {
    if (owner.includes(resource)) return true;
    const slash = resource.indexOf("/");
    return slash >= 0 && owner.includes(`*${resource.slice(slash)}`);
  });
}

function urlCovers(owner: string, url: string): boolean {
  return owner === url || (owner.endsWith("*") && url.startsWith(owner.replace(/\*+$/, "")));
}

/** Single-permission rules on one resource (and at most one name) merged into one rule with their verbs. */
function compactRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const merged = new Map<string, PolicyRule>();
  const out: PolicyRule[] = [];
  for (const rule of rules) {
    const simple = (rule.nonResourceURLs ?? []).length === 0 && (rule.apiGroups ?? []).length === 1 && (rule.resources ?? []).length === 1 && (rule.resourceNames ?? []).length <= 1;
    if (!simple) {
      out.push(rule);
      continue;
    }
    const key = JSON.stringify([rule.apiGroups, rule.resources, rule.resourceNames ?? null]);
    const existing = merged.get(key);
    if (existing === undefined) merged.set(key, { ...rule, verbs: [...(rule.verbs ?? [])] });
    else existing.verbs!.push(...(rule.verbs ?? []));
  }
  return [...out, ...merged.values()];
}

/** A rule as kube-apiserver prints it in this refusal: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`. */
function describeRule(rule: PolicyRule): string {
  const list = (values: readonly string[]) => `[${values.map((v) => JSON.stringify(v)).join(" ")}]`;
  const parts: string[] = [];
  if ((rule.apiGroups ?? []).length > 0) parts.push(`APIGroups:${list(rule.apiGroups!)}`);
  if ((rule.resources ?? []).length > 0) parts.push(`Resources:${list(rule.resources!)}`);
  if ((rule.nonResourceURLs ?? []).length > 0) parts.push(`NonResourceURLs:${list(rule.nonResourceURLs!)}`);
  if ((rule.resourceNames ?? []).length > 0) parts.push(`ResourceNames:${list(rule.resourceNames!)}`);
  if ((rule.verbs ?? []).length > 0) parts.push(`Verbs:${list(rule.verbs!)}`);
  return `{${parts.join(", ")}}`;
}

// ---- Updates that only garbage collection makes ----------------------------------------------------------------

/** Metadata a write may change without the escalation check: what garbage collection and the server write. */
const gcMetadata = ["ownerReferences", "finalizers", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "managedFields", "generation", "uid", "creationTimestamp"];

/** True when `next` differs from `old` only in owner references, finalizers and what the server sets itself. */
function onlyGcFieldsChange(old: KubeObject, next: KubeObject): boolean {
  const strip = (object: KubeObject) => {
    const metadata: Record<string, unknown> = isRecord(object.metadata) ? { ...object.metadata } : {};
    for (const key of gcMetadata) delete metadata[key];
    return { ...object, metadata };
  };
  return jsonEqual(strip(old), strip(next));
}
