// Faults on demand while serving, in the simulator's fault model and words: `stale-read`, `delay-watch`,
// `close-watch`, `fail-request`, `lost-response`. They are armed from a `--faults` file or through the authenticated
// control endpoint `/settle/faults`, and each hits the requests it matches (verb, resource, namespace, name),
// `count` times, in arrival order: no randomness, so a drill that arms the same faults sees the same behaviour.
import { ApiError, badRequest, internalError, invalid, tooManyRequests } from "../api/errors.ts";
import type { FieldError } from "../api/errors.ts";

export const serverFaultKinds = ["stale-read", "delay-watch", "close-watch", "fail-request", "lost-response"] as const;
export type ServerFaultKind = (typeof serverFaultKinds)[number];
export const faultVerbs = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"] as const;
export type FaultVerb = (typeof faultVerbs)[number];

export interface FaultSpec {
  kind: ServerFaultKind;
  /** Only requests with this verb. Default: any (stale-read: list and watch; lost-response: any but watch). */
  verb?: FaultVerb;
  /** Only this REST resource (plural, e.g. `configmaps`). Default: any. */
  resource?: string;
  namespace?: string;
  name?: string;
  /** How many matching requests it hits before it is spent. Default 1. */
  count?: number;
  /** stale-read: how many revisions the lagging cache is behind. Default 1. */
  lagRevisions?: number;
  /** delay-watch: how long events on the matching open watches are held. Default 1000. */
  delayMs?: number;
  /** fail-request: 409, 429, 500 or 504. Default 500. */
  code?: number;
}

export interface ArmedFault extends FaultSpec {
  id: number;
  /** Requests (or watches) it has hit so far. */
  hits: number;
}

export const faultsArmedMax = 1000;
const countMax = 1_000_000;
const delayMsMax = 600_000;
const lagRevisionsMax = 1_000_000;
const failCodes = [409, 429, 500, 504];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks and normalizes fault specs from a file or a request body: a list, one spec, or `{faults: [...]}`. */
export function parseFaultSpecs(value: unknown): FaultSpec[] {
  const list = Array.isArray(value) ? value : isRecord(value) && Array.isArray(value.faults) ? value.faults : [value];
  const errors: FieldError[] = [];
  const specs: FaultSpec[] = [];
  list.forEach((item, i) => {
    const at = (field: string) => `faults[${i}].${field}`;
    if (!isRecord(item)) return void errors.push({ field: `faults[${i}]`, type: "FieldValueInvalid", message: "Invalid value: a fault must be an object" });
    const known = new Set(["kind", "verb", "resource", "namespace", "name", "count", "lagRevisions", "delayMs", "code"]);
    for (const key of Object.keys(item)) if (!known.has(key)) errors.push({ field: at(key), type: "FieldValueNotSupported", message: "Unsupported field" });
    if (!serverFaultKinds.includes(item.kind as ServerFaultKind)) errors.push({ field: at("kind"), type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(item.kind)}: supported values: ${serverFaultKinds.join(", ")}` });
    if (item.verb !== undefined && !faultVerbs.includes(item.verb as FaultVerb)) errors.push({ field: at("verb"), type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(item.verb)}` });
    for (const field of ["resource", "namespace", "name"]) {
      if (item[field] !== undefined && (typeof item[field] !== "string" || (item[field] as string).length > 253)) errors.push({ field: at(field), type: "FieldValueInvalid", message: "Invalid value: must be a string of at most 253 characters" });
    }
    const int = (field: string, min: number, max: number) => {
      const v = item[field];
      if (v !== undefined && !(typeof v === "number" && Number.isSafeInteger(v) && v >= min && v <= max)) errors.push({ field: at(field), type: "FieldValueInvalid", message: `Invalid value: must be an integer from ${min} to ${max}` });
    };
    int("count", 1, countMax);
    int("lagRevisions", 1, lagRevisionsMax);
    int("delayMs", 0, delayMsMax);
    if (item.code !== undefined && !failCodes.includes(item.code as number)) errors.push({ field: at("code"), type: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(item.code)}: supported values: ${failCodes.join(", ")}` });
    specs.push(item as unknown as FaultSpec);
  });
  if (errors.length > 0) throw invalid("Faults", "", errors, "settle.dev");
  if (specs.length > faultsArmedMax) throw badRequest(`at most ${faultsArmedMax} faults may be armed at once`);
  return specs;
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
    if (fault.hits >= (fault.count ?? 1)) this.#armed = this.#armed.filter((f) => f !== fault);
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
    if (fail !== undefined) throw failure(fail.code ?? 500, t);
    const out: RequestFaults = {};
    if (cachedRead) {
      const stale = this.#take("stale-read", t, (f) => f.verb !== undefined || t.verb === "list" || t.verb === "watch");
      if (stale !== undefined) out.lagRevisions = stale.lagRevisions ?? 1;
    }
    if (t.verb !== "watch" && this.#take("lost-response", t, () => true) !== undefined) out.loseResponse = true;
    return out;
  }

  /** Whether a close-watch or delay-watch fault concerns a watch on this target. */
  static concerns(fault: FaultSpec, t: Omit<RequestTarget, "verb">): boolean {
    return matches({ ...fault, verb: undefined }, { ...t, verb: "watch" });
  }
}

function failure(code: number, t: RequestTarget): ApiError {
  const what = `${t.resource}${t.name === undefined ? "" : ` "${t.name}"`}`;
  switch (code) {
    case 409:
      return new ApiError("Conflict", 409, `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again (injected fault)`, { kind: t.resource, ...(t.name === undefined ? {} : { name: t.name }) });
    case 429:
      return new ApiError("TooManyRequests", 429, "the server has received too many requests and has asked us to try again later (injected fault)", { retryAfterSeconds: 1 });
    case 504:
      return new ApiError("Timeout", 504, "the server was unable to return a response in the time allotted, but may still be processing the request (injected fault)", { retryAfterSeconds: 1 });
    default:
      return internalError("an error on the server has prevented the request from succeeding (injected fault)");
  }
}
