// Operating errors of the API, one variant per cause, each carrying the Kubernetes `Status` a real
// API server would send. Programmer errors are assertions (see `assert.ts`), never ApiErrors.
import type { Status, StatusCause } from "./object.ts";

export type StatusReason =
  | "BadRequest"
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Invalid"
  | "Gone"
  | "Expired"
  | "RequestEntityTooLarge"
  | "TooManyRequests"
  | "InternalError"
  | "Timeout"
  | "ServerTimeout"
  | "MethodNotAllowed"
  | "UnsupportedMediaType"
  | "NotAcceptable"
  | "Forbidden"
  | "Unauthorized";

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export class ApiError extends Error {
  readonly status: Status & { reason: StatusReason; code: number; message: string };

  constructor(reason: StatusReason, code: number, message: string, details?: StatusDetails) {
    super(message);
    this.name = "ApiError";
    this.status = {
      apiVersion: "v1",
      kind: "Status",
      metadata: {},
      status: "Failure",
      message,
      reason,
      code,
      ...(details === undefined ? {} : { details }),
    };
  }

  get reason(): StatusReason {
    return this.status.reason;
  }

  get code(): number {
    return this.status.code;
  }

  /** Rebuilds an ApiError from a `Status` received over the wire. */
  static fromStatus(status: Status): ApiError {
    const reason = (status.reason ?? "InternalError") as StatusReason;
    const details = status.details as StatusDetails | undefined;
    return new ApiError(reason, status.code ?? 500, status.message ?? reason, details);
  }
}

/** `kind` is the resource's plural-or-kind as the API server words it, e.g. `configmaps`. */
export function notFound(resource: string, name: string, group = ""): ApiError {
  const what = group === "" ? resource : `${resource}.${group}`;
  return new ApiError("NotFound", 404, `${what} "${name}" not found`, { name, group, kind: resource });
}

export function alreadyExists(resource: string, name: string, group = ""): ApiError {
  const what = group === "" ? resource : `${resource}.${group}`;
  return new ApiError("AlreadyExists", 409, `${what} "${name}" already exists`, { name, group, kind: resource });
}

export function conflict(resource: string, name: string, why: string, group = ""): ApiError {
  const what = group === "" ? resource : `${resource}.${group}`;
  return new ApiError("Conflict", 409, `Operation cannot be fulfilled on ${what} "${name}": ${why}`, {
    name,
    group,
    kind: resource,
  });
}

export interface FieldError {
  /** The field path, e.g. `metadata.name` or `spec.replicas`. */
  field: string;
  /** `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, ... as in Kubernetes' field errors. */
  type: string;
  message: string;
}

