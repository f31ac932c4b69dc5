// What the store derives from a resource type alone (its `apiVersion` string, its quantity message, the fields
// whose changes leave `generation` alone), built once per type and kept with it.
import { formatApiVersion } from "../api/object.ts";
import { quantityMessageOf } from "../api/quantities.ts";
import type { ResourceType } from "../api/resources.ts";

/**
 * What the store derives from a resource type alone, built once per type: every read compares each object's
 * `apiVersion` with it, and every write of a built-in kind asks for its quantity message and compares the object
 * outside the same top-level fields. Building them per request (a string key, an array) was a measurable part of
 * a write.
 */
interface ResourceFacts {
  readonly apiVersion: string;
  /** `quantityMessageOf` for the type: undefined when no Quantity field is reachable from it. */
  readonly quantityMessage: string | undefined;
  /** The top-level fields whose changes do not bump `generation`. */
  readonly generationIgnores: readonly string[];
}

const resourceFacts = new WeakMap<ResourceType, ResourceFacts>();
const ignoresMetadata: readonly string[] = Object.freeze(["metadata"]);
const ignoresMetadataAndStatus: readonly string[] = Object.freeze(["metadata", "status"]);

/** The facts of a resource type, built on first use. */
export function factsOf(resource: ResourceType): ResourceFacts {
  let facts = resourceFacts.get(resource);
  if (facts === undefined) {
    facts = {
      apiVersion: formatApiVersion(resource),
      quantityMessage: quantityMessageOf(resource.group, resource.version, resource.kind),
      generationIgnores: resource.statusSubresource ? ignoresMetadataAndStatus : ignoresMetadata,
    };
    resourceFacts.set(resource, facts);
  }
  return facts;
}

/** The `apiVersion` string of a resource type ("v1", "apps/v1"). */
export function apiVersionOf(resource: ResourceType): string {
  return factsOf(resource).apiVersion;
}
