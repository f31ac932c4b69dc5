// Images as external state: a registry (tag -> digest, which a publisher moves) and one image cache per node
// (what `IfNotPresent` runs). Both survive actor crashes and reboots, as a real registry and disk do.

/** External cell of the registry: `"repo:tag" -> "sha256:..."`. */
export const registryCell = "registry";

/** External cell of a node's image cache. */
export function imageCacheCell(node: string): string {
  return `images/${node}`;
}

export interface ImageCache {
  /** `"repo:tag" -> digest` as last pulled on this node (possibly stale against the registry). */
  tags: Record<string, string>;
  /** `"repo@digest"` present on this node. */
  digests: string[];
}

export type Registry = Record<string, string>;

export interface ImageRef {
  repo: string;
  /** Absent when the reference pins a digest. */
  tag?: string;
  digest?: string;
}

/** Parses `repo[:tag][@digest]`; a missing tag and digest means `:latest`, as a container runtime reads it. */
export function parseImage(image: string): ImageRef {
  const at = image.indexOf("@");
  if (at >= 0) return { repo: stripTag(image.slice(0, at)), digest: image.slice(at + 1) };
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  if (colon > slash) return { repo: image.slice(0, colon), tag: image.slice(colon + 1) };
  return { repo: image, tag: "latest" };
}

function stripTag(name: string): string {
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  return colon > slash ? name.slice(0, colon) : name;
}

/** The digest part of an image reference (`x##*@`), or undefined for a tag reference. */
export function digestOf(image: string): string | undefined {
  return parseImage(image).digest;
}

/** The pull policy the API server defaults: Always for `:latest` (or no tag), IfNotPresent otherwise. */
export function defaultPullPolicy(image: string): string {
  const ref = parseImage(image);
  return ref.digest === undefined && ref.tag === "latest" ? "Always" : "IfNotPresent";
}

export type PullResult = { ok: true; digest: string; cache: ImageCache; pulled: boolean } | { ok: false; reason: "ErrImagePull" | "ErrImageNeverPull"; message: string };

/**
 * What the container runtime does for one image: `IfNotPresent` runs the cached digest of `repo:tag` (even
 * when the registry has moved on), `Always` resolves the tag at the registry, `repo@digest` pulls that digest
 * when it is missing. Pure: returns the cache after the pull.
 */
export function pullImage(image: string, policy: string, cache: ImageCache, registry: Registry): PullResult {
  const ref = parseImage(image);
  if (ref.digest !== undefined) {
    const pinned = `${ref.repo}@${ref.digest}`;
    if (cache.digests.includes(pinned)) return { ok: true, digest: ref.digest, cache, pulled: false };
    if (policy === "Never") return { ok: false, reason: "ErrImageNeverPull", message: `${image} is not present and the pull policy is Never` };
    return { ok: true, digest: ref.digest, cache: { tags: cache.tags, digests: [...cache.digests, pinned] }, pulled: true };
  }
  const key = `${ref.repo}:${ref.tag}`;
  const cached = cache.tags[key];
  if (cached !== undefined && policy !== "Always") return { ok: true, digest: cached, cache, pulled: false };
  if (policy === "Never") return { ok: false, reason: "ErrImageNeverPull", message: `${image} is not present and the pull policy is Never` };
  const digest = registry[key];
  if (digest === undefined) return { ok: false, reason: "ErrImagePull", message: `${key}: not found in the registry` };
  const pinned = `${ref.repo}@${digest}`;
  const digests = cache.digests.includes(pinned) ? cache.digests : [...cache.digests, pinned];
  return { ok: true, digest, cache: { tags: { ...cache.tags, [key]: digest }, digests }, pulled: cached !== digest };
}

export function emptyImageCache(): ImageCache {
  return { tags: {}, digests: [] };
}
