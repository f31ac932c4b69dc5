// `--setup FILE...`: manifests loaded into the store before the server listens, as `kubectl create -f` would
// (multi-document YAML or JSON, `List` kinds unpacked, documents created in order so a CRD precedes its resources).
import { readFileSync } from "node:fs";
import { isApiError } from "../api/errors.ts";
import { isRecord } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import type { Store } from "../store/index.ts";
import { yaml } from "./yaml-keys.ts";

export class SetupError extends Error {
  override name = "SetupError";
}

/** The objects of one manifest text, in document order. */
export function manifestObjects(text: string, source: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const [index, document] of yaml().parseAllDocuments(text).entries()) {
    if (document.errors.length > 0) throw new SetupError(`${source}: document ${index + 1}: ${document.errors[0]!.message}`);
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) continue;
    if (!isRecord(value)) throw new SetupError(`${source}: document ${index + 1} is not an object`);
    const items = typeof value.kind === "string" && value.kind.endsWith("List") && Array.isArray(value.items) ? value.items : [value];
    for (const item of items) {
      if (!isRecord(item) || typeof item.apiVersion !== "string" || typeof item.kind !== "string") {
        throw new SetupError(`${source}: document ${index + 1}: every object needs apiVersion and kind`);
      }
      objects.push({ metadata: {}, ...item } as KubeObject);
    }
  }
  return objects;
}

/** Creates every object of the files, in order; a failure names the file and the object. */
export function loadSetup(store: Store, paths: readonly string[]): number {
  let created = 0;
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      throw new SetupError(`${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const object of manifestObjects(text, path)) {
      try {
        if (object.metadata.namespace === undefined && store.resourceFor(object).namespaced) object.metadata = { ...object.metadata, namespace: "default" };
        store.create(object);
      } catch (error) {
        if (!isApiError(error)) throw error;
        throw new SetupError(`${path}: ${object.kind} ${object.metadata.name ?? "?"}: ${error.message}`);
      }
      created++;
    }
  }
  return created;
}
