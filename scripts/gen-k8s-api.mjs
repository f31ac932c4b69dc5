#!/usr/bin/env node
// Generates src/api/generated/k8s-api.ts from the Kubernetes protobuf definitions (the `generated.proto` files of
// kubernetes/api and kubernetes/apimachinery): every message of every stable built-in group version with its fields'
// protobuf numbers, types and JSON names, the merge markers the API server's strategic merge and server-side apply
// read (`+patchMergeKey`, `+patchStrategy`, `+listType`, `+listMapKey`, `+structType`, `+mapType`), `+default`
// values, and the kinds with the subresources their types declare (`+k8s:supportsSubresource`). Comment text is
// not copied: only those markers are read out of the comments.
//
//   node scripts/gen-k8s-api.mjs [definitions-dir]     (default: ../shared/k8s-api beside the repository)
//
// The output is committed, so a checkout builds without the definitions; run this again when they change and
// commit the result with them.
import { readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const source = resolve(process.argv[2] ?? join(repo, "..", "shared", "k8s-api"));
const output = join(repo, "src", "api", "generated", "k8s-api.ts");

/**
 * The API group of each `k8s.io/api/<dir>` package: the `+groupName` of its Go package, which the protobuf
 * files do not carry.
 */
const groupOfPackage = {
  admissionregistration: "admissionregistration.k8s.io",
  apps: "apps",
  authentication: "authentication.k8s.io",
  authorization: "authorization.k8s.io",
  autoscaling: "autoscaling",
  batch: "batch",
  certificates: "certificates.k8s.io",
  coordination: "coordination.k8s.io",
  core: "",
  discovery: "discovery.k8s.io",
  events: "events.k8s.io",
  flowcontrol: "flowcontrol.apiserver.k8s.io",
  networking: "networking.k8s.io",
  node: "node.k8s.io",
  policy: "policy",
  rbac: "rbac.authorization.k8s.io",
  scheduling: "scheduling.k8s.io",
  storage: "storage.k8s.io",
};

const scalarTypes = new Set(["string", "bool", "bytes", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "double", "float"]);

function protoFiles(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return protoFiles(path);
      return name.endsWith(".proto") ? [path] : [];
    });
}

/** A short, stable id for a protobuf package: `apps/v1`, `core/v1`, `meta/v1`, `runtime`, `intstr`... */
function shortPackage(fullName) {
  const name = fullName.replace(/^\./, "");
  let m = /^k8s\.io\.api\.([a-z0-9]+)\.(v[a-z0-9]+)$/.exec(name);
  if (m !== null) return `${m[1]}/${m[2]}`;
  m = /^k8s\.io\.apimachinery\.pkg\.apis\.([a-z0-9]+)\.(v[a-z0-9]+)$/.exec(name);
  if (m !== null) return `${m[1]}/${m[2]}`;
  m = /^k8s\.io\.apimachinery\.pkg\.(?:[a-z]+\.)*([a-z0-9]+)$/.exec(name);
  if (m !== null) return m[1];
  throw new Error(`unexpected protobuf package ${fullName}`);
}

function idOf(type) {
  return `${shortPackage(type.parent.fullName)}.${type.name}`;
}

/** The `+marker=value` lines of a comment (only the markers settle reads), as a map. */
function markers(comment) {
  const found = {};
  for (const line of (comment ?? "").split("\n")) {
    const m = /^\s*\+(patchMergeKey|patchStrategy|listType|listMapKey|structType|mapType|default|k8s:supportsSubresource)=(.*)$/.exec(line);
    if (m === null) continue;
    const [, key, value] = m;
    if (key === "listMapKey" || key === "k8s:supportsSubresource") (found[key] ??= []).push(value.trim().replace(/^"\/?|"$/g, ""));
    else found[key] = value.trim();
  }
  return found;
}

/** Whether a comment carries a flag marker (`+optional`, `+required`) on a line of its own. */
function hasFlag(comment, flag) {
  return (comment ?? "").split("\n").some((line) => line.trim() === `+${flag}`);
}

function typeName(field) {
  if (scalarTypes.has(field.type)) return field.type;
  if (field.resolvedType === null) throw new Error(`unresolved type ${field.type} of ${field.fullName}`);
  return idOf(field.resolvedType);
}

/**
 * Fields whose protobuf name is not their JSON name: the Go struct tag names the protobuf field after the Go field.
 * (`DaemonEndpoint.Port` is `Port` in JSON too, and `FieldsV1.Raw` is the raw JSON itself.)
 */
const jsonNames = {
  "admissionregistration/v1.MutatingWebhookConfiguration.Webhooks": "webhooks",
  "admissionregistration/v1.ValidatingWebhookConfiguration.Webhooks": "webhooks",
  "admissionregistration/v1.Validation.Expression": "expression",
  "admissionregistration/v1.Variable.Name": "name",
  "admissionregistration/v1.Variable.Expression": "expression",
};

