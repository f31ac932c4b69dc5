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

export const isNotFound = (e: unknown): boolean => isApiError(e) && e.reason === "NotFound";
export const isAlreadyExists = (e: unknown): boolean => isApiError(e) && e.reason === "AlreadyExists";
export const isConflict = (e: unknown): boolean => isApiError(e) && e.reason === "Conflict";
export const isInvalid = (e: unknown): boolean => isApiError(e) && e.reason === "Invalid";
/** 410: a watch or read from a compacted revision; the client must relist. */
export const isGone = (e: unknown): boolean => isApiError(e) && e.code === 410;
