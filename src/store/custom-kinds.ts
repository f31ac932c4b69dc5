// The kinds CRDs define, as the apiextensions server keeps them: a committed CRD write registers, re-registers or
// unregisters its kind in the store's registry, with its versions' schemas compiled into validators; and the store
// asks here whether an object of a custom kind was stored under the schema now in force.
//
// Invariant (`custom-kind-registered-at-monotone`): a custom kind's registration revision is the revision of the CRD
// write that made it (`sync` runs in the commit of that write), so it only moves forward, and an object whose
// resourceVersion is above it was pruned by the schema now in force.
//
// Bounds: one registration revision per custom kind registered (by the CRDs stored); compiled schemas are kept with
// the frozen CRD spec they came from (a weak map), so they go with the spec.
import { assert } from "../api/assert.ts";
import type { KubeObject } from "../api/object.ts";
import { isRecord } from "../api/json.ts";
import type { FieldError } from "../api/errors.ts";
import { celRuleDefinitionErrors } from "./cel.ts";
import { createSchemaCompiler, crdInfo, validateCrd, type CrdInfo } from "./crd.ts";
import type { CustomSchemas, KindState, Registry } from "./registry.ts";

/**
 * What a frozen CRD `spec` registers, kept with the spec (see `#customSchemas`). Nothing changes these maps after
 * they are built, so stores share them; the registry shares the resource types made from `info` the same way.
 */
const crdRegistrations = new WeakMap<object, { info: CrdInfo; schemas: CustomSchemas["schemas"]; validators: CustomSchemas["validators"] }>();

export class CustomKinds {
  readonly #registry: Registry;
  readonly #compileSchema = createSchemaCompiler();
  /** Per custom kind (by id): the revision of the CRD write that last registered it, with the schemas now in force. */
  readonly #registeredAt = new Map<string, number>();

  constructor(registry: Registry) {
    this.#registry = registry;
  }

  /** Registers, re-registers or unregisters the kind a CRD defines, in the commit of the CRD's write at `revision`. */
  sync(crd: KubeObject, deleted: boolean, revision: number): void {
    const info = crdRegistrations.get(crd.spec as object)?.info ?? crdInfo(crd);
    if (deleted) {
      const state = this.#registry.byId(`${info.group}/${info.kind}`);
      if (state !== undefined) this.#registry.unregister(state);
      return;
    }
    const state = this.#registry.registerCustom(info, this.#customSchemas(crd, info));
    state.terminating = crd.metadata.deletionTimestamp !== undefined;
    assert(revision > (this.#registeredAt.get(state.id) ?? 0), "custom-kind-registered-at-monotone");
    this.#registeredAt.set(state.id, revision);
  }

  /**
   * True when pruning `current` again would remove nothing, so a write may share its frozen parts: always for a
   * built-in kind; for a custom kind, when it was stored after the CRD write that registered the schema in force
   * and the kind serves one version (with several, a write through another version prunes with another schema).
   */
  prunedAsNow(current: KubeObject, state: KindState): boolean {
    if (state.custom === undefined) return true;
    const registeredAt = this.#registeredAt.get(state.id);
    return registeredAt !== undefined && state.versions.size === 1 && Number(current.metadata.resourceVersion) > registeredAt;
  }

  /** What is wrong with a CRD's schemas: those that do not compile, and CEL rules that do not. */
  schemaErrors(crd: KubeObject): FieldError[] {
    if (validateCrd(crd).length > 0) return [];
    const errors: FieldError[] = [];
    crdInfo(crd).versions.forEach((version, i) => {
      try {
        this.#compileSchema(version.schema);
        errors.push(...celRuleDefinitionErrors(version.schema, `spec.versions[${i}].schema.openAPIV3Schema`));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        errors.push({ field: `spec.versions[${i}].schema.openAPIV3Schema`, type: "FieldValueInvalid", message: `Invalid value: ${message}` });
      }
    });
    return errors;
  }

  /**
   * The schemas of a stored CRD's versions and their validators. A frozen `spec` (every stored CRD's) keeps them:
   * a setup snapshot restores the very same spec in every run, which then is parsed and compiled once.
   */
  #customSchemas(crd: KubeObject, info: CrdInfo): CustomSchemas {
    const crdName = crd.metadata.name ?? "";
    const known = crdRegistrations.get(crd.spec as object);
    if (known !== undefined && known.info === info) return { crdName, schemas: known.schemas, validators: known.validators };
    const custom: CustomSchemas = { crdName, schemas: new Map(), validators: new Map() };
    for (const version of info.versions) {
      custom.schemas.set(version.name, version.schema);
      custom.validators.set(version.name, this.#compileSchema(version.schema));
    }
    if (isRecord(crd.spec) && Object.isFrozen(crd.spec)) crdRegistrations.set(crd.spec, { info, schemas: custom.schemas, validators: custom.validators });
    return custom;
  }
}