/**
 * Fields Go embeds with `json:",inline"`: their message's fields appear in the parent's JSON, not under the field's
 * name. The protobuf files do not say so (the struct tags do), hence a hand list; a test checks each entry exists.
 */
const inlineFields = new Set([
  "core/v1.Volume.volumeSource",
  "core/v1.PersistentVolumeSpec.persistentVolumeSource",
  "core/v1.Probe.handler",
  "core/v1.ConfigMapEnvSource.localObjectReference",
  "core/v1.ConfigMapKeySelector.localObjectReference",
  "core/v1.ConfigMapProjection.localObjectReference",
  "core/v1.ConfigMapVolumeSource.localObjectReference",
  "core/v1.SecretEnvSource.localObjectReference",
  "core/v1.SecretKeySelector.localObjectReference",
  "core/v1.SecretProjection.localObjectReference",
  "core/v1.EphemeralContainer.ephemeralContainerCommon",
  "core/v1.VolumeMountStatus.volumeStatus",
  "networking/v1.IngressRule.ingressRuleValue",
  "admissionregistration/v1.RuleWithOperations.rule",
  "admissionregistration/v1.NamedRuleWithOperations.ruleWithOperations",
]);

/**
 * Fields with neither `+optional` nor `+required` whose Go struct tag has `omitempty`: kube-openapi leaves them out of
 * `required` (it reads `+optional`, then `+required`, then `omitempty`). The protobuf files carry the markers but not
 * the struct tags, hence a hand list; every other field without a marker is required, as kube-openapi makes it.
 */
const omitemptyFields = new Set([
  "apps/v1.DeploymentStatus.conditions",
  "apps/v1.StatefulSetStatus.readyReplicas",
  "apps/v1.StatefulSetStatus.currentReplicas",
  "apps/v1.StatefulSetStatus.updatedReplicas",
  "apps/v1.StatefulSetStatus.currentRevision",
  "apps/v1.StatefulSetStatus.updateRevision",
  "batch/v1.JobStatus.ready",
  "core/v1.ServiceSpec.ports",
  "core/v1.PodSpec.initContainers",
  "core/v1.PodStatus.initContainerStatuses",
  "core/v1.HostAlias.hostnames",
  "core/v1.VolumeNodeAffinity.required",
  "core/v1.EphemeralContainerCommon.image",
  "core/v1.ModifyVolumeStatus.targetVolumeAttributesClassName",
  "core/v1.PortworxVolumeSource.fsType",
  "core/v1.PhotonPersistentDiskVolumeSource.fsType",
  "core/v1.PersistentVolumeSource.photonPersistentDisk",
  "core/v1.VolumeSource.photonPersistentDisk",
  "core/v1.VolumeSource.projected",
  "core/v1.PodDNSConfigOption.name",
  "core/v1.NodeConfigSource.configMap",
  "core/v1.EphemeralVolumeSource.volumeClaimTemplate",
  "core/v1.PodResourceClaim.resourceClaimName",
  "core/v1.PodResourceClaim.resourceClaimTemplateName",
  "core/v1.PodCertificateProjection.userAnnotations",
  "core/v1.StorageOSVolumeSource.volumeName",
  "core/v1.StorageOSPersistentVolumeSource.volumeName",
  "core/v1.AzureDiskVolumeSource.kind",
  "core/v1.ResourceStatus.resources",
  "core/v1.ResourceHealth.health",
  "events/v1.Event.reportingController",
  "events/v1.Event.reportingInstance",
  "events/v1.Event.action",
  "events/v1.Event.reason",
  "events/v1.Event.type",
  "storage/v1.CSIDriver.metadata",
  "storage/v1.CSINode.metadata",
  "storage/v1.VolumeAttributesClass.parameters",
  "networking/v1.IngressServiceBackend.port",
  "networking/v1.IngressClassSpec.controller",
  "discovery/v1.EndpointPort.name",
  "discovery/v1.EndpointPort.protocol",
  "discovery/v1.EndpointPort.port",
  "discovery/v1.Endpoint.conditions",
  "discovery/v1.EndpointHints.forZones",
  "discovery/v1.EndpointHints.forNodes",
  "certificates/v1.CertificateSigningRequestSpec.usages",
  "authorization/v1.SelfSubjectRulesReviewSpec.namespace",
  "admissionregistration/v1.MutatingWebhook.rules",
  "admissionregistration/v1.ValidatingWebhook.rules",
  "admissionregistration/v1.RuleWithOperations.operations",
  "admissionregistration/v1.Rule.apiGroups",
  "admissionregistration/v1.Rule.apiVersions",
  "admissionregistration/v1.Rule.resources",
  "admissionregistration/v1.ParamRef.name",
  "admissionregistration/v1.ParamRef.parameterNotFoundAction",
  "admissionregistration/v1.ParamKind.apiVersion",
  "admissionregistration/v1.ParamKind.kind",
  "admissionregistration/v1.ValidatingAdmissionPolicy.spec",
  "admissionregistration/v1.ValidatingAdmissionPolicySpec.matchConstraints",
  "admissionregistration/v1.MutatingAdmissionPolicy.spec",
  "admissionregistration/v1.MutatingAdmissionPolicySpec.matchConstraints",
  "admissionregistration/v1.MutatingAdmissionPolicySpec.reinvocationPolicy",
  "admissionregistration/v1.MutatingAdmissionPolicyBinding.spec",
  "admissionregistration/v1.MutatingAdmissionPolicyBindingSpec.policyName",
  "admissionregistration/v1.ApplyConfiguration.expression",
  "admissionregistration/v1.JSONPatch.expression",
  "admissionregistration/v1.Mutation.applyConfiguration",
  "admissionregistration/v1.Mutation.jsonPatch",
  "meta/v1.ListMeta.continue",
  "meta/v1.ManagedFieldsEntry.manager",
  "meta/v1.ManagedFieldsEntry.operation",
  "meta/v1.ManagedFieldsEntry.apiVersion",
  "meta/v1.ManagedFieldsEntry.fieldsType",
  "meta/v1.ManagedFieldsEntry.subresource",
  "meta/v1.APIResource.singularName",
  "meta/v1.APIResource.group",
  "meta/v1.APIResource.version",
  "meta/v1.APIResource.shortNames",
  "meta/v1.APIResource.categories",
  "meta/v1.APIVersions.serverAddressByClientCIDRs",
  "meta/v1.GroupVersionForDiscovery.groupVersion",
]);

