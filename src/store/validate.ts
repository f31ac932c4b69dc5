// Validation and defaulting of built-in kinds: the subset of kube-apiserver's rules that controllers run
// into (object metadata, required fields, selectors that must match templates, immutable fields).
import type { FieldError } from "../api/errors.ts";
import type { KubeObject, LabelSelector } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import { labelSelectorFromSpec, matchesLabels } from "../api/selectors.ts";
import { validateAnnotations, validateLabels, validateName, isDns1123Label, type NameRule } from "../api/validation.ts";
import { invalidValue, isApiError } from "../api/errors.ts";
import { isRecord, jsonEqual } from "../api/json.ts";

function required(field: string, detail = ""): FieldError {
  return { field, type: "FieldValueRequired", message: detail === "" ? "Required value" : `Required value: ${detail}` };
}

function validateStringList(value: unknown, field: string): FieldError[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return [invalidValue(field, value, "must be a list of strings")];
  return value.flatMap((item, i) => (typeof item === "string" && item !== "" ? [] : [invalidValue(`${field}[${i}]`, item, "must be a non-empty string")]));
}

function validateOwnerReferences(value: unknown): FieldError[] {
  const field = "metadata.ownerReferences";
  if (value === undefined) return [];
  if (!Array.isArray(value)) return [invalidValue(field, value, "must be a list")];
  const errors: FieldError[] = [];
  let controllers = 0;
  value.forEach((ref, i) => {
    if (!isRecord(ref)) return errors.push(invalidValue(`${field}[${i}]`, ref, "must be an object"));
    for (const key of ["apiVersion", "kind", "name", "uid"]) {
      const v = ref[key];
      if (typeof v !== "string" || v === "") errors.push(invalidValue(`${field}[${i}].${key}`, v ?? "", `${key} must not be empty`));
    }
    if (ref.controller === true) controllers++;
  });
  if (controllers > 1) {
    errors.push(invalidValue(field, value, "Only one reference can have Controller set to true"));
  }
  return errors;
}

/**
 * Names found valid, per rule: the same few names are written again and again (each run of a scenario creates the
 * same objects), and a valid name has no errors to build. Invalid names are checked every time (their errors are
 * new objects, which callers may keep). Bounded: a store that writes more names starts the set over.
 */
const validNames = new Map<NameRule, Set<string>>();
const validNamesPerRuleMax = 16_384;

function nameErrors(name: string, rule: NameRule, field?: string): FieldError[] {
  let valid = validNames.get(rule);
  if (valid?.has(name) === true) return [];
  const errors = field === undefined ? validateName(name, rule) : validateName(name, rule, field);
  if (errors.length > 0) return errors;
  if (valid === undefined) validNames.set(rule, (valid = new Set()));
  if (valid.size >= validNamesPerRuleMax) valid.clear();
  valid.add(name);
  return errors;
}

/** Label pairs found valid (`key` NUL `value`), bounded and for the same reason as `validNames`. */
const validLabels = new Set<string>();

/** `validateLabels`, skipped when every pair was valid before. */
function labelErrors(labels: Record<string, unknown> | undefined): FieldError[] {
  if (labels === undefined) return [];
  let known = true;
  for (const key in labels) {
    const value = labels[key];
    if (typeof value !== "string" || !validLabels.has(`${key}\u0000${value}`)) {
      known = false;
      break;
    }
  }
  if (known) return [];
  const errors = validateLabels(labels);
  if (errors.length > 0) return errors;
  if (validLabels.size >= validNamesPerRuleMax) validLabels.clear();
  for (const key in labels) validLabels.add(`${key}\u0000${labels[key] as string}`);
  return errors;
}

/** `ObjectMeta` rules common to every kind. `metadata` is known to be an object. */
export function validateMetadata(object: KubeObject, resource: ResourceType): FieldError[] {
  const meta = object.metadata;
  const errors: FieldError[] = [];
  errors.push(...nameErrors(typeof meta.name === "string" ? meta.name : "", resource.nameRule));
  if (resource.namespaced) {
    const ns = meta.namespace;
    if (typeof ns !== "string" || ns === "") errors.push(required("metadata.namespace"));
    else errors.push(...nameErrors(ns, "dns1123-label", "metadata.namespace"));
  }
  if (meta.labels !== undefined && !isRecord(meta.labels)) errors.push(invalidValue("metadata.labels", meta.labels, "must be a map of strings"));
  else errors.push(...labelErrors(meta.labels as Record<string, unknown> | undefined));
  if (meta.annotations !== undefined && !isRecord(meta.annotations)) {
    errors.push(invalidValue("metadata.annotations", meta.annotations, "must be a map of strings"));
  } else errors.push(...validateAnnotations(meta.annotations as Record<string, unknown> | undefined));
  errors.push(...validateStringList(meta.finalizers, "metadata.finalizers"));
  errors.push(...validateOwnerReferences(meta.ownerReferences));
  return errors;
}