/** A `FieldValueInvalid` error, worded as Kubernetes' `field.Invalid`: `Invalid value: <value as JSON>: <why>`. */
export function invalidValue(field: string, value: unknown, why: string): FieldError {
  return { field, type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(value)}: ${why}` };
}

export function invalid(kind: string, name: string, errors: FieldError[], group = ""): ApiError {
  const what = group === "" ? kind : `${kind}.${group}`;
  const summary = errors.map((e) => `${e.field}: ${e.message}`).join(", ");
  return new ApiError("Invalid", 422, `${what} "${name}" is invalid: ${summary}`, {
    name,
    group,
    kind,
    causes: errors.map((e) => ({ reason: e.type, message: e.message, field: e.field })),
  });
}

export function badRequest(message: string): ApiError {
  return new ApiError("BadRequest", 400, message);
}

/** The revision asked for has been compacted away: clients must relist. */
export function expired(message: string): ApiError {
  return new ApiError("Expired", 410, message);
}

export function gone(message: string): ApiError {
  return new ApiError("Gone", 410, message);
}

export function tooLarge(message: string): ApiError {
  return new ApiError("RequestEntityTooLarge", 413, message);
}

export function tooManyRequests(message: string, retryAfterSeconds = 1): ApiError {
  return new ApiError("TooManyRequests", 429, message, { retryAfterSeconds });
}

export function internalError(message: string): ApiError {
  return new ApiError("InternalError", 500, message);
}

export function timeout(message: string): ApiError {
  return new ApiError("Timeout", 504, message);
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

// One predicate per Status reason, as apimachinery's `errors.IsXxx` helpers: each matches on the reason. A
// response without a Status body or reason (a proxy's bare 404, 429 or 504) becomes an `InternalError` carrying the
// HTTP code (settle/kube's client, `ApiError.fromStatus`), so, as apimachinery does for an unknown reason,
// 404, 429 and 504 are also told by that code. A code alone never overrides a reason the server gave: a 404 whose
// Status says `Forbidden` is not a NotFound.
const hasReason = (e: unknown, reason: StatusReason): boolean => isApiError(e) && e.reason === reason;
const bareCode = (e: unknown, code: number): boolean => hasReason(e, "InternalError") && (e as ApiError).code === code;

/**
 * 404: the object (or the resource type) does not exist. The one test for it, on both sides of the wire: the store
 * and the server say NotFound with every 404 they make, and a client may get a bare 404 from a proxy.
 */
export const isNotFound = (e: unknown): boolean => hasReason(e, "NotFound") || bareCode(e, 404);
/** 409: a create found an object of that name. */
export const isAlreadyExists = (e: unknown): boolean => hasReason(e, "AlreadyExists");
/** 409: the object changed since it was read (stale resourceVersion, or a field manager conflict on apply). */
export const isConflict = (e: unknown): boolean => hasReason(e, "Conflict");
/** 422: the object failed validation; `status.details.causes` names the fields. */
export const isInvalid = (e: unknown): boolean => hasReason(e, "Invalid");
/** 410 (reason `Gone` or `Expired`): a watch or read from a compacted revision; the client must relist. */
export const isGone = (e: unknown): boolean => isApiError(e) && e.code === 410;
/** 410 with reason `Expired`: the revision or continue token asked for has been compacted away. */
export const isExpired = (e: unknown): boolean => hasReason(e, "Expired");
/** 400: the request was malformed (a bad selector, patch or body). */
export const isBadRequest = (e: unknown): boolean => hasReason(e, "BadRequest");
/** 413: the object or request is larger than the server accepts. */
export const isRequestEntityTooLarge = (e: unknown): boolean => hasReason(e, "RequestEntityTooLarge");
/** 429: the server is overloaded; retry after `retryAfterSeconds(e)`. */
export const isTooManyRequests = (e: unknown): boolean => hasReason(e, "TooManyRequests") || bareCode(e, 429);
/** 500 (or another 5xx without a Status): the server failed; the request may or may not have been applied. */
export const isInternalError = (e: unknown): boolean => hasReason(e, "InternalError") && !bareCode(e, 404) && !bareCode(e, 429) && !bareCode(e, 504);
/**
 * 504 with reason `Timeout`: the request timed out, and a write may still have been applied (a lost
 * response), so retry by reading again. Also a read at a resourceVersion the server has not reached yet.
 */
export const isTimeout = (e: unknown): boolean => hasReason(e, "Timeout") || bareCode(e, 504);
/** 500 with reason `ServerTimeout`: the server could not finish in time; retry. */
export const isServerTimeout = (e: unknown): boolean => hasReason(e, "ServerTimeout");
/** 405: the verb is not allowed on this resource (or a terminating CRD refuses creates). */
export const isMethodNotAllowed = (e: unknown): boolean => hasReason(e, "MethodNotAllowed");
/** 415: the body's media type is not accepted (e.g. protobuf for a kind the server cannot decode). */
export const isUnsupportedMediaType = (e: unknown): boolean => hasReason(e, "UnsupportedMediaType");
/** 406: the server cannot answer in any media type the request accepts. */
export const isNotAcceptable = (e: unknown): boolean => hasReason(e, "NotAcceptable");
/** 403: the caller may not do this (or the object may not be deleted, like a system namespace). */
export const isForbidden = (e: unknown): boolean => hasReason(e, "Forbidden");
/** 401: the request carried no valid credentials. */
export const isUnauthorized = (e: unknown): boolean => hasReason(e, "Unauthorized");

/** The server's `retryAfterSeconds` suggestion (429, 504), or undefined. */
export function retryAfterSeconds(e: unknown): number | undefined {
  if (!isApiError(e)) return undefined;
  const seconds = (e.status.details as StatusDetails | undefined)?.retryAfterSeconds;
  return typeof seconds === "number" && seconds > 0 ? seconds : undefined;
}
