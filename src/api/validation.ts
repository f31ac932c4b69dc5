// Validation of names, labels and annotations, with Kubernetes' rules and messages.
//
// The `is*` functions return bare problem descriptions (empty when valid) so that callers with their own error
// shape (the label selector parser reports 400s, object validation reports 422 field errors) can share them.
// Field error messages follow the shape of the API server's causes: `Invalid value: "Foo": <why>`.
import { invalidValue, type FieldError } from "./errors.ts";
import { isCanonicalIpName } from "./ip.ts";
import { isRecord } from "./json.ts";

export const dns1123LabelLengthMax = 63;
export const dns1123SubdomainLengthMax = 253;
export const qualifiedNameLengthMax = 63;
export const labelValueLengthMax = 63;
/** The API server's limit on the summed byte length of all annotation keys and values. */
export const annotationsTotalBytesMax = 256 * 1024;

const dns1123LabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1035LabelPattern = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const dns1123SubdomainPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const qualifiedNamePartPattern = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const labelValuePattern = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const tooLong = (max: number): string => `must be no more than ${max} characters`;

/** The problems of a name under one length limit and one pattern: too long, and not matching (with `why`). */
function nameProblems(value: string, max: number, pattern: RegExp, why: string): string[] {
  const problems: string[] = [];
  if (value.length > max) problems.push(tooLong(max));
  if (!pattern.test(value)) problems.push(why);
  return problems;
}

export function isDns1123Label(value: string): string[] {
  return nameProblems(
    value,
    dns1123LabelLengthMax,
    dns1123LabelPattern,
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start " +
      "and end with an alphanumeric character (for example 'my-name' or '123-abc')",
  );
}

/** Service names: a DNS-1123 label that starts with a letter, so the name can be a DNS name of its own. */
export function isDns1035Label(value: string): string[] {
  return nameProblems(
    value,
    dns1123LabelLengthMax,
    dns1035LabelPattern,
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic " +
      "character, and end with an alphanumeric character (for example 'my-name' or 'abc-123')",
  );
}

export function isDns1123Subdomain(value: string): string[] {
  return nameProblems(
    value,
    dns1123SubdomainLengthMax,
    dns1123SubdomainPattern,
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must " +
      "start and end with an alphanumeric character (for example 'example.com')",
  );
}

/** Names of kinds whose objects may hold almost anything, as long as the name is one URL path segment. */
export function isPathSegmentName(value: string): string[] {
  const problems: string[] = [];
  if (value === "." || value === "..") problems.push(`may not be '${value}'`);
  if (value.includes("/")) problems.push("may not contain '/'");
  if (value.includes("%")) problems.push("may not contain '%'");
  return problems;
}

/** Label keys and annotation keys: an optional DNS-1123 subdomain prefix and `/`, then a name of <= 63 characters. */
export function isQualifiedName(value: string): string[] {
  const parts = value.split("/");
  if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', must start and end with an " +
        "alphanumeric character, and may have a DNS subdomain prefix and '/' (for example 'MyName' or " +
        "'example.com/MyName')",
    ];
  }
  const problems: string[] = [];
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix.length === 0) problems.push("prefix part must be non-empty");
    else problems.push(...isDns1123Subdomain(prefix).map((p) => `prefix part ${p}`));
  }
  if (name.length === 0) {
    problems.push("name part must be non-empty");
    return problems;
  }
  if (name.length > qualifiedNameLengthMax) problems.push(`name part ${tooLong(qualifiedNameLengthMax)}`);
  if (!qualifiedNamePartPattern.test(name)) {
    problems.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " +
        "alphanumeric character (for example 'MyName', 'my.name' or '123-abc')",
    );
  }
  return problems;
}

export function isValidLabelValue(value: string): string[] {
  const problems: string[] = [];
  if (value.length > labelValueLengthMax) problems.push(tooLong(labelValueLengthMax));
  if (!labelValuePattern.test(value)) {
    problems.push(
      "a valid label value must be empty or consist of alphanumeric characters, '-', '_' or '.', and must " +
        "start and end with an alphanumeric character (for example 'MyValue', 'my_value' or '12345')",
    );
  }
  return problems;
}

