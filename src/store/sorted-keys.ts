// Sorted arrays of object keys in etcd's key order, as the kind table (registry.ts), the reads (reads.ts) and the
// garbage collector's host keep them: a leaf that every one of them imports, so that none imports another for it.

/** Plain code-unit order is byte order for the ASCII names Kubernetes allows: etcd's key order. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** First index in sorted `keys` whose key is >= `probe` (binary search). */
export function lowerBound(keys: readonly string[], probe: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < probe) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Puts `key` in its place in sorted `keys`, unless it is there already. */
export function insertSorted(keys: string[], key: string): void {
  const at = lowerBound(keys, key);
  if (keys[at] !== key) keys.splice(at, 0, key);
}

/** Takes `key` out of sorted `keys`, if it is there. */
export function removeSorted(keys: string[], key: string): void {
  const at = lowerBound(keys, key);
  if (keys[at] === key) keys.splice(at, 1);
}
