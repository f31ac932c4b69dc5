// Validation of names, labels and annotations, with Kubernetes' rules and messages.
// STUB: signatures fixed; implementation owned by the api-utils helper.
import type { FieldError } from "./errors.ts";

/** Returns the problems with `name` under `rule`, as field errors on `field` (empty when valid). */
export function validateName(
  name: string,
  rule: "dns1123-subdomain" | "dns1123-label" | "path-segment",
  field = "metadata.name",
): FieldError[] {
  throw new Error("not implemented");
}

/** Validates label keys (qualified names) and values (<= 63 chars, alphanumeric at ends). */
export function validateLabels(labels: Record<string, unknown> | undefined, field = "metadata.labels"): FieldError[] {
  throw new Error("not implemented");
}

/** Validates annotation keys (qualified names) and the total size (<= 256 KiB). */
export function validateAnnotations(annotations: Record<string, unknown> | undefined, field = "metadata.annotations"): FieldError[] {
  throw new Error("not implemented");
}