/** What an update may not do to metadata: add finalizers to an object being deleted. */
export function validateMetadataUpdate(next: KubeObject, old: KubeObject): FieldError[] {
  if (old.metadata.deletionTimestamp === undefined) return [];
  const before = old.metadata.finalizers ?? [];
  const added = (next.metadata.finalizers ?? []).filter((f) => !before.includes(f));
  if (added.length === 0) return [];
  return [
    {
      field: "metadata.finalizers",
      type: "FieldValueForbidden",
      message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
    },
  ];
}

function validateContainers(podSpec: unknown, field: string): FieldError[] {
  if (!isRecord(podSpec)) return [required(field)];
  const containers = podSpec.containers;
  if (!Array.isArray(containers) || containers.length === 0) return [required(`${field}.containers`)];
  const errors: FieldError[] = [];
  // Names are unique across init and regular containers.
  const names = new Set<string>();
  for (const list of ["initContainers", "containers"] as const) {
    const entries = podSpec[list];
    if (!Array.isArray(entries)) continue;
    entries.forEach((c, i) => {
      const at = `${field}.${list}[${i}]`;
      if (!isRecord(c)) return errors.push(invalidValue(at, c, "must be an object"));
      if (typeof c.name !== "string" || c.name === "") errors.push(required(`${at}.name`));
      else {
        for (const why of isDns1123Label(c.name)) errors.push(invalidValue(`${at}.name`, c.name, why));
        if (names.has(c.name)) errors.push({ field: `${at}.name`, type: "FieldValueDuplicate", message: `Duplicate value: ${JSON.stringify(c.name)}` });
        names.add(c.name);
      }
      if (typeof c.image !== "string" || c.image === "") errors.push(required(`${at}.image`));
      if (Array.isArray(c.ports)) {
        c.ports.forEach((p, j) => {
          const port = isRecord(p) ? p.containerPort : undefined;
          if (!isPortNumber(port)) errors.push(invalidValue(`${at}.ports[${j}].containerPort`, port ?? 0, "must be between 1 and 65535, inclusive"));
        });
      }
    });
  }
  return errors;
}

function isPortNumber(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}

/** A replica count, when given, is a whole number of at least 0. */
function validateReplicas(spec: Record<string, unknown>): FieldError[] {
  const replicas = spec.replicas;
  if (replicas === undefined || (typeof replicas === "number" && Number.isInteger(replicas) && replicas >= 0)) return [];
  return [invalidValue("spec.replicas", replicas, "must be greater than or equal to 0")];
}

/** Selector required, template labels matching it (apps/v1 and batch/v1 workloads). */
function validateSelectorAndTemplate(spec: Record<string, unknown>, selectorRequired: boolean): FieldError[] {
  const errors: FieldError[] = [];
  const template = spec.template;
  errors.push(...validateContainers(isRecord(template) ? template.spec : undefined, "spec.template.spec"));
  const selector = spec.selector;
  if (selector === undefined) return selectorRequired ? [required("spec.selector"), ...errors] : errors;
  if (!isRecord(selector)) return [invalidValue("spec.selector", selector, "must be a label selector"), ...errors];
  try {
    const parsed = labelSelectorFromSpec(selector as LabelSelector);
    if (parsed.requirements.length === 0) errors.push(invalidValue("spec.selector", selector, "empty selector is invalid for deployment"));
    const labels = isRecord(template) && isRecord(template.metadata) ? template.metadata.labels : undefined;
    if (!matchesLabels(parsed, labels as Record<string, string> | undefined)) {
      errors.push(invalidValue("spec.template.metadata.labels", labels ?? {}, "`selector` does not match template `labels`"));
    }
  } catch (error) {
    if (!isApiError(error)) throw error;
    errors.push(invalidValue("spec.selector", selector, error.message));
  }
  return errors;
}

/** Pod spec fields an update may change; everything else in a pod's spec is immutable. */
const podMutableSpec = ["activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"];

