// The checks a write makes against what is stored before anything else: the namespace it creates in is there and
// not terminating (the NamespaceLifecycle admission plugin), and the uid and resourceVersion preconditions of an
// update or delete (optimistic concurrency: a client that read an older version gets a 409 Conflict). Pure
// functions of the request and the stored objects: they change nothing.
import type { DeleteOptions } from "../api/client.ts";
import { ApiError, badRequest, conflict, notFound } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { ResourceType } from "../api/resources.ts";
import type { KindState } from "./registry.ts";
import { liveObject } from "./version.ts";

export function checkNamespaceOpen(namespaces: KindState, namespace: string, resource: ResourceType, name: string): void {
  const ns = liveObject(namespaces.objects.get(namespace));
  if (ns === undefined) throw notFound("namespaces", namespace);
  if (ns.metadata.deletionTimestamp === undefined) return;
  const what = resource.group === "" ? resource.plural : `${resource.plural}.${resource.group}`;
  throw new ApiError(
    "Forbidden",
    403,
    `${what} "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
    {
      name,
      group: resource.group,
      kind: resource.plural,
      causes: [{ reason: "NamespaceTerminating", message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" }],
    },
  );
}

export function checkUpdatePreconditions(object: KubeObject, current: KubeObject, resource: ResourceType): void {
  const meta = object.metadata;
  const name = current.metadata.name ?? "";
  const uid = meta.uid;
  if (uid !== undefined && uid !== "" && uid !== current.metadata.uid) {
    const why = `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`;
    throw conflict(resource.plural, name, why, resource.group);
  }
  const rv = meta.resourceVersion;
  if (rv === undefined || rv === "") return;
  if (typeof rv !== "string" || !/^[0-9]+$/.test(rv)) throw badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
  if (rv !== current.metadata.resourceVersion) {
    const why = "the object has been modified; please apply your changes to the latest version and try again";
    throw conflict(resource.plural, name, why, resource.group);
  }
}

export function checkDeletePreconditions(options: DeleteOptions, current: KubeObject, resource: ResourceType): void {
  const name = options.name;
  const uid = options.preconditions?.uid;
  if (uid !== undefined && uid !== current.metadata.uid) {
    const why = `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`;
    throw conflict(resource.plural, name, why, resource.group);
  }
  const rv = options.preconditions?.resourceVersion;
  if (rv !== undefined && rv !== current.metadata.resourceVersion) {
    const why = `Precondition failed: ResourceVersion in precondition: ${rv}, ResourceVersion in meta: ${current.metadata.resourceVersion}`;
    throw conflict(resource.plural, name, why, resource.group);
  }
}
