// Label and field selectors with the API server's syntax and errors.
//
// Label selectors follow apimachinery's `labels.Parse` grammar token for token: `in`/`notin` are keywords only
// where an operator may stand (so a label may be called `in`), requirements are sorted by key, value sets are
// sorted and deduplicated, `a=` means "a equals the empty string" and `a in ()` means "a in {''}". The numeric
// operators `>`/`<` that apimachinery also parses are refused: no Kubernetes list selector needs them, and the
// requirement types here (fixed for the store) have no place for them.
import type { LabelSelector } from "./object.ts";
import type { FieldError } from "./errors.ts";
import { assert } from "./assert.ts";
import { badRequest, invalid } from "./errors.ts";
import { isQualifiedName, isValidLabelValue } from "./validation.ts";
import { isRecord } from "./json.ts";

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

// ---------------------------------------------------------------------------------------------------------------
// Lexer

type TokenKind = "id" | "in" | "notin" | "!" | "!=" | "=" | "==" | "(" | ")" | "," | ">" | "<" | "end";

interface Token {
  kind: TokenKind;
  text: string;
}

const specialCharacters = new Set(["!", "=", "(", ")", ",", ">", "<"]);
const whitespace = new Set([" ", "\t", "\r", "\n"]);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (whitespace.has(ch)) {
      i++;
    } else if (specialCharacters.has(ch)) {
      // Longest match: `!=` and `==` are the only two-character symbols.
      const two = text.slice(i, i + 2);
      const symbol = two === "!=" || two === "==" ? two : ch;
      tokens.push({ kind: symbol as TokenKind, text: symbol });
      i += symbol.length;
    } else {
      let end = i;
      while (end < text.length && !whitespace.has(text[end]!) && !specialCharacters.has(text[end]!)) end++;
      const word = text.slice(i, end);
      tokens.push({ kind: word === "in" || word === "notin" ? word : "id", text: word });
      i = end;
    }
  }
  tokens.push({ kind: "end", text: "" });
  return tokens;
}

// ---------------------------------------------------------------------------------------------------------------
// Parser

/** Where a key or value may stand, the keywords `in` and `notin` are plain identifiers. */
type Context = "values" | "operator";

class LabelParser {
  private position = 0;

  constructor(private readonly tokens: Token[]) {
    assert(tokens.length > 0, "tokens end with an end token");
    assert(tokens[tokens.length - 1]!.kind === "end", "last token is the end token");
  }

  lookahead(context: Context): Token {
    const token = this.tokens[this.position]!;
    return context === "values" && (token.kind === "in" || token.kind === "notin") ? { kind: "id", text: token.text } : token;
  }

  consume(context: Context): Token {
    const token = this.lookahead(context);
    if (token.kind !== "end") this.position++;
    return token;
  }

  parse(): LabelRequirement[] {
    const requirements: LabelRequirement[] = [];
    const first = this.lookahead("values");
    if (first.kind === "end") return requirements;
    if (first.kind !== "id" && first.kind !== "!") throw syntax(`found '${first.text}', expected: !, identifier, or 'end of string'`);
    for (;;) {
      requirements.push(this.parseRequirement());
      const next = this.consume("values");
      if (next.kind === "end") return requirements;
      if (next.kind !== ",") throw syntax(`found '${next.text}', expected: ',' or 'end of string'`);
      const after = this.lookahead("values");
      if (after.kind !== "id" && after.kind !== "!") throw syntax(`found '${after.text}', expected: identifier after ','`);
    }
  }

  private parseRequirement(): LabelRequirement {
    let token = this.consume("values");
    const negated = token.kind === "!";
    if (negated) token = this.consume("values");
    if (token.kind !== "id") throw requirementError(`found '${token.text}', expected: identifier`);
    const key = token.text;
    checkKey(key);
    const next = this.lookahead("values").kind;
    if (negated) return { key, operator: "DoesNotExist", values: [] };
    if (next === "end" || next === ",") return { key, operator: "Exists", values: [] };
    const operator = this.parseOperator();
    const values = operator === "In" || operator === "NotIn" ? this.parseValues() : [this.parseExactValue()];
    return makeRequirement(key, operator, values, requirementError);
  }

  private parseOperator(): LabelOperator {
    const token = this.consume("operator");
    switch (token.kind) {
      case "=":
      case "==":
        return "Equals";
      case "!=":
        return "NotEquals";
      case "in":
        return "In";
      case "notin":
        return "NotIn";
      case ">":
      case "<":
        throw requirementError(`the numeric operator '${token.text}' is not supported; use =, ==, !=, in or notin`);
      default:
        throw requirementError(`found '${token.text}', expected: in, notin, =, ==, !=`);
    }
  }