function podSpecSkeleton(spec: unknown, nodeName: unknown): unknown {
  if (!isRecord(spec)) return spec;
  const copy: Record<string, unknown> = { ...spec, nodeName };
  for (const key of podMutableSpec) delete copy[key];
  const withoutImages = (list: unknown) => (Array.isArray(list) ? list.map((c) => (isRecord(c) ? { ...c, image: undefined } : c)) : list);
  copy.containers = withoutImages(copy.containers);
  copy.initContainers = withoutImages(copy.initContainers);
  return copy;
}

function validatePodUpdate(next: KubeObject, old: KubeObject): FieldError[] {
  const oldSpec = old.spec as Record<string, unknown> | undefined;
  // Setting `spec.nodeName` once stands in for the binding subresource the scheduler uses.
  const oldNode = oldSpec?.nodeName;
  const nextNode = isRecord(next.spec) ? next.spec.nodeName : undefined;
  if (oldNode !== undefined && oldNode !== "" && nextNode !== oldNode) {
    return [invalidValue("spec.nodeName", nextNode ?? "", "field is immutable")];
  }
  if (jsonEqual(podSpecSkeleton(next.spec, undefined), podSpecSkeleton(old.spec, undefined))) return [];
  return [
    {
      field: "spec",
      type: "FieldValueForbidden",
      message:
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, " +
        "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds`",
    },
  ];
}

type KindValidator = (object: KubeObject, old: KubeObject | undefined) => FieldError[];

/**
 * A Service's ports: at least one (unless headless or ExternalName), each a port number, named when there are several,
 * names unique.
 */
function validateServicePorts(spec: Record<string, unknown>): FieldError[] {
  const ports = Array.isArray(spec.ports) ? spec.ports : [];
  if (ports.length === 0) return spec.clusterIP === "None" || spec.type === "ExternalName" ? [] : [required("spec.ports")];
  const errors: FieldError[] = [];
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const port = isRecord(p) ? p : {};
    const name = typeof port.name === "string" ? port.name : "";
    if (ports.length > 1 && name === "") errors.push(required(`spec.ports[${i}].name`));
    else if (name !== "" && names.has(name)) errors.push({ field: `spec.ports[${i}].name`, type: "FieldValueDuplicate", message: `Duplicate value: ${JSON.stringify(name)}` });
    names.add(name);
    if (!isPortNumber(port.port)) errors.push(invalidValue(`spec.ports[${i}].port`, port.port ?? 0, "must be between 1 and 65535, inclusive"));
  });
  return errors;
}

function specOf(object: KubeObject): Record<string, unknown> | undefined {
  return isRecord(object.spec) ? object.spec : undefined;
}

const appsWorkload: KindValidator = (object, old) => {
  const spec = specOf(object);
  if (spec === undefined) return [required("spec")];
  const errors = [...validateSelectorAndTemplate(spec, true), ...validateReplicas(spec)];
  const oldSelector = old === undefined ? undefined : specOf(old)?.selector;
  if (old !== undefined && !jsonEqual(oldSelector, spec.selector)) errors.push(invalidValue("spec.selector", spec.selector ?? {}, "field is immutable"));
  return errors;
};

/** What a StatefulSet update may change in `spec`; anything else is refused as a whole. */
const statefulSetMutableSpec = ["replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"];

function withoutKeys(value: unknown, keys: readonly string[]): unknown {
  if (!isRecord(value)) return value;
  const copy = { ...value };
  for (const key of keys) delete copy[key];
  return copy;
}

