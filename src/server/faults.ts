// Faults on demand while serving, in the simulator's fault model and words: `stale-read`, `delay-watch`,
// `close-watch`, `fail-request`, `lost-response`. They are armed from a `--faults` file or through the authenticated
// control endpoint `/settle/faults`, and each hits the requests it matches (verb, resource, namespace, name),
// `count` times, in arrival order: no randomness, so a drill that arms the same faults sees the same behaviour.
import { badRequest, invalid, tooManyRequests } from "../api/errors.ts";
import type { ApiError, FieldError } from "../api/errors.ts";
import { faultCountParam, faultIntegerParam, faultParamError, faultParamErrors, faultParams, injectedRequestError, isServerFaultKind, serverFaultKinds } from "../api/faults.ts";
import type { FailCode, ServerFaultKind } from "../api/faults.ts";
import { isRecord } from "../api/json.ts";

export { serverFaultKinds };
export type { ServerFaultKind };
export const faultVerbs = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"] as const;
export type FaultVerb = (typeof faultVerbs)[number];

/** A request fault: one of the shared model's kinds (`api/faults.ts`), its parameters, and which requests it hits. */
export interface FaultSpec {
  kind: ServerFaultKind;
  /** Only requests with this verb. Default: any (stale-read: list and watch; lost-response: any but watch). */
  verb?: FaultVerb;
  /** Only this REST resource (plural, e.g. `configmaps`). Default: any. */
  resource?: string;
  namespace?: string;
  name?: string;
  /** How many matching requests it hits before it is spent. Default 1 (see `faultCountParam`). */
  count?: number;
  /** stale-read: how many revisions the lagging cache is behind. Default 1. */
  lagRevisions?: number;
  /** delay-watch: how long events on the matching open watches are held. Default 1000. */
  delayMs?: number;
  /** fail-request: 409, 429, 500 or 504. Default 500. */
  code?: FailCode;
  /** close-watch: 1 fails the watch with a 410 Expired ERROR event instead of ending it. Default 0. */
  expired?: 0 | 1;
}

export interface ArmedFault extends FaultSpec {
  id: number;
  /** Requests (or watches) it has hit so far. */
  hits: number;
}

export const faultsArmedMax = 1000;
/** The fields that say which requests a fault hits; the rest of a spec is its kind and parameters. */
const matchFields = ["verb", "resource", "namespace", "name"] as const;
/**
 * Every field a spec may carry. A parameter of another server kind is accepted and ignored, as it always was; one only
 * the simulator models (a per-kind stale relist needs one watch cache per kind) is an unsupported field.
 */
const specFields = new Set<string>(["kind", ...matchFields, faultCountParam.name, ...serverFaultKinds.flatMap((kind) => faultParams[kind].filter((p) => p.simulatorOnly !== true).map((p) => p.name))]);
const matchValueLengthMax = 253;

/** Checks and normalizes fault specs from a file or a request body: a list, one spec, or `{faults: [...]}`. */
export function parseFaultSpecs(value: unknown): FaultSpec[] {
  const list = Array.isArray(value) ? value : isRecord(value) && Array.isArray(value.faults) ? value.faults : [value];
  const errors: FieldError[] = [];
  const specs: FaultSpec[] = [];
  list.forEach((item, i) => {
    if (!isRecord(item)) return void errors.push({ field: `faults[${i}]`, type: "FieldValueInvalid", message: "Invalid value: a fault must be an object" });
    errors.push(...specErrors(item, `faults[${i}]`));
    specs.push(item as unknown as FaultSpec);
  });
  if (errors.length > 0) throw invalid("Faults", "", errors, "settle.dev");
  if (specs.length > faultsArmedMax) throw badRequest(`at most ${faultsArmedMax} faults may be armed at once`);
  return specs;
}

/** The field errors of one spec: unknown fields, then its kind, matchers, count and parameters. */
function specErrors(item: Record<string, unknown>, path: string): FieldError[] {
  const at = (field: string) => `${path}.${field}`;
  const errors: FieldError[] = [];
  for (const key of Object.keys(item)) if (!specFields.has(key)) errors.push({ field: at(key), type: "FieldValueNotSupported", message: "Unsupported field" });
  if (!isServerFaultKind(item.kind)) errors.push({ field: at("kind"), type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(item.kind)}: supported values: ${serverFaultKinds.join(", ")}` });
  if (item.verb !== undefined && !faultVerbs.includes(item.verb as FaultVerb)) errors.push({ field: at("verb"), type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(item.verb)}` });
  for (const field of matchFields.slice(1)) {
    const v = item[field];
    if (v !== undefined && (typeof v !== "string" || v.length > matchValueLengthMax)) errors.push({ field: at(field), type: "FieldValueInvalid", message: `Invalid value: must be a string of at most ${matchValueLengthMax} characters` });
  }
  const count = item[faultCountParam.name];
  const countError = count === undefined ? undefined : faultParamError(faultCountParam, count, at(faultCountParam.name));
  if (countError !== undefined) errors.push(countError);
  // Every parameter is checked against its own kind's definition, whatever the spec's kind: a bad value is an
  // error even where it would be ignored, so that a typo in a kind never hides a typo in a value.
  for (const kind of serverFaultKinds) errors.push(...faultParamErrors(kind, item, path));
  return errors;
}

