// Audit events, as kube-apiserver writes them to `--audit-log-path` under `--audit-policy-file`: one
// `audit.k8s.io/v1` Event per JSON line, for each request the policy's first matching rule gives a level other than
// None, at the stages it does not omit: `RequestReceived` once the request is authenticated and routed,
// `ResponseStarted` when a watch's headers go out (kube-apiserver's stage for long-running requests), and
// `ResponseComplete` once the answer is sent (a watch's when it ends). Each event carries what the Metadata level
// records: the audit ID (also the answer's `Audit-Id` header), stage, request URI, verb, user (and the impersonated
// user), source IPs, user agent, object reference, response status (its code; for a failure the Status's status,
// reason and message) and the two timestamps.
//
// What settle leaves out: request and response bodies (a rule asking for Request or RequestResponse gets Metadata
// events, their `level` saying Metadata), the `Panic` stage, log rotation
// (`--audit-log-max*` are taken without effect), and the webhook backend.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock } from "../api/clock.ts";
import { isRecord } from "../api/json.ts";
import type { UserInfo } from "./auth/rbac.ts";

/** The stages settle records, in kube-apiserver's names. */
const stages = ["RequestReceived", "ResponseStarted", "ResponseComplete"] as const;
type Stage = (typeof stages)[number];

const levels = ["None", "Metadata", "Request", "RequestResponse"] as const;
type Level = (typeof levels)[number];

interface PolicyRule {
  level: Level;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: Array<{ group?: string; resources?: string[]; resourceNames?: string[] }>;
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: string[];
}

/** An audit policy (`audit.k8s.io/v1` Policy): its rules in order, and the stages every event omits. */
export interface AuditPolicy {
  rules: PolicyRule[];
  omitStages: string[];
}

/** What a request is, as the policy and the event see it. */
export interface AuditedRequest {
  verb: string;
  user: UserInfo | undefined;
  impersonated: UserInfo | undefined;
  /** A resource request's object reference; undefined for other paths. */
  resource?: { group: string; version: string; plural: string; namespace: string | undefined; name: string | undefined; subresource: string | undefined };
  path: string;
}

/**
 * Reads an audit policy document (YAML parsed already): `rules` each with a `level` of None, Metadata, Request or
 * RequestResponse. Throws an Error naming the field for anything else.
 */
export function parseAuditPolicy(document: unknown): AuditPolicy {
  if (!isRecord(document) || document.kind !== "Policy" || !/^audit\.k8s\.io\/v1(beta1)?$/.test(String(document.apiVersion))) {
    throw new Error('expected an audit policy: apiVersion "audit.k8s.io/v1", kind "Policy"');
  }
  if (!Array.isArray(document.rules)) throw new Error("rules: expected a list of rules");
  const rules = document.rules.map((rule, i): PolicyRule => {
    if (!isRecord(rule) || !levels.includes(rule.level as Level)) throw new Error(`rules[${i}].level: expected one of ${levels.join(", ")}`);
    for (const field of ["users", "userGroups", "verbs", "namespaces", "nonResourceURLs", "omitStages"]) {
      if (rule[field] !== undefined && !(Array.isArray(rule[field]) && (rule[field] as unknown[]).every((v) => typeof v === "string"))) throw new Error(`rules[${i}].${field}: expected a list of strings`);
    }
    if (rule.resources !== undefined && !(Array.isArray(rule.resources) && rule.resources.every(isRecord))) throw new Error(`rules[${i}].resources: expected a list of group resources`);
    return rule as unknown as PolicyRule;
  });
  const omitStages = Array.isArray(document.omitStages) ? document.omitStages.filter((s): s is string => typeof s === "string") : [];
  return { rules, omitStages };
}

const has = (list: readonly string[] | undefined, value: string) => list === undefined || list.length === 0 || list.includes(value) || list.includes("*");

/** Whether a rule matches a request, as kube-apiserver's policy checker reads the rule's fields. */
function ruleMatches(rule: PolicyRule, a: AuditedRequest): boolean {
  const user = a.user;
  if (rule.users !== undefined && rule.users.length > 0 && !rule.users.includes(user?.username ?? "")) return false;
  if (rule.userGroups !== undefined && rule.userGroups.length > 0 && !(user?.groups ?? []).some((g) => rule.userGroups!.includes(g))) return false;
  if (!has(rule.verbs, a.verb)) return false;
  if (a.resource === undefined) {
    if ((rule.resources ?? []).length > 0 || (rule.namespaces ?? []).length > 0) return false;
    const urls = rule.nonResourceURLs ?? [];
    return urls.length === 0 || urls.some((url) => url === "*" || url === a.path || (url.endsWith("*") && a.path.startsWith(url.slice(0, -1))));
  }
  if ((rule.nonResourceURLs ?? []).length > 0) return false;
  const r = a.resource;
  if (!has(rule.namespaces, r.namespace ?? "")) return false;
  const groups = rule.resources ?? [];
  if (groups.length === 0) return true;
  const full = r.subresource === undefined ? r.plural : `${r.plural}/${r.subresource}`;
  return groups.some((g) => {
    if ((g.group ?? "") !== r.group && g.group !== "*") return false;
    const names = g.resources ?? [];
    const named = names.length === 0 || names.some((n) => n === "*" || n === full || (n === "*/" + r.subresource && r.subresource !== undefined) || (n === `${r.plural}/*` && r.subresource !== undefined));
    return named && ((g.resourceNames ?? []).length === 0 || g.resourceNames!.includes(r.name ?? ""));
  });
}