const statefulSet: KindValidator = (object, old) => {
  const spec = specOf(object);
  if (spec === undefined) return [required("spec")];
  const errors = [...validateSelectorAndTemplate(spec, true), ...validateReplicas(spec)];
  if (old !== undefined && !jsonEqual(withoutKeys(spec, statefulSetMutableSpec), withoutKeys(specOf(old), statefulSetMutableSpec))) {
    errors.push({
      field: "spec",
      type: "FieldValueForbidden",
      message: "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    });
  }
  return errors;
};

/** What a suspended Job's template may still change: where its pods will run (and its labels and annotations). */
const suspendedJobMutableTemplate = ["nodeSelector", "tolerations", "affinity", "schedulingGates"];

function jobTemplateSkeleton(template: unknown): unknown {
  if (!isRecord(template)) return template;
  const metadata = withoutKeys(template.metadata, ["labels", "annotations"]);
  return { ...template, metadata, spec: withoutKeys(template.spec, suspendedJobMutableTemplate) };
}

/** A Job's selector, completion mode and template are fixed once made (a suspended one may move its pods). */
function validateJobUpdate(spec: Record<string, unknown>, old: KubeObject): FieldError[] {
  const oldSpec = specOf(old) ?? {};
  const errors: FieldError[] = [];
  for (const field of ["selector", "completionMode"]) {
    if (!jsonEqual(spec[field], oldSpec[field])) errors.push(invalidValue(`spec.${field}`, spec[field] ?? null, "field is immutable"));
  }
  // Completions change only for an Indexed Job scaled elastically (completions kept equal to parallelism).
  const elastic = spec.completionMode === "Indexed" && spec.completions === spec.parallelism;
  if (spec.completions !== oldSpec.completions && !elastic) errors.push(invalidValue("spec.completions", spec.completions ?? null, "field is immutable"));
  const same = oldSpec.suspend === true ? jsonEqual(jobTemplateSkeleton(spec.template), jobTemplateSkeleton(oldSpec.template)) : jsonEqual(spec.template, oldSpec.template);
  if (!same) errors.push(invalidValue("spec.template", spec.template ?? null, "field is immutable"));
  return errors;
}

/** With `immutable: true`, a ConfigMap's or Secret's contents, and the flag itself, never change again. */
function validateImmutableData(object: KubeObject, old: KubeObject | undefined, fields: readonly string[]): FieldError[] {
  if (old === undefined || old.immutable !== true) return [];
  const forbidden = (field: string): FieldError => ({ field, type: "FieldValueForbidden", message: "Forbidden: field is immutable when `immutable` is set" });
  const errors = fields.filter((field) => !jsonEqual(object[field], old[field])).map(forbidden);
  if (object.immutable !== true) errors.push(forbidden("immutable"));
  return errors;
}

const validators: Record<string, KindValidator> = {
  "/Pod": (object, old) => {
    const errors = validateContainers(object.spec, "spec");
    return old === undefined || errors.length > 0 ? errors : validatePodUpdate(object, old);
  },
  "apps/Deployment": appsWorkload,
  "apps/ReplicaSet": appsWorkload,
  "apps/DaemonSet": appsWorkload,
  "apps/StatefulSet": statefulSet,
  "batch/Job": (object, old) => {
    const spec = specOf(object);
    if (spec === undefined) return [required("spec")];
    const errors = validateSelectorAndTemplate(spec, false);
    if (old !== undefined) errors.push(...validateJobUpdate(spec, old));
    const template = isRecord(spec.template) && isRecord(spec.template.spec) ? spec.template.spec : undefined;
    const policy = template?.restartPolicy;
    if (policy !== "Never" && policy !== "OnFailure") {
      errors.push({ field: "spec.template.spec.restartPolicy", type: "FieldValueRequired", message: 'Required value: valid values: "OnFailure", "Never"' });
    }
    return errors;
  },
  "batch/CronJob": (object) => {
    const spec = specOf(object);
    if (spec === undefined) return [required("spec")];
    const errors: FieldError[] = [];
    if (typeof spec.schedule !== "string" || spec.schedule === "") errors.push(required("spec.schedule"));
    else errors.push(...validateSchedule(spec.schedule));
    if (!isRecord(spec.jobTemplate)) errors.push(required("spec.jobTemplate"));
    return errors;
  },
  "/ConfigMap": (object, old) => [...validateDataKeys(object, ["data", "binaryData"]), ...validateDataSize(object, ["data", "binaryData"], "[]"), ...validateImmutableData(object, old, ["data", "binaryData"])],
  "/Service": (object, old) => {
    const errors = validateServicePorts(specOf(object) ?? {});
    // A cluster IP, once given, stays (an update that leaves it out keeps it on a real server's allocating path).
    const before = old === undefined ? undefined : specOf(old)?.clusterIP;
    const after = specOf(object)?.clusterIP;
    if (typeof before === "string" && before !== "" && typeof after === "string" && after !== "" && after !== before) errors.push(invalidValue("spec.clusterIPs[0]", after, "may not change once set"));
    return errors;
  },
  "networking.k8s.io/Ingress": (object) => {
    const spec = specOf(object) ?? {};
    const rules = Array.isArray(spec.rules) ? spec.rules : [];
    if (spec.defaultBackend !== undefined || rules.length > 0) return [];
    return [invalidValue("spec", spec, "either `defaultBackend` or `rules` must be specified")];
  },
  "policy/PodDisruptionBudget": (object) => {
    const spec = specOf(object) ?? {};
    if (spec.minAvailable === undefined || spec.maxUnavailable === undefined) return [];
    return [invalidValue("spec", spec, "minAvailable and maxUnavailable cannot be both set")];
  },
  "/PersistentVolumeClaim": (object, old) => {
    if (old === undefined) return [];
    const before = specOf(old);
    // The binder sets volumeName once, and a claim of no class may be given one (the retroactive default class).
    const namedVolume = typeof before?.volumeName === "string" && before.volumeName !== "";
    const hadClass = before?.storageClassName !== undefined && before.storageClassName !== null;
    const mutable = (spec: unknown) =>
      isRecord(spec)
        ? { ...spec, resources: withoutKeys(spec.resources, ["requests"]), volumeAttributesClassName: undefined, volumeName: namedVolume ? spec.volumeName : undefined, storageClassName: hadClass ? spec.storageClassName : undefined }
        : spec;
    if (jsonEqual(mutable(specOf(object)), mutable(specOf(old)))) return [];
    return [{ field: "spec", type: "FieldValueForbidden", message: "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims" }];
  },
  "/Secret": (object, old) => {
    const errors = validateDataKeys(object, ["data", "stringData"]);
    const data = isRecord(object.data) ? object.data : {};
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) {
        errors.push(invalidValue(`data[${key}]`, "<secret contents redacted>", "illegal base64 data"));
      }
    }
    if (old !== undefined && old.type !== object.type) errors.push(invalidValue("type", object.type, "field is immutable"));
    errors.push(...validateDataSize(object, ["data"], "data"));
    errors.push(...validateImmutableData(object, old, ["data"]));
    return errors;
  },
};