/**
 * Packages whose messages are value types (Quantity, IntOrString, the runtime envelope) or options, not object schemas:
 * their fields are never listed as required.
 */
const unrequiredPackages = new Set(["runtime", "resource", "intstr", "schema"]);

/** Whether OpenAPI lists the field in its message's `required`, by kube-openapi's rule (see omitemptyFields). */
function isRequired(field, id) {
  if (hasFlag(field.comment, "required")) return true;
  if (hasFlag(field.comment, "optional") || omitemptyFields.has(id) || inlineFields.has(id)) return false;
  return !unrequiredPackages.has(shortPackage(field.parent.parent.fullName));
}

function fieldEntry(field) {
  const m = markers(field.comment);
  const entry = { name: jsonNames[`${idOf(field.parent)}.${field.name}`] ?? field.name, id: field.id, type: typeName(field) };
  if (field.map) entry.map = field.keyType;
  if (field.repeated) entry.repeated = true;
  if (m.patchMergeKey !== undefined) entry.patchMergeKey = m.patchMergeKey;
  if (m.patchStrategy !== undefined) entry.patchStrategy = m.patchStrategy;
  if (m.listType !== undefined) entry.listType = m.listType;
  if (m.listMapKey !== undefined) entry.listMapKeys = m.listMapKey;
  if (m.structType !== undefined) entry.structType = m.structType;
  if (m.mapType !== undefined) entry.mapType = m.mapType;
  if (m.default !== undefined) entry.default = m.default;
  if (inlineFields.has(`${idOf(field.parent)}.${field.name}`)) entry.inline = true;
  if (isRequired(field, `${idOf(field.parent)}.${field.name}`)) entry.required = true;
  return entry;
}

function load() {
  const root = new protobuf.Root();
  const files = protoFiles(source);
  if (files.length === 0) throw new Error(`no .proto files under ${source}`);
  for (const file of files) {
    protobuf.parse(readFileSync(file, "utf8"), root, { keepCase: true, alternateCommentMode: true });
  }
  // Fields of alpha types whose group version is not in the definitions (feature-gated, off on a stable server)
  // cannot be resolved: they are left out, and named so that a new one does not go unnoticed.
  const skipped = [];
  for (const message of allMessages(root)) {
    for (const field of [...message.fieldsArray]) {
      try {
        field.resolve();
      } catch {
        message.remove(field);
        skipped.push(`${idOf(message)}.${field.name} (${field.type})`);
      }
    }
  }
  root.resolveAll();
  if (skipped.length > 0) process.stdout.write(`left out (type not in the definitions): ${skipped.join(", ")}\n`);
  return { root, files };
}

function allMessages(namespace, out = []) {
  for (const nested of namespace.nestedArray) {
    if (nested instanceof protobuf.Type) out.push(nested);
    if (nested.nestedArray !== undefined) allMessages(nested, out);
  }
  return out;
}

