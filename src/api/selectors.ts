// Label and field selectors with the API server's syntax and errors.
// STUB: signatures fixed; implementation owned by the api-utils helper.
import type { LabelSelector } from "./object.ts";

export type LabelOperator = "Equals" | "NotEquals" | "In" | "NotIn" | "Exists" | "DoesNotExist";

export interface LabelRequirement {
  key: string;
  operator: LabelOperator;
  /** One value for Equals/NotEquals, one or more for In/NotIn, none for Exists/DoesNotExist. */
  values: string[];
}

/** All requirements must hold. No requirements selects everything. */
export interface ParsedLabelSelector {
  requirements: LabelRequirement[];
}

/** Parses `a=b,c==d,e!=f,g in (h,i),j notin (k),l,!m`. Throws `ApiError` BadRequest (400) naming the problem. */
export function parseLabelSelector(text: string): ParsedLabelSelector {
  throw new Error("not implemented");
}

/** Converts a `metav1.LabelSelector` (matchLabels + matchExpressions). Throws `ApiError` Invalid on bad operators/values. */
export function labelSelectorFromSpec(selector: LabelSelector): ParsedLabelSelector {
  throw new Error("not implemented");
}

export function matchesLabels(selector: ParsedLabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  throw new Error("not implemented");
}

/** The canonical text form, parseable by `parseLabelSelector`. */
export function formatLabelSelector(selector: ParsedLabelSelector): string {
  throw new Error("not implemented");
}

export interface FieldRequirement {
  field: string;
  operator: "=" | "!=";
  value: string;
}

/** Parses `metadata.name=x,spec.nodeName!=n1` (`=`, `==`, `!=`). Throws `ApiError` BadRequest (400). */
export function parseFieldSelector(text: string): FieldRequirement[] {
  throw new Error("not implemented");
}

/** `fields` holds the selectable field values of one object (see the store's per-kind field labels). */
export function matchesFields(requirements: readonly FieldRequirement[], fields: Readonly<Record<string, string>>): boolean {
  throw new Error("not implemented");
}