  private parseExactValue(): string {
    const next = this.lookahead("values");
    if (next.kind === "end" || next.kind === ",") return "";
    const token = this.consume("values");
    if (token.kind !== "id") throw requirementError(`found '${token.text}', expected: identifier`);
    return token.text;
  }

  /** `(a,b)`; empty members are the empty value: `()`, `(,a)` and `(a,)` all hold "". */
  private parseValues(): string[] {
    const open = this.consume("values");
    if (open.kind !== "(") throw requirementError(`found '${open.text}', expected: '('`);
    const values: string[] = [];
    let expectValue = true;
    for (;;) {
      const token = this.consume("values");
      if (token.kind === "id" && expectValue) {
        values.push(token.text);
        expectValue = false;
      } else if (token.kind === ",") {
        if (expectValue) values.push("");
        expectValue = true;
      } else if (token.kind === ")") {
        if (expectValue) values.push("");
        return values;
      } else {
        throw requirementError(`found '${token.text}', expected: ',', ')' or identifier`);
      }
    }
  }
}

function syntax(message: string): Error {
  return badRequest(`unable to parse label selector: ${message}`);
}

function requirementError(message: string): Error {
  return badRequest(`unable to parse label selector: unable to parse requirement: ${message}`);
}

function checkKey(key: string): void {
  const problems = isQualifiedName(key);
  if (problems.length > 0) throw requirementError(`invalid label key ${JSON.stringify(key)}: ${problems.join("; ")}`);
}

/** Validates and normalizes one requirement, as apimachinery's `NewRequirement` does. */
function makeRequirement(key: string, operator: LabelOperator, values: string[], fail: (message: string) => Error): LabelRequirement {
  const unique = [...new Set(values)].sort();
  if ((operator === "In" || operator === "NotIn") && unique.length === 0) {
    throw fail(`for 'in' and 'notin' the set of values may not be empty (key ${JSON.stringify(key)})`);
  }
  if ((operator === "Equals" || operator === "NotEquals") && unique.length !== 1) {
    throw fail(`'=', '==' and '!=' take exactly one value (key ${JSON.stringify(key)})`);
  }
  if ((operator === "Exists" || operator === "DoesNotExist") && unique.length !== 0) {
    throw fail(`exists and does-not-exist take no values (key ${JSON.stringify(key)})`);
  }
  for (const value of unique) {
    const problems = isValidLabelValue(value);
    if (problems.length > 0) throw fail(`invalid value ${JSON.stringify(value)} for key ${JSON.stringify(key)}: ${problems.join("; ")}`);
  }
  return { key, operator, values: unique };
}

