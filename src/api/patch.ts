// JSON merge patch (RFC 7386) and JSON patch (RFC 6902), with errors as the API server reports them.
// STUB: signatures fixed; implementation owned by the api-utils helper.

/** Returns a new document; `target` is not modified. Throws `ApiError` BadRequest when `patch` is not valid JSON data. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  throw new Error("not implemented");
}

/**
 * Returns a new document; `target` is not modified. Throws `ApiError`: BadRequest (400) for a malformed
 * operation list, Invalid/UnprocessableEntity (422) when an operation cannot apply (missing path, failed `test`).
 */
export function applyJsonPatch(target: unknown, operations: unknown): unknown {
  throw new Error("not implemented");
}