/**
 * Kinds: messages with `ObjectMeta` metadata that have a `<Kind>List` or that no other message embeds (the review
 * and subresource kinds: TokenReview, Scale, Eviction...). Embedded templates (PodTemplateSpec) are not kinds.
 */
function kindsOf(messages) {
  const embedded = new Set();
  for (const message of messages) for (const field of message.fieldsArray) if (field.resolvedType !== null) embedded.add(field.resolvedType);
  const kinds = [];
  for (const message of messages) {
    const pkg = /^\.?k8s\.io\.api\.([a-z0-9]+)\.(v[a-z0-9]+)$/.exec(message.parent.fullName.replace(/^\./, "."));
    if (pkg === null) continue;
    const metadata = message.fields.metadata;
    if (metadata === undefined || metadata.resolvedType?.name !== "ObjectMeta") continue;
    const hasList = message.parent.nested[`${message.name}List`] !== undefined;
    if (!hasList && embedded.has(message)) continue;
    const group = groupOfPackage[pkg[1]];
    if (group === undefined) throw new Error(`no API group known for package ${pkg[1]}`);
    const kind = { group, version: pkg[2], kind: message.name, message: idOf(message), list: hasList };
    const subresources = markers(message.comment)["k8s:supportsSubresource"];
    if (subresources !== undefined) kind.subresources = subresources;
    kinds.push(kind);
  }
  return kinds.sort((a, b) => (a.group + "/" + a.version + "/" + a.kind < b.group + "/" + b.version + "/" + b.kind ? -1 : 1));
}

/** The commits the definitions were taken from, as their README names them (`kubernetes/api` ... commit <id>). */
function commitsOf(dir) {
  let readme = "";
  try {
    readme = readFileSync(join(dir, "README.md"), "utf8");
  } catch {
    return "commits not recorded";
  }
  const found = [...readme.matchAll(/`(kubernetes\/[a-z]+)`[^`]*?commit\s+([0-9a-f]{7,40})/g)].map((m) => `${m[1]}@${m[2]}`);
  return found.length === 0 ? "commits not recorded" : found.join(", ");
}

function render(messages, kinds, files) {
  const lines = [];
  lines.push("// Generated by scripts/gen-k8s-api.mjs from the Kubernetes protobuf definitions; do not edit.");
  lines.push(`// Definitions: ${commitsOf(source)}`);
  lines.push("// Sources: " + files.map((f) => relative(source, f)).join(", "));
  lines.push('import type { WireField, WireKind } from "../wire-types.ts";');
  lines.push("");
  lines.push("/** Every message: `<package>.<Name>` -> its fields in field-number order. */");
  lines.push("export const wireMessages: Readonly<Record<string, readonly WireField[]>> = {");
  for (const message of [...messages].sort((a, b) => (idOf(a) < idOf(b) ? -1 : 1))) {
    const fields = [...message.fieldsArray].sort((a, b) => a.id - b.id).map(fieldEntry);
    lines.push(`  ${JSON.stringify(idOf(message))}: ${JSON.stringify(fields)},`);
  }
  lines.push("};");
  lines.push("");
  lines.push("/** Every kind of the stable built-in group versions, with the subresources its type declares. */");
  lines.push("export const wireKinds: readonly WireKind[] = [");
  for (const kind of kinds) lines.push(`  ${JSON.stringify(kind)},`);
  lines.push("];");
  lines.push("");
  return lines.join("\n");
}

function structMarkers(messages) {
  // Type-level markers (`+structType=atomic` on LabelSelector...) belong to the message, not a field.
  const atomic = [];
  for (const message of messages) if (markers(message.comment).structType === "atomic") atomic.push(idOf(message));
  return atomic.sort();
}

const { root, files } = load();
const messages = allMessages(root).filter((m) => !m.name.endsWith("Entry") || m.fieldsArray.length !== 2 || m.fields.key === undefined);
const kinds = kindsOf(messages);
// A hand-list entry that names no field (a typo, a field renamed upstream) would silently do nothing.
const fieldIds = new Set(messages.flatMap((m) => m.fieldsArray.map((f) => `${idOf(m)}.${f.name}`)));
const stale = [...omitemptyFields].filter((id) => !fieldIds.has(id));
if (stale.length > 0) throw new Error(`omitemptyFields names fields the definitions do not have: ${stale.join(", ")}`);
let text = render(messages, kinds, files);
text += "/** Messages whose Go type is marked `+structType=atomic`: replaced whole by merges and applies. */\n";
text += `export const wireAtomicStructs: readonly string[] = ${JSON.stringify(structMarkers(messages))};\n`;
mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, text);
process.stdout.write(`${relative(repo, output)}: ${messages.length} messages, ${kinds.length} kinds, ${text.length} bytes\n`);