function sortByKey(requirements: LabelRequirement[]): LabelRequirement[] {
  // Stable, so requirements on one key keep their written order and the canonical text is deterministic.
  return requirements.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Parses `a=b,c==d,e!=f,g in (h,i),j notin (k),l,!m`. Throws `ApiError` BadRequest (400) naming the problem. */
export function parseLabelSelector(text: string): ParsedLabelSelector {
  return { requirements: sortByKey(new LabelParser(tokenize(text)).parse()) };
}

// ---------------------------------------------------------------------------------------------------------------
// metav1.LabelSelector

const specOperators: Record<string, LabelOperator> = {
  In: "In",
  NotIn: "NotIn",
  Exists: "Exists",
  DoesNotExist: "DoesNotExist",
};

/**
 * The API server's validation of a `metav1.LabelSelector` inside an object (`spec.selector` of a Deployment,
 * say), as field errors under `field`. Empty when valid.
 */
export function validateLabelSelectorSpec(selector: LabelSelector, field = "spec.selector"): FieldError[] {
  // The spec usually comes straight from a request body, so every shape is checked before it is trusted.
  const spec = selector as { matchLabels?: unknown; matchExpressions?: unknown };
  if (!isRecord(spec)) return [typeError(field, "must be an object")];
  const errors: FieldError[] = [];
  if (spec.matchLabels !== undefined && !isRecord(spec.matchLabels)) {
    errors.push(typeError(`${field}.matchLabels`, "must be an object of strings"));
  } else {
    const matchLabels = (spec.matchLabels ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(matchLabels).sort()) {
      const value = matchLabels[key];
      for (const why of isQualifiedName(key)) errors.push(invalidField(`${field}.matchLabels`, key, why));
      if (typeof value !== "string") errors.push(typeError(`${field}.matchLabels[${key}]`, "must be a string"));
      else for (const why of isValidLabelValue(value)) errors.push(invalidField(`${field}.matchLabels`, value, why));
    }
  }
  if (spec.matchExpressions !== undefined && !Array.isArray(spec.matchExpressions)) {
    errors.push(typeError(`${field}.matchExpressions`, "must be a list"));
  } else {
    ((spec.matchExpressions ?? []) as unknown[]).forEach((expression, index) => {
      errors.push(...validateExpression(expression, `${field}.matchExpressions[${index}]`));
    });
  }
  return errors;
}

function typeError(field: string, why: string): FieldError {
  return { field, type: "FieldValueTypeInvalid", message: `Invalid value: ${why}` };
}

function validateExpression(expression: unknown, path: string): FieldError[] {
  if (!isRecord(expression)) return [typeError(path, "must be an object with key, operator and values")];
  const { key, operator: operatorText, values = [] } = expression as { key?: unknown; operator?: unknown; values?: unknown };
  if (typeof key !== "string") return [typeError(`${path}.key`, "must be a string")];
  if (!Array.isArray(values) || values.some((v) => typeof v !== "string")) return [typeError(`${path}.values`, "must be a list of strings")];
  const errors: FieldError[] = [];
  const operator = typeof operatorText === "string" && Object.hasOwn(specOperators, operatorText) ? specOperators[operatorText] : undefined;
  if (operator === undefined) {
    errors.push({
      field: `${path}.operator`,
      type: "FieldValueNotSupported",
      message: `Unsupported value: ${JSON.stringify(operatorText ?? null)}: supported values: "In", "NotIn", "Exists", "DoesNotExist"`,
    });
  } else if ((operator === "In" || operator === "NotIn") && values.length === 0) {
    errors.push({ field: `${path}.values`, type: "FieldValueRequired", message: "Required value: must be specified when `operator` is 'In' or 'NotIn'" });
  } else if ((operator === "Exists" || operator === "DoesNotExist") && values.length > 0) {
    errors.push({ field: `${path}.values`, type: "FieldValueForbidden", message: "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'" });
  }
  for (const why of isQualifiedName(key)) errors.push(invalidField(`${path}.key`, key, why));
  (values as string[]).forEach((value, i) => {
    for (const why of isValidLabelValue(value)) errors.push(invalidField(`${path}.values[${i}]`, value, why));
  });
  return errors;
}

function invalidField(field: string, value: string, why: string): FieldError {
  return { field, type: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(value)}: ${why}` };
}

export interface LabelSelectorSpecOptions {
  /** Field path of the selector in its object, for error causes. Default `spec.selector`. */
  field?: string;
  /** Kind (or resource) and name of the object holding the selector, for the 422 message. Default `LabelSelector`, "". */
  kind?: string;
  name?: string;
}

/** Converts a `metav1.LabelSelector` (matchLabels + matchExpressions). Throws `ApiError` Invalid on bad operators/values. */
export function labelSelectorFromSpec(selector: LabelSelector, options: LabelSelectorSpecOptions = {}): ParsedLabelSelector {
  const errors = validateLabelSelectorSpec(selector, options.field ?? "spec.selector");
  if (errors.length > 0) throw invalid(options.kind ?? "LabelSelector", options.name ?? "", errors);
  const requirements: LabelRequirement[] = [];
  for (const key of Object.keys(selector.matchLabels ?? {}).sort()) {
    requirements.push({ key, operator: "Equals", values: [selector.matchLabels![key]!] });
  }
  for (const expression of selector.matchExpressions ?? []) {
    const operator = specOperators[expression.operator];
    assert(operator !== undefined, "validated operator is known");
    requirements.push(makeRequirement(expression.key, operator, expression.values ?? [], badRequest));
  }
  return { requirements: sortByKey(requirements) };
}

/** The selector `key1=value1,key2=value2` for a set of labels (apimachinery's `SelectorFromSet`). */
export function labelSelectorFromSet(labels: Readonly<Record<string, string>>): ParsedLabelSelector {
  const requirements = Object.keys(labels)
    .sort()
    .map((key) => makeRequirement(key, "Equals", [labels[key]!], requirementError));
  for (const requirement of requirements) checkKey(requirement.key);
  return { requirements };
}

// ---------------------------------------------------------------------------------------------------------------
// Matching and formatting

function matchesRequirement(requirement: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  const present = Object.hasOwn(labels, requirement.key);
  switch (requirement.operator) {
    case "Exists":
      return present;
    case "DoesNotExist":
      return !present;
    case "Equals":
    case "In":
      return present && requirement.values.includes(labels[requirement.key]!);
    // As in Kubernetes, `!=` and `notin` select objects that do not have the label at all.
    case "NotEquals":
    case "NotIn":
      return !present || !requirement.values.includes(labels[requirement.key]!);
  }
}

export function matchesLabels(selector: ParsedLabelSelector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const set = labels ?? {};
  for (const requirement of selector.requirements) {
    if (!matchesRequirement(requirement, set)) return false;
  }
  return true;
}

function formatRequirement(requirement: LabelRequirement): string {
  const { key, values } = requirement;
  switch (requirement.operator) {
    case "Exists":
      return key;
    case "DoesNotExist":
      return `!${key}`;
    case "Equals":
      return `${key}=${values[0] ?? ""}`;
    case "NotEquals":
      return `${key}!=${values[0] ?? ""}`;
    case "In":
      return `${key} in (${values.join(",")})`;
    case "NotIn":
      return `${key} notin (${values.join(",")})`;
  }
}

/** The canonical text form, parseable by `parseLabelSelector`. */
export function formatLabelSelector(selector: ParsedLabelSelector): string {
  return selector.requirements.map(formatRequirement).join(",");
}

// ---------------------------------------------------------------------------------------------------------------
// Field selectors

export interface FieldRequirement {
  field: string;
  operator: "=" | "!=";
  value: string;
}

/** Splits on commas that are not escaped with a backslash; escapes stay in the terms. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === ",") {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

/** Splits at the first operator, trying `!=`, then `==`, then `=` at each position, as apimachinery does. */
function splitTerm(term: string): FieldRequirement | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ["!=", "==", "="] as const) {
      if (term.startsWith(op, i)) {
        return { field: term.slice(0, i), operator: op === "!=" ? "!=" : "=", value: term.slice(i + op.length) };
      }
    }
  }
  return undefined;
}

/** Undoes `\\`, `\,` and `\=`; any other escape, or a bare `,` or `=`, is an error. */
function unescapeFieldValue(value: string, selector: string): string {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === "\\") {
      const next = value[i + 1];
      if (next !== "\\" && next !== "," && next !== "=") {
        throw badRequest(`invalid field selector ${JSON.stringify(selector)}: invalid escape sequence \\${next ?? ""}`);
      }
      out += next;
      i++;
    } else if (ch === "," || ch === "=") {
      throw badRequest(`invalid field selector ${JSON.stringify(selector)}: '${ch}' in a value must be escaped as '\\${ch}'`);
    } else {
      out += ch;
    }
  }
  return out;
}

/**
 * Parses `metadata.name=x,spec.nodeName!=n1` (`=`, `==`, `!=`). Throws `ApiError` BadRequest (400).
 * Like the API server: no whitespace is trimmed (` a=b` names the field ` a`), empty terms are skipped, and
 * which fields exist is for the caller to check against the kind's field labels.
 */
export function parseFieldSelector(text: string): FieldRequirement[] {
  const requirements: FieldRequirement[] = [];
  for (const term of splitTerms(text).sort()) {
    if (term === "") continue;
    const split = splitTerm(term);
    if (split === undefined) {
      throw badRequest(`invalid field selector ${JSON.stringify(text)}: cannot understand ${JSON.stringify(term)}: expected field=value, field==value or field!=value`);
    }
    if (split.field === "") throw badRequest(`invalid field selector ${JSON.stringify(text)}: ${JSON.stringify(term)} has no field name`);
    requirements.push({ ...split, value: unescapeFieldValue(split.value, text) });
  }
  return requirements;
}

/** Escapes `\`, `,` and `=` in a field selector value. */
export function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (ch) => `\\${ch}`);
}

/** The text form of field requirements, parseable by `parseFieldSelector`. */
export function formatFieldSelector(requirements: readonly FieldRequirement[]): string {
  return requirements.map((r) => `${r.field}${r.operator}${escapeFieldValue(r.value)}`).join(",");
}

/** `fields` holds the selectable field values of one object (see the store's per-kind field labels). */
export function matchesFields(requirements: readonly FieldRequirement[], fields: Readonly<Record<string, string>>): boolean {
  for (const requirement of requirements) {
    // A field the object does not have compares as the empty string, as in the API server.
    const actual = Object.hasOwn(fields, requirement.field) ? fields[requirement.field]! : "";
    if ((actual === requirement.value) !== (requirement.operator === "=")) return false;
  }
  return true;
}