/**
 * A CronJob schedule has five fields (or is a macro such as `@hourly`), and names no time zone of its own: the checks
 * of the real validation that come before the cron library reads each field, with its words.
 */
function validateSchedule(schedule: string): FieldError[] {
  if (/^(CRON_TZ|TZ)=/.test(schedule.trim())) return [invalidValue("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")];
  if (schedule.trim().startsWith("@")) return [];
  const fields = schedule.trim().split(/\s+/);
  if (fields.length === 5) return [];
  return [invalidValue("spec.schedule", schedule, `expected exactly 5 fields, found ${fields.length}: [${fields.join(" ")}]`)];
}

/** The most bytes a ConfigMap's or Secret's data may hold in all: kube-apiserver's MaxSecretSize, 1 MiB. */
const dataBytesMax = 1024 * 1024;

/**
 * A ConfigMap's (data and binaryData) or Secret's (data, stringData merged in) values may hold 1 MiB in all, counted as
 * kube-apiserver counts them: the bytes of each string, the decoded bytes of each base64 value. The error names `field`.
 */
function validateDataSize(object: KubeObject, fields: readonly string[], field: string): FieldError[] {
  let bytes = 0;
  for (const name of fields) {
    const data = object[name];
    if (!isRecord(data)) continue;
    const base64 = name === "binaryData" || object.kind === "Secret";
    for (const value of Object.values(data)) if (typeof value === "string") bytes += base64 ? base64Bytes(value) : Buffer.byteLength(value);
  }
  if (bytes <= dataBytesMax) return [];
  return [{ field, type: "FieldValueTooLong", message: `Too long: must have at most ${dataBytesMax} bytes` }];
}

/** The bytes a base64 text decodes to, without decoding it. */
function base64Bytes(text: string): number {
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return Math.floor((text.length * 3) / 4) - padding;
}