/** An RFC 3339 time with microseconds, as audit events carry it. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** The events of one request: made when it arrives, completed when its answer is sent. */
export class AuditTrail {
  readonly #auditor: Auditor;
  readonly #id = randomUUID();
  readonly #received: number;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  #request: AuditedRequest | undefined;
  #level: Level = "None";
  #omitted: readonly string[] = [];
  #failure: { status?: string; reason: string; message: string; code: number } | undefined;
  #done = false;

  constructor(auditor: Auditor, req: IncomingMessage, res: ServerResponse) {
    this.#auditor = auditor;
    this.#req = req;
    this.#res = res;
    this.#received = auditor.clock.now();
    res.setHeader("Audit-Id", this.#id);
    res.once("close", () => this.#complete(res.statusCode));
  }

  /** The request, authenticated and routed: the policy decides its level, and `RequestReceived` is written. */
  identify(request: AuditedRequest): void {
    this.#request = request;
    const rule = this.#auditor.policy.rules.find((r) => ruleMatches(r, request));
    this.#level = rule?.level ?? "None";
    this.#omitted = [...this.#auditor.policy.omitStages, ...(rule?.omitStages ?? [])];
    this.#write("RequestReceived", undefined);
    if (request.verb === "watch") this.#onHeaders((code) => this.#write("ResponseStarted", code));
  }

  /** Calls `started` with the status code when the answer's headers are written (once). */
  #onHeaders(started: (code: number) => void): void {
    const res = this.#res;
    const writeHead = res.writeHead;
    res.writeHead = ((...args: Parameters<typeof writeHead>) => {
      res.writeHead = writeHead;
      started(args[0]);
      return writeHead.apply(res, args);
    }) as typeof writeHead;
  }

  /** The request failed with this Status: its `ResponseComplete` event says so. */
  failed(status: { status?: string; reason: string; message: string; code: number }): void {
    this.#failure = status;
  }

  #complete(code: number): void {
    if (this.#done) return;
    this.#done = true;
    // A request that failed before it was identified (no credentials, a path that does not parse) is still audited.
    if (this.#request === undefined) this.identify({ verb: (this.#req.method ?? "GET").toLowerCase(), user: undefined, impersonated: undefined, path: (this.#req.url ?? "/").split("?")[0]! });
    this.#write("ResponseComplete", code);
  }

  #write(stage: Stage, code: number | undefined): void {
    const a = this.#request!;
    if (this.#level === "None" || this.#omitted.includes(stage)) return;
    const event: Record<string, unknown> = {
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Metadata",
      auditID: this.#id,
      stage,
      requestURI: this.#req.url ?? "/",
      verb: a.verb,
      user: a.user === undefined ? {} : { username: a.user.username, ...(a.user.uid === undefined ? {} : { uid: a.user.uid }), groups: a.user.groups },
    };
    if (a.impersonated !== undefined) event.impersonatedUser = { username: a.impersonated.username, groups: a.impersonated.groups };
    event.sourceIPs = [(this.#req.socket.remoteAddress ?? "").replace(/^::ffff:/, "")];
    const agent = this.#req.headers["user-agent"];
    if (agent !== undefined) event.userAgent = agent;
    if (a.resource !== undefined) {
      const r = a.resource;
      event.objectRef = {
        resource: r.plural,
        ...(r.namespace === undefined ? {} : { namespace: r.namespace }),
        ...(r.name === undefined ? {} : { name: r.name }),
        ...(r.group === "" ? {} : { apiGroup: r.group }),
        apiVersion: r.version,
        ...(r.subresource === undefined ? {} : { subresource: r.subresource }),
      };
    }
    if (code !== undefined) {
      const failure = this.#failure;
      event.responseStatus = failure === undefined || code < 400 ? { metadata: {}, code } : { metadata: {}, status: failure.status ?? "Failure", message: failure.message, ...(failure.reason === "" ? {} : { reason: failure.reason }), code };
    }
    event.requestReceivedTimestamp = microTime(this.#received);
    event.stageTimestamp = microTime(stage === "RequestReceived" ? this.#received : this.#auditor.clock.now());
    this.#auditor.write(`${JSON.stringify(event)}\n`);
  }
}

/** The server's auditing: the policy, where events go, and the clock their times come from. */
export class Auditor {
  constructor(
    readonly policy: AuditPolicy,
    readonly write: (line: string) => void,
    readonly clock: Clock,
  ) {}

  /** Starts the trail of a request as it arrives. */
  begin(req: IncomingMessage, res: ServerResponse): AuditTrail {
    return new AuditTrail(this, req, res);
  }
}
