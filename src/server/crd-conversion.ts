// Custom resources whose CRD converts through a webhook (`spec.conversion.strategy: Webhook`), as kube-apiserver
// serves them: objects are stored at the storage version, and a request at another served version reads, lists,
// watches and writes through a conversion by the webhook. Each conversion is an `apiextensions.k8s.io` ConversionReview
// (the first of `conversionReviewVersions` the server speaks) POSTed to `spec.conversion.webhook.clientConfig` with
// the objects and the `desiredAPIVersion`; its `convertedObjects` keep the original's metadata but for labels and
// annotations, and are pruned and defaulted with the target version's schema. A failed call or a malformed answer
// fails the request with 500 and kube-apiserver's message, `conversion webhook for <group>/<version>, Kind=<Kind>
// failed: <why>`.
//
// The store is synchronous and a webhook call is not, so a request at a converted version runs its handler against a
// view of the store (`webhookConvertedStore`) that answers from conversions already made: a conversion not made yet
// throws `ConversionPending`, the server makes it (`untilConverted`) and runs the handler again, and every conversion
// the handler met is then at hand. A write runs as a dry run first, so that the conversion of its answer is made
// before anything is stored: the run that commits the write finds every conversion it needs and cannot be interrupted.
// Conversions are remembered per CRD object by the object's content (metadata but for name, namespace, labels and
// annotations left out: a webhook only changes those), and by stored object, so a read of an unchanged object
// answers the same object again.
//
// Bounds: `convertedFormsMax` conversions per CRD object (the table starts afresh when full); a request runs its
// handler at most `handlerRunsMax` times; a watch holds the events that wait for a conversion (the watch's own buffer
// limits what the client is sent).
import { randomUUID } from "node:crypto";
import { assert } from "../api/assert.ts";
import type { DeleteOptions, PatchOptions, WriteOptions } from "../api/client.ts";
import { ApiError, badRequest, internalError, invalid, isApiError, isNotFound, type StatusReason } from "../api/errors.ts";
import { cloneJson, deepFreeze, isRecord } from "../api/json.ts";
import type { KubeObject, ObjectList, ObjectRef } from "../api/object.ts";
import { formatApiVersion } from "../api/object.ts";
import { applyJsonPatch, applyMergePatch } from "../api/patch.ts";
import type { ResourceType } from "../api/resources.ts";
import { celRuleErrors } from "../store/cel.ts";
import { applySchemaDefaults, conversionReviewVersions, createSchemaCompiler, crdInfo, pruneUnknown, schemaErrors } from "../store/crd.ts";
import { isBuiltinKind } from "../store/index.ts";
import type { Store, StoreEvent, StoreListOptions, StoreWatcher, StoreWatchListener, StoreWatchOptions } from "../store/index.ts";
import { postReview, type WebhookClientConfig } from "./admission/webhook-client.ts";
import { markView } from "./conversion.ts";

