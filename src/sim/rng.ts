// The one source of randomness of a simulation: a seeded xoroshiro128+ (pure-rand), with integer ratios for
// probabilities and labelled sub-streams, so that adding a consumer never shifts the draws of another.
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import { uniformInt } from "pure-rand/distribution/uniformInt";
import type { RandomGenerator } from "pure-rand/types/RandomGenerator";
import { assert } from "../api/assert.ts";

/** FNV-1a over the characters of `text`, mixed into `seed`: a stable 32-bit seed for a named sub-stream. */
function mixSeed(seed: number, text: string): number {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  // One round of murmur3's finalizer spreads nearby labels apart.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b) >>> 0;
  hash ^= hash >>> 13;
  return hash | 0;
}

export class Rng {
  /** The 32-bit seed this stream started from (forks derive theirs from it, not from the draws made). */
  readonly seed: number;
  private readonly generator: RandomGenerator;

  constructor(seed: number) {
    assert(Number.isInteger(seed), "rng seed is an integer");
    this.seed = seed | 0;
    this.generator = xoroshiro128plus(this.seed);
  }

  /** A uniform integer in `[0, maxExclusive)`. */
  int(maxExclusive: number): number {
    assert(Number.isInteger(maxExclusive), "rng int bound is an integer");
    assert(maxExclusive >= 1 && maxExclusive <= 0x1_0000_0000, "rng int bound is in [1, 2^32]");
    if (maxExclusive === 1) return 0;
    return uniformInt(this.generator, 0, maxExclusive - 1);
  }

  /** A uniform integer in `[min, max]` (both included). */
  between(min: number, max: number): number {
    assert(min <= max, "rng between: min <= max");
    return min + this.int(max - min + 1);
  }

  /** True with probability `numerator / denominator`. */
  chance(numerator: number, denominator: number): boolean {
    assert(Number.isInteger(numerator) && numerator >= 0, "rng chance numerator is a non-negative integer");
    assert(Number.isInteger(denominator) && denominator >= 1, "rng chance denominator is a positive integer");
    if (numerator === 0) return false;
    if (numerator >= denominator) return true;
    return this.int(denominator) < numerator;
  }

  pick<T>(items: readonly T[]): T {
    assert(items.length > 0, "rng pick from a non-empty array");
    return items[this.int(items.length)] as T;
  }

  /** Fisher-Yates, in place; returns the array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const swap = items[i] as T;
      items[i] = items[j] as T;
      items[j] = swap;
    }
    return items;
  }

  /** A float in `[0, 1)` with 32 random bits: only for `Math.random` inside a run. */
  float(): number {
    return (this.generator.next() >>> 0) / 0x1_0000_0000;
  }

  /**
   * An independent stream named `label`. It depends only on this stream's seed and the label, never on how
   * many values were drawn, so a new consumer with its own label perturbs nobody else.
   */
  fork(label: string): Rng {
    return new Rng(mixSeed(this.seed, label));
  }
}