export interface RequestTarget {
  verb: FaultVerb;
  resource: string;
  namespace: string | undefined;
  name: string | undefined;
}

function matches(fault: FaultSpec, t: RequestTarget): boolean {
  if (fault.verb !== undefined && fault.verb !== t.verb) return false;
  if (fault.resource !== undefined && fault.resource !== t.resource) return false;
  if (fault.namespace !== undefined && fault.namespace !== t.namespace) return false;
  return fault.name === undefined || fault.name === t.name;
}

/** What a request must suffer, decided when it arrives. */
export interface RequestFaults {
  /** Serve this `resourceVersion=0` list or watch at this many revisions behind. */
  lagRevisions?: number;
  /** Carry the request out, then drop the connection instead of answering. */
  loseResponse?: boolean;
}

export class FaultTable {
  #armed: ArmedFault[] = [];
  #nextId = 1;

  get armed(): readonly ArmedFault[] {
    return this.#armed;
  }

  /** Arms request faults; returns the ones that act at once (close-watch, delay-watch) for the caller to apply. */
  arm(specs: readonly FaultSpec[]): { immediate: ArmedFault[]; armed: ArmedFault[] } {
    if (this.#armed.length + specs.length > faultsArmedMax) throw tooManyRequests(`at most ${faultsArmedMax} faults may be armed at once`);
    const immediate: ArmedFault[] = [];
    const armed: ArmedFault[] = [];
    for (const spec of specs) {
      const fault: ArmedFault = { ...spec, id: this.#nextId++, hits: 0 };
      if (spec.kind === "close-watch" || spec.kind === "delay-watch") immediate.push(fault);
      else {
        this.#armed.push(fault);
        armed.push(fault);
      }
    }
    return { immediate, armed };
  }

  clear(): number {
    const n = this.#armed.length;
    this.#armed = [];
    return n;
  }

  #take(kind: ServerFaultKind, t: RequestTarget, applies: (f: ArmedFault) => boolean): ArmedFault | undefined {
    const fault = this.#armed.find((f) => f.kind === kind && matches(f, t) && applies(f));
    if (fault === undefined) return undefined;
    fault.hits++;
    if (fault.hits >= (fault.count ?? faultCountParam.default)) this.#armed = this.#armed.filter((f) => f !== fault);
    return fault;
  }

  /**
   * The faults a request meets: a failure is thrown (the store is not touched); a stale read and a lost response
   * are returned for the handler. `cachedRead` is true for `resourceVersion=0` lists and watches, the only reads a
   * real server serves from its (possibly lagging) watch cache.
   */
  onRequest(t: RequestTarget, cachedRead: boolean): RequestFaults {
    if (this.#armed.length === 0) return {};
    const fail = this.#take("fail-request", t, () => true);
    if (fail !== undefined) throw failure(fail.code ?? faultIntegerParam("fail-request", "code").default, t);
    const out: RequestFaults = {};
    if (cachedRead) {
      const stale = this.#take("stale-read", t, (f) => f.verb !== undefined || t.verb === "list" || t.verb === "watch");
      if (stale !== undefined) out.lagRevisions = stale.lagRevisions ?? faultIntegerParam("stale-read", "lagRevisions").default;
    }
    if (t.verb !== "watch" && this.#take("lost-response", t, () => true) !== undefined) out.loseResponse = true;
    return out;
  }

  /** Whether a close-watch or delay-watch fault concerns a watch on this target. */
  static concerns(fault: FaultSpec, t: Omit<RequestTarget, "verb">): boolean {
    return matches({ ...fault, verb: undefined }, { ...t, verb: "watch" });
  }
}

/** The error of a `fail-request` fault, in the server's words (kube-apiserver's, marked as injected). */
function failure(code: number, t: RequestTarget): ApiError {
  return injectedRequestError(code, { wording: "server", resource: t.resource, name: t.name });
}