const crdKind = { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" } as const;

/** kube-apiserver gives a conversion webhook 30 seconds (its calls carry `?timeout=30s`). */
const conversionTimeoutSeconds = 30;

/** Conversions remembered per CRD object; past this the table starts afresh. */
const convertedFormsMax = 10_000;

/** Compiles a version's schema (compiled schemas are cached process-wide, see createSchemaCompiler). */
const compileSchema = createSchemaCompiler();

/** A request's handler runs at most this often: each run after the first has every conversion the one before met. */
const handlerRunsMax = 16;

/** A conversion the handler needs and the view has not made yet: `make` makes it, then the handler runs again. */
export class ConversionPending extends Error {
  constructor(readonly make: () => Promise<void>) {
    super("a conversion webhook call is under way");
  }
}

/** What a converted object is made of: its fields but metadata, and the labels and annotations the webhook gave. */
interface ConvertedForm {
  body: Record<string, unknown>;
  labels: unknown;
  annotations: unknown;
}

/** One CRD object's conversion webhook and what it converted. */
class WebhookConversion {
  readonly #forms = new Map<string, ConvertedForm>();
  /** Converted forms of stored (frozen) objects, by desired apiVersion: a read of the same object answers the same. */
  readonly #ofStored = new Map<string, WeakMap<KubeObject, KubeObject>>();
  readonly views = new WeakMap<Store, Map<string, Store>>();

  constructor(
    readonly group: string,
    readonly kind: string,
    readonly storageVersion: string,
    readonly schemas: ReadonlyMap<string, Record<string, unknown>>,
    readonly clientConfig: WebhookClientConfig,
    readonly reviewVersion: string,
  ) {}

  /** `object` at `apiVersion` from the conversions made so far; undefined when it has not been converted. */
  formOf(object: KubeObject, apiVersion: string): KubeObject | undefined {
    if (object.apiVersion === apiVersion) return object;
    const frozen = Object.isFrozen(object);
    const known = frozen ? this.#ofStored.get(apiVersion)?.get(object) : undefined;
    if (known !== undefined) return known;
    const form = this.#forms.get(formKey(object, apiVersion));
    if (form === undefined) return undefined;
    const converted = withMetadata(form, object.metadata);
    if (!frozen) return converted;
    deepFreeze(converted);
    let ofStored = this.#ofStored.get(apiVersion);
    if (ofStored === undefined) this.#ofStored.set(apiVersion, (ofStored = new WeakMap()));
    ofStored.set(object, converted);
    return converted;
  }

  /** Every object of `objects` at `apiVersion`, or ConversionPending for those not converted yet (in one review). */
  formsOf(objects: readonly KubeObject[], apiVersion: string): KubeObject[] {
    const forms: KubeObject[] = [];
    const missing: KubeObject[] = [];
    for (const object of objects) {
      const form = this.formOf(object, apiVersion);
      if (form === undefined) missing.push(object);
      else forms.push(form);
    }
    if (missing.length > 0) throw new ConversionPending(() => this.convert(missing, apiVersion));
    assert(forms.length === objects.length, "converted-forms-one-per-object");
    return forms;
  }

  /** Calls the webhook for `objects` (each once) and remembers what it answered; throws the Status of a failure. */
  async convert(objects: readonly KubeObject[], apiVersion: string): Promise<void> {
    const byKey = new Map<string, KubeObject>();
    for (const object of objects) if (object.apiVersion !== apiVersion) byKey.set(formKey(object, apiVersion), object);
    const sent = [...byKey.values()];
    if (sent.length === 0) return;
    const from = `${sent[0]!.apiVersion}, Kind=${this.kind}`;
    const uid = randomUUID();
    const review = { apiVersion: `apiextensions.k8s.io/${this.reviewVersion}`, kind: "ConversionReview", request: { uid, desiredAPIVersion: apiVersion, objects: sent } };
    let converted: unknown[];
    try {
      const response = await postReview(this.clientConfig, conversionTimeoutSeconds, review, "ConversionReview", (body) => reviewResponse(body, this.reviewVersion));
      converted = convertedObjects(response, uid, this.reviewVersion === "v1");
    } catch (error) {
      throw conversionFailed(`conversion webhook for ${from} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (converted.length !== sent.length) throw conversionFailed(`conversion webhook for ${from} returned ${converted.length} objects, expected ${sent.length}`);
    if (this.#forms.size + sent.length > convertedFormsMax) this.#forms.clear();
    const keys = [...byKey.keys()];
    sent.forEach((original, i) => {
      const what = sent.length === 1 ? "invalid object" : `invalid converted object at index ${i}`;
      const problem = convertedProblem(original, converted[i], apiVersion);
      if (problem !== undefined) throw conversionFailed(`conversion webhook for ${from} returned ${what}: ${problem}`);
      this.#forms.set(keys[i]!, this.#formFrom(converted[i] as Record<string, unknown>, apiVersion));
    });
    assert(this.#forms.size <= Math.max(convertedFormsMax, sent.length), "converted-forms-bounded");
    assert(sent.every((object) => this.formOf(object, apiVersion) !== undefined), "converted-forms-at-hand-after-convert");
  }

  /** What a converted object is remembered as: pruned and defaulted with its version's schema, as kube-apiserver reads it. */
  #formFrom(converted: Record<string, unknown>, apiVersion: string): ConvertedForm {
    const { metadata, ...body } = cloneJson(converted);
    const schema = this.schemas.get(apiVersion.slice(apiVersion.indexOf("/") + 1));
    if (schema !== undefined) {
      pruneUnknown(body, schema, true);
      applySchemaDefaults(body, schema, true);
    }
    const meta = isRecord(metadata) ? metadata : {};
    return { body: deepFreeze(body), labels: meta.labels, annotations: meta.annotations };
  }

  /**
   * A body sent at `version`, as kube-apiserver decodes and validates one before it is converted for storage: pruned
   * and defaulted with that version's schema, then checked against it and its CEL rules (a 422 naming the fields as
   * that version names them). Transition rules, which compare with the stored object, run at the storage version.
   */
  decoded(object: KubeObject, version: string): KubeObject {
    const schema = this.schemas.get(version);
    if (schema === undefined) return object;
    const copy = cloneJson(object);
    pruneUnknown(copy, schema, true);
    applySchemaDefaults(copy, schema, true);
    const validator = compileSchema(schema);
    const errors = validator(copy) ? celRuleErrors(schema, copy, undefined) : schemaErrors(validator.errors ?? [], copy);
    if (errors.length > 0) throw invalid(this.kind, copy.metadata.name ?? "", errors, this.group);
    return copy;
  }
}

function conversionFailed(message: string): ApiError {
  // kube-apiserver passes the converter's error on as it is: a Status with code 500 and no reason.
  return new ApiError("" as StatusReason, 500, message);
}

/** The key of a conversion: the desired version and the object's content, metadata but for what a webhook may change. */
function formKey(object: KubeObject, apiVersion: string): string {
  const { name, namespace, labels, annotations } = object.metadata;
  return `${apiVersion}\n${JSON.stringify({ ...object, metadata: { name, namespace, labels, annotations } })}`;
}

/** The converted object: the original's metadata, with the labels and annotations the webhook answered. */
function withMetadata(form: ConvertedForm, original: KubeObject["metadata"]): KubeObject {
  const metadata: Record<string, unknown> = cloneJson(original) as Record<string, unknown>;
  for (const [field, value] of [["labels", form.labels], ["annotations", form.annotations]] as const) {
    if (value === undefined || value === null) delete metadata[field];
    else metadata[field] = cloneJson(value);
  }
  const { apiVersion, kind, ...rest } = form.body;
  return { apiVersion, kind, metadata, ...rest } as unknown as KubeObject;
}

/** The `response` of a ConversionReview, checked as kube-apiserver checks the version it sent. */
function reviewResponse(body: unknown, reviewVersion: string): Record<string, unknown> {
  if (!isRecord(body)) throw new Error("expected a JSON object");
  const expected = `apiextensions.k8s.io/${reviewVersion}`;
  if (reviewVersion === "v1" && (body.apiVersion !== expected || body.kind !== "ConversionReview")) {
    throw new Error(`expected webhook response of ${expected}, Kind=ConversionReview, got ${String(body.apiVersion ?? "")}, Kind=${String(body.kind ?? "")}`);
  }
  return isRecord(body.response) ? body.response : {};
}

/** The converted objects of a successful response; a failure's message otherwise (thrown). */
function convertedObjects(response: Record<string, unknown>, uid: string, checkUid: boolean): unknown[] {
  if (Object.keys(response).length === 0) throw new Error("no response provided");
  if (checkUid && response.uid !== uid) throw new Error(`expected response.uid="${uid}", got "${String(response.uid ?? "")}"`);
  const result = isRecord(response.result) ? response.result : {};
  if (result.status !== "Success") {
    if (typeof result.message === "string" && result.message !== "") throw new Error(result.message);
    throw new Error(`response.result.status was '${String(result.status ?? "")}', not 'Success'`);
  }
  return Array.isArray(response.convertedObjects) ? response.convertedObjects : [];
}

/** What is wrong with a converted object, as kube-apiserver checks it against the one sent; undefined when nothing. */
function convertedProblem(original: KubeObject, converted: unknown, apiVersion: string): string | undefined {
  if (!isRecord(converted)) return "expected a JSON object";
  if (converted.apiVersion !== apiVersion) return `invalid groupVersion (expected ${apiVersion}, received ${String(converted.apiVersion ?? "")})`;
  if (converted.kind !== original.kind) return `invalid kind (expected ${original.kind}, received ${String(converted.kind ?? "")})`;
  const meta = converted.metadata;
  if (!isRecord(meta)) return "missing metadata in converted object";
  for (const field of ["name", "namespace", "uid"] as const) {
    const was = original.metadata[field] ?? "";
    const is = meta[field] ?? "";
    if (was !== is) return `must have the same ${field === "uid" ? "UID" : field}: ${String(was)} != ${String(is)}`;
  }
  for (const field of ["labels", "annotations"] as const) {
    const value = meta[field];
    if (value === undefined || value === null) continue;
    if (!isRecord(value)) return `invalid metadata.${field} in converted object`;
    for (const [key, text] of Object.entries(value)) if (typeof text !== "string") return `metadata.${field}[${key}] must be a string in converted object`;
  }
  return undefined;
}

/** The conversion of each CRD object whose strategy is Webhook (null for the others), made on first use. */
const conversions = new WeakMap<KubeObject, WebhookConversion | null>();

function conversionOf(crd: KubeObject): WebhookConversion | undefined {
  let known = conversions.get(crd);
  if (known === undefined) {
    known = null;
    const spec = isRecord(crd.spec) ? crd.spec : {};
    const conversion = isRecord(spec.conversion) ? spec.conversion : {};
    const webhook = isRecord(conversion.webhook) ? conversion.webhook : {};
    if (conversion.strategy === "Webhook" && isRecord(webhook.clientConfig)) {
      const info = crdInfo(crd);
      const reviews = Array.isArray(webhook.conversionReviewVersions) ? webhook.conversionReviewVersions : [];
      const reviewVersion = reviews.find((version) => conversionReviewVersions.includes(version as string)) as string | undefined;
      const schemas = new Map(info.versions.map((version) => [version.name, version.schema]));
      known = new WebhookConversion(info.group, info.kind, info.storageVersion, schemas, webhook.clientConfig as WebhookClientConfig, reviewVersion ?? "v1");
    }
    if (Object.isFrozen(crd)) conversions.set(crd, known);
  }
  return known ?? undefined;
}

/** The CRD that defines a custom resource, or undefined when there is none. */
function crdOf(store: Store, resource: ResourceType): KubeObject | undefined {
  try {
    return store.get({ ...crdKind, name: `${resource.plural}.${resource.group}` });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * The view of the store a request at `resource` goes through, when it is a version of a custom resource whose CRD
 * converts through a webhook and not its storage version; undefined otherwise (the store serves it as it is).
 */
export function webhookConvertedStore(store: Store, resource: ResourceType): Store | undefined {
  if (isBuiltinKind(resource)) return undefined;
  const crd = crdOf(store, resource);
  const conversion = crd === undefined ? undefined : conversionOf(crd);
  if (conversion === undefined || conversion.storageVersion === resource.version) return undefined;
  let views = conversion.views.get(store);
  if (views === undefined) conversion.views.set(store, (views = new Map()));
  let view = views.get(resource.version);
  if (view === undefined) views.set(resource.version, (view = convertingView(store, conversion, resource.version)));
  return view;
}

/**
 * A custom resource's object at another `version` of its kind, as kube-apiserver converts what an admission webhook
 * whose rules name that version sees: through the CRD's webhook, or by rewriting its apiVersion (strategy None).
 */
export async function convertedTo(store: Store, resource: ResourceType, object: KubeObject, version: string): Promise<KubeObject> {
  const apiVersion = formatApiVersion({ group: resource.group, version });
  if (object.apiVersion === apiVersion) return object;
  const crd = crdOf(store, resource);
  const conversion = crd === undefined ? undefined : conversionOf(crd);
  if (conversion === undefined) return { ...object, apiVersion };
  const known = conversion.formOf(object, apiVersion);
  if (known !== undefined) return known;
  await conversion.convert([object], apiVersion);
  return conversion.formsOf([object], apiVersion)[0]!;
}

/** Watches of a converting view: whether events wait for a conversion, and how to fail the watch when one fails. */
const convertingWatches = new WeakMap<StoreWatcher, { waiting(): boolean; onFailure?: (error: ApiError) => void }>();

/** True when a watch through a converting view holds events back until their conversion is made. */
export function watchWaitsForConversion(watcher: StoreWatcher | undefined): boolean {
  return watcher !== undefined && (convertingWatches.get(watcher)?.waiting() ?? false);
}

/** Sets what a watch through a converting view does when a conversion fails: the watch ends with the Status. */
export function onWatchConversionFailure(watcher: StoreWatcher | undefined, fail: (error: ApiError) => void): void {
  const entry = watcher === undefined ? undefined : convertingWatches.get(watcher);
  if (entry !== undefined) entry.onFailure = fail;
}

function convertingView(store: Store, c: WebhookConversion, version: string): Store {
  const storedApiVersion = formatApiVersion({ group: c.group, version: c.storageVersion });
  const servedApiVersion = formatApiVersion({ group: c.group, version });
  const stored = <T extends { apiVersion: string }>(ref: T): T => ({ ...ref, apiVersion: storedApiVersion });
  const out = (object: KubeObject): KubeObject => c.formsOf([object], servedApiVersion)[0]!;
  const into = (object: KubeObject): KubeObject => (object.apiVersion === servedApiVersion ? c.formsOf([c.decoded(object, version)], storedApiVersion)[0]! : object);
  /**
   * A write at the storage version: a dry run first, whose answer's conversion is made before the write commits.
   * `write` gets whether this call is the dry run.
   */
  const written = (write: (dryRun: boolean) => KubeObject, options: { dryRun?: boolean } | undefined): KubeObject => {
    if (options?.dryRun !== true) out(write(true));
    return out(write(options?.dryRun === true));
  };
  const writeOptions = (options: WriteOptions | undefined, dryRun: boolean): WriteOptions => ({ ...(options?.fieldManager === undefined ? {} : { fieldManager: options.fieldManager }), ...(dryRun ? { dryRun } : {}) });
  const patched = (options: PatchOptions): KubeObject => {
    const current = out(store.get(stored(options)));
    let next: unknown;
    try {
      next = options.patchType === "merge" ? applyMergePatch(current, options.patch) : applyJsonPatch(current, options.patch);
    } catch (error) {
      if (isApiError(error)) throw error;
      throw badRequest(`the patch could not be applied: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!isRecord(next)) throw badRequest("the patch must leave an object");
    return into(next as unknown as KubeObject);
  };
  const view = {
    get: (ref: ObjectRef, options?: { revision?: number }) => out(store.get(stored(ref), options)),
    list: (options: StoreListOptions): ObjectList => {
      const list = store.list(stored(options));
      return { ...list, apiVersion: servedApiVersion, items: c.formsOf(list.items, servedApiVersion) };
    },
    watch: (options: StoreWatchOptions, listener: StoreWatchListener): StoreWatcher => convertingWatch(store, c, stored(options), servedApiVersion, listener),
    create: (object: KubeObject, options?: WriteOptions) => {
      const input = into(object);
      return written((dry) => store.create(input, writeOptions(options, dry)), options);
    },
    update: (object: KubeObject, options?: WriteOptions) => {
      const input = into(object);
      return written((dry) => store.update(input, writeOptions(options, dry)), options);
    },
    updateStatus: (object: KubeObject, options?: WriteOptions) => {
      const input = into(object);
      return written((dry) => store.updateStatus(input, writeOptions(options, dry)), options);
    },
    patch: (options: PatchOptions) => {
      const input = patched(options);
      return written((dry) => store.update(input, writeOptions(options, dry)), options);
    },
    patchStatus: (options: PatchOptions) => {
      const input = patched(options);
      return written((dry) => store.updateStatus(input, writeOptions(options, dry)), options);
    },
    delete: (options: DeleteOptions) => written((dry) => store.delete({ ...stored(options), dryRun: dry }), options),
  };
  const proxy = new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(view, property)) return view[property as keyof typeof view];
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  markView(proxy, store);
  return proxy;
}

/**
 * A watch at the storage version whose events reach `listener` converted, in order: an event whose conversion is at
 * hand goes at once (when none waits before it), the others wait for one review of every object waiting.
 */
function convertingWatch(store: Store, c: WebhookConversion, options: StoreWatchOptions, apiVersion: string, listener: StoreWatchListener): StoreWatcher {
  const waiting: StoreEvent[] = [];
  let converting = false;
  let closed = false;
  const pump = (): void => {
    while (waiting.length > 0 && !closed) {
      const object = c.formOf(waiting[0]!.object, apiVersion);
      if (object === undefined) {
        if (converting) return;
        converting = true;
        const missing = waiting.map((event) => event.object).filter((o) => c.formOf(o, apiVersion) === undefined);
        c.convert(missing, apiVersion).then(
          () => {
            converting = false;
            pump();
          },
          (error: unknown) => {
            converting = false;
            watcher.close();
            const failure = isApiError(error) ? error : internalError(String(error));
            convertingWatches.get(watcher)?.onFailure?.(failure);
          },
        );
        return;
      }
      const event = waiting.shift()!;
      listener({ ...event, object });
    }
  };
  const inner = store.watch(options, (event) => {
    waiting.push(event);
    if (!converting) pump();
  });
  const watcher: StoreWatcher = {
    close: () => {
      closed = true;
      waiting.length = 0;
      inner.close();
    },
  };
  convertingWatches.set(watcher, { waiting: () => waiting.length > 0 });
  return watcher;
}

/**
 * Runs a request's handler against a converting view until no conversion is missing: each ConversionPending is made
 * (the webhook called) and the handler runs again. Warnings a run added are dropped before the next adds them again.
 */
export async function untilConverted(run: () => Promise<void> | void, res: { removeHeader(name: string): void }): Promise<void> {
  for (let runs = 1; ; runs++) {
    assert(runs <= handlerRunsMax, "handler-runs-bounded");
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof ConversionPending)) throw error;
      if (runs >= handlerRunsMax) throw internalError(`the request needed conversions ${handlerRunsMax} times over; the conversion webhook's answers do not settle`);
      await error.make();
      res.removeHeader("Warning");
    }
  }
}