function validateDataKeys(object: KubeObject, fields: string[]): FieldError[] {
  const errors: FieldError[] = [];
  for (const field of fields) {
    const data = object[field];
    if (data === undefined) continue;
    if (!isRecord(data)) {
      errors.push(invalidValue(field, data, "must be a map"));
      continue;
    }
    for (const key of Object.keys(data)) {
      if (!/^[-._a-zA-Z0-9]+$/.test(key) || key.length > 253) {
        errors.push(invalidValue(`${field}[${key}]`, key, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"));
      }
    }
  }
  return errors;
}

/**
 * The kinds whose rules read `spec` alone, of the object and of the stored one: every rule of theirs either checks the
 * new spec by itself (which the stored spec passed when it was stored) or compares it with the stored spec.
 */
const specOnlyValidators: ReadonlySet<string> = new Set([
  "/Pod",
  "apps/Deployment",
  "apps/ReplicaSet",
  "apps/DaemonSet",
  "apps/StatefulSet",
  "batch/Job",
  "batch/CronJob",
  "/Service",
  "networking.k8s.io/Ingress",
  "policy/PodDisruptionBudget",
  "/PersistentVolumeClaim",
]);

/** The kind's own rules (required fields, immutable fields); `old` is the stored object on update. */
export function validateKind(object: KubeObject, old: KubeObject | undefined, resource: ResourceType): FieldError[] {
  const id = `${resource.group}/${resource.kind}`;
  const validate = validators[id];
  if (validate === undefined) return [];
  // An update that keeps the stored spec itself (a status write shares it, as does a patch of metadata alone) would
  // find nothing: the spec passed these rules when it was stored, and it equals itself. Kubelets and controllers
  // write status on most steps, and a Pod's rules compare two copies of its spec.
  if (old !== undefined && object.spec !== undefined && object.spec === old.spec && specOnlyValidators.has(id)) return [];
  return validate(object, old);
}

/**
 * A Secret's `stringData` is write-only: the API server merges it into `data` (base64 of its UTF-8, over what `data`
 * has under the same key) and never stores or returns it, so a controller that writes `stringData` reads `data`.
 */
function mergeStringData(secret: KubeObject): void {
  const stringData = secret.stringData;
  if (!isRecord(stringData)) return;
  const data: Record<string, unknown> = isRecord(secret.data) ? { ...secret.data } : {};
  for (const [key, value] of Object.entries(stringData)) data[key] = Buffer.from(String(value), "utf8").toString("base64");
  secret.data = data;
  delete secret.stringData;
}

function setDefault(target: Record<string, unknown>, key: string, value: unknown): void {
  if (target[key] === undefined) target[key] = value;
}

/** Defaulting applied on every write, so that a write without the defaults is not a change. */
export function applyDefaults(object: KubeObject, resource: ResourceType): void {
  const spec = specOf(object);
  const id = `${resource.group}/${resource.kind}`;
  if (id === "/Pod" && spec !== undefined && !Object.isFrozen(spec)) {
    setDefault(spec, "restartPolicy", "Always");
    setDefault(spec, "terminationGracePeriodSeconds", 30);
    setDefault(spec, "schedulerName", "default-scheduler");
  } else if ((id === "apps/Deployment" || id === "apps/ReplicaSet" || id === "apps/StatefulSet") && spec !== undefined && !Object.isFrozen(spec)) {
    setDefault(spec, "replicas", 1);
  } else if (id === "batch/Job" && spec !== undefined && !Object.isFrozen(spec)) {
    setDefault(spec, "parallelism", 1);
    setDefault(spec, "completions", 1);
    setDefault(spec, "backoffLimit", 6);
  } else if (id === "/Secret") {
    if (object.type === undefined) object.type = "Opaque";
    mergeStringData(object);
  } else if (id === "/Namespace") {
    const nsSpec = isRecord(object.spec) && !Object.isFrozen(object.spec) ? object.spec : (object.spec = { ...(object.spec as object) });
    if (!Array.isArray(nsSpec.finalizers)) nsSpec.finalizers = ["kubernetes"];
  }
}

/** What a create sets that a client cannot: a pod starts Pending, a namespace Active, a Job selects its pods by uid. */
export function prepareForCreate(object: KubeObject, resource: ResourceType): void {
  const id = `${resource.group}/${resource.kind}`;
  if (id === "/Pod") object.status = { phase: "Pending" };
  if (id === "/Namespace") object.status = { phase: "Active" };
  if (id === "batch/Job") selectJobPods(object);
}

/** batch/v1 Jobs without `manualSelector` select their pods by the Job's uid, and label the template so. */
function selectJobPods(job: KubeObject): void {
  const spec = specOf(job);
  if (spec === undefined || spec.manualSelector === true) return;
  const uid = job.metadata.uid ?? "";
  const name = job.metadata.name ?? "";
  spec.selector = { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
  if (!isRecord(spec.template)) return;
  const template = spec.template;
  if (!isRecord(template.metadata)) template.metadata = {};
  const meta = template.metadata as Record<string, unknown>;
  const labels = isRecord(meta.labels) ? meta.labels : {};
  meta.labels = {
    ...labels,
    "batch.kubernetes.io/controller-uid": uid,
    "batch.kubernetes.io/job-name": name,
    "controller-uid": uid,
    "job-name": name,
  };
}