/** How a kind's object names are checked (most kinds: DNS-1123 subdomains; IPAddress: a canonical IP). */
export type NameRule = "dns1123-subdomain" | "dns1123-label" | "dns1035-label" | "path-segment" | "ip-address";

const nameRules: Record<NameRule, (value: string) => string[]> = {
  "dns1123-subdomain": isDns1123Subdomain,
  "dns1123-label": isDns1123Label,
  "dns1035-label": isDns1035Label,
  "path-segment": isPathSegmentName,
  "ip-address": isCanonicalIpName,
};

/** Returns the problems with `name` under `rule`, as field errors on `field` (empty when valid). */
export function validateName(
  name: string,
  rule: NameRule,
  field = "metadata.name",
): FieldError[] {
  if (name === "") {
    return [{ field, type: "FieldValueRequired", message: "Required value: name or generateName is required" }];
  }
  return nameRules[rule](name).map((why) => invalidValue(field, name, why));
}

/**
 * Validates a `generateName` prefix: the API server appends 5 random characters, so a trailing `-` is allowed
 * and the prefix is checked as if that dash were an alphanumeric character.
 */
export function validateGenerateName(
  prefix: string,
  rule: NameRule,
  field = "metadata.generateName",
): FieldError[] {
  if (prefix === "") return [];
  if (rule === "path-segment") {
    // A prefix of "." or ".." is fine: the generated suffix makes the whole name something else.
    const problems = isPathSegmentName(prefix).filter((why) => !why.startsWith("may not be"));
    return problems.map((why) => invalidValue(field, prefix, why));
  }
  const masked = prefix.endsWith("-") ? `${prefix.slice(0, -1)}a` : prefix;
  return nameRules[rule](masked).map((why) => invalidValue(field, prefix, why));
}

function notAMap(field: string): FieldError {
  return { field, type: "FieldValueTypeInvalid", message: "Invalid value: must be a map of string keys to string values" };
}

/** Validates label keys (qualified names) and values (<= 63 chars, alphanumeric at ends). */
export function validateLabels(labels: Record<string, unknown> | undefined, field = "metadata.labels"): FieldError[] {
  if (labels === undefined || labels === null) return [];
  if (!isRecord(labels)) return [notAMap(field)];
  const errors: FieldError[] = [];
  // Sorted so that the same object always gets the same error list (the store's results must be deterministic).
  for (const key of Object.keys(labels).sort()) {
    for (const why of isQualifiedName(key)) errors.push(invalidValue(field, key, why));
    const value = labels[key];
    if (typeof value !== "string") {
      errors.push({ field: `${field}[${key}]`, type: "FieldValueTypeInvalid", message: "Invalid value: must be a string" });
      continue;
    }
    for (const why of isValidLabelValue(value)) errors.push(invalidValue(field, value, why));
  }
  return errors;
}

/** Validates annotation keys (qualified names) and the total size (<= 256 KiB). */
export function validateAnnotations(annotations: Record<string, unknown> | undefined, field = "metadata.annotations"): FieldError[] {
  if (annotations === undefined || annotations === null) return [];
  if (!isRecord(annotations)) return [notAMap(field)];
  const errors: FieldError[] = [];
  let totalBytes = 0;
  for (const key of Object.keys(annotations).sort()) {
    // Annotation keys are qualified names in which case does not matter (the API server lowercases first).
    for (const why of isQualifiedName(key.toLowerCase())) errors.push(invalidValue(field, key, why));
    const value = annotations[key];
    totalBytes += Buffer.byteLength(key, "utf8");
    if (typeof value !== "string") {
      errors.push({ field: `${field}[${key}]`, type: "FieldValueTypeInvalid", message: "Invalid value: must be a string" });
      continue;
    }
    totalBytes += Buffer.byteLength(value, "utf8");
  }
  if (totalBytes > annotationsTotalBytesMax) {
    errors.push({
      field,
      type: "FieldValueTooLong",
      message: `Too long: may not have more than ${annotationsTotalBytesMax} bytes in total (keys and values), has ${totalBytes}`,
    });
  }
  return errors;
}
