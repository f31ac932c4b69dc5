// The random source on its own: every draw stays in its range and reaches all of it, pick and shuffle reach every
// item and permutation, a draw that has one outcome takes nothing from the stream, and forks are independent of
// what their parent draws later. The exact draws of a seed are part of the replay format, so a few are pinned.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng } from "../../src/sim/rng.ts";

/** Counts of each value among `draws` draws. */
function histogram(draws: number, draw: () => number | string): Map<number | string, number> {
  const counts = new Map<number | string, number>();
  for (let i = 0; i < draws; i++) {
    const value = draw();
    counts.set(value, (counts.get(value) ?? 0) + 1);
  }
  return counts;
}

/** Each of `outcomes` outcomes drawn about `draws / outcomes` times: within a quarter of it (far wider than chance). */
function assertEven(counts: Map<number | string, number>, outcomes: number, draws: number): void {
  assert.equal(counts.size, outcomes, `every one of ${outcomes} outcomes drawn (got ${counts.size})`);
  const expected = draws / outcomes;
  for (const [value, count] of counts) {
    assert.ok(Math.abs(count - expected) < expected / 4, `${String(value)} drawn ${count} times, about ${expected} expected`);
  }
}

test("between draws both ends and every value in between, and nothing outside", () => {
  const rng = new Rng(11);
  for (const [min, max] of [[0, 1], [-3, 3], [10, 17], [-0x8000_0000, -0x7fff_fffe], [0x7fff_fffe, 0x8000_0001]] as const) {
    const counts = histogram(2000, () => rng.between(min, max));
    const values = [...counts.keys()].sort((a, b) => Number(a) - Number(b));
    assert.deepEqual(values, Array.from({ length: max - min + 1 }, (_, i) => min + i), `between(${min}, ${max})`);
  }
  assert.equal(new Rng(1).between(5, 5), 5);
  assert.equal(new Rng(1).between(-7, -7), -7);
  assert.throws(() => rng.between(3, 2), /min <= max/);
});

test("between spreads evenly over its range", () => {
  const rng = new Rng(12);
  assertEven(histogram(12_000, () => rng.between(1, 6)), 6, 12_000);
});

test("int draws every value of [0, n) evenly and nothing else, for bounds from 1 to 2^32", () => {
  const rng = new Rng(13);
  for (const bound of [1, 2, 3, 7, 10]) {
    const draws = 2000 * bound;
    const counts = histogram(draws, () => rng.int(bound));
    assertEven(counts, bound, draws);
    assert.ok([...counts.keys()].every((n) => Number.isInteger(n) && Number(n) >= 0 && Number(n) < bound), `int(${bound})`);
  }
  // The widest bound: whole numbers in [0, 2^32), on both sides of 2^31 (a sign slip shows as negatives).
  const wide = Array.from({ length: 2000 }, () => rng.int(0x1_0000_0000));
  assert.ok(wide.every((n) => Number.isInteger(n) && n >= 0 && n < 0x1_0000_0000), "whole numbers in [0, 2^32)");
  assert.ok(wide.some((n) => n >= 0x8000_0000) && wide.some((n) => n < 0x8000_0000), "both sides of 2^31 reached");
  assert.ok(wide.some((n) => n >= 0xf000_0000) && wide.some((n) => n < 0x1000_0000), "both ends of the range reached");
  for (const bad of [0, -1, 1.5, 0x1_0000_0001, Number.NaN]) assert.throws(() => rng.int(bad), /rng int bound/, `int(${bad})`);
});

test("a draw with a single outcome takes nothing from the stream", () => {
  // A choice among one ready step, or a chance of 0 or 1, must not shift the draws after it: a scenario that
  // gains such a draw keeps every other draw of its runs.
  const next = (rng: Rng) => Array.from({ length: 5 }, () => rng.int(1_000_000));
  const untouched = next(new Rng(21));
  for (const single of [(r: Rng) => r.int(1), (r: Rng) => r.between(4, 4), (r: Rng) => r.chance(0, 3), (r: Rng) => r.chance(3, 3), (r: Rng) => r.chance(9, 3), (r: Rng) => r.pick(["only"])]) {
    const rng = new Rng(21);
    single(rng);
    assert.deepEqual(next(rng), untouched, String(single));
  }
  assert.equal(new Rng(1).int(1), 0);
  assert.equal(new Rng(1).chance(0, 1), false);
  assert.equal(new Rng(1).chance(1, 1), true);
  assert.equal(new Rng(1).chance(9, 3), true);
});

test("chance holds with its ratio, and takes whole numbers only", () => {
  const rng = new Rng(22);
  for (const [numerator, denominator] of [[1, 4], [3, 4], [1, 2], [2, 3]] as const) {
    let hits = 0;
    for (let i = 0; i < 8000; i++) if (rng.chance(numerator, denominator)) hits++;
    const expected = (8000 * numerator) / denominator;
    assert.ok(Math.abs(hits - expected) < 8000 / 40, `chance(${numerator}, ${denominator}): ${hits} of 8000, about ${expected} expected`);
  }
  assert.throws(() => rng.chance(-1, 4), /numerator/);
  assert.throws(() => rng.chance(1.5, 4), /numerator/);
  assert.throws(() => rng.chance(1, 0), /denominator/);
  assert.throws(() => rng.chance(1, 2.5), /denominator/);
});

// Over seeds, a consumer draws from a fork (the kernel's streams are all forks): the first draws of a root stream
// across consecutive seeds follow the seed closely (xoroshiro128+ seeded with nearby values), so consecutive root
// seeds are checked to reach every outcome, and forks over seeds to reach them evenly.
test("pick reaches every item over seeds, evenly along a stream and over forks", () => {
  const items = ["a", "b", "c", "d", "e"] as const;
  assert.equal(histogram(100, ((seed) => () => new Rng(seed++).pick(items))(0)).size, 5);
  assertEven(histogram(5000, ((seed) => () => new Rng(seed++).fork("pick").pick(items))(0)), 5, 5000);
  const rng = new Rng(23);
  assertEven(histogram(5000, () => rng.pick(items)), 5, 5000);
  assert.throws(() => rng.pick([]), /non-empty/);
});

test("shuffle reaches every permutation over seeds, evenly along a stream and over forks, in place", () => {
  const order = (rng: Rng) => rng.shuffle(["a", "b", "c", "d"]).join("");
  assert.equal(histogram(24 * 300, ((seed) => () => order(new Rng(seed++)))(0)).size, 24);
  assertEven(histogram(24 * 300, ((seed) => () => order(new Rng(seed++).fork("shuffle")))(0)), 24, 24 * 300);
  const stream = new Rng(26);
  assertEven(histogram(24 * 300, () => order(stream)), 24, 24 * 300);
  const rng = new Rng(24);
  const items = [1, 2, 3, 4, 5, 6, 7, 8];
  const shuffled = rng.shuffle(items);
  assert.equal(shuffled, items, "the same array comes back");
  assert.deepEqual([...shuffled].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8]);
  // Every position takes every item over enough shuffles (a shuffle that never moves one end fails here).
  const seen = Array.from({ length: 8 }, () => new Set<number>());
  for (let i = 0; i < 400; i++) rng.shuffle([1, 2, 3, 4, 5, 6, 7, 8]).forEach((item, position) => seen[position]!.add(item));
  assert.deepEqual(seen.map((s) => s.size), Array(8).fill(8));
  assert.deepEqual(rng.shuffle([]), []);
  assert.deepEqual(rng.shuffle(["x"]), ["x"]);
});

test("float draws [0, 1) with 32 random bits", () => {
  const rng = new Rng(25);
  const floats = Array.from({ length: 4000 }, () => rng.float());
  // Every assert.ok here has a message: without one, a failing assert makes node work out the expression from this
  // file's source, which took over a minute here.
  assert.ok(floats.every((x) => x >= 0 && x < 1 && Number.isInteger(x * 0x1_0000_0000)), "multiples of 2^-32 in [0, 1)");
  assert.ok(Math.min(...floats) < 0.01 && Math.max(...floats) > 0.99, `from ${Math.min(...floats)} to ${Math.max(...floats)}`);
  const low = floats.filter((x) => x < 0.5).length;
  assert.ok(Math.abs(low - 2000) < 200, `${low} of 4000 below one half`);
});

test("a forked stream is independent of its parent's later draws, and the parent of the fork", () => {
  const parent = new Rng(31);
  const child = parent.fork("child");
  const childDraws: number[] = [];
  const parentDraws: number[] = [];
  for (let i = 0; i < 20; i++) {
    childDraws.push(child.int(1_000_000));
    parentDraws.push(parent.int(1_000_000));
  }
  // The same fork of a parent that drew nothing, and a parent that never forked.
  const alone = new Rng(31).fork("child");
  assert.deepEqual(Array.from({ length: 20 }, () => alone.int(1_000_000)), childDraws);
  const unforked = new Rng(31);
  assert.deepEqual(Array.from({ length: 20 }, () => unforked.int(1_000_000)), parentDraws);
  assert.notDeepEqual(childDraws, parentDraws);
  // Another label, another parent seed, a fork of the fork: other streams.
  const firstDraws = (rng: Rng) => Array.from({ length: 20 }, () => rng.int(1_000_000));
  assert.notDeepEqual(firstDraws(new Rng(31).fork("chilD")), childDraws);
  assert.notDeepEqual(firstDraws(new Rng(32).fork("child")), childDraws);
  assert.notDeepEqual(firstDraws(new Rng(31).fork("child").fork("child")), childDraws);
  assert.equal(new Rng(31).fork("child").seed, child.seed);
});

test("a seed is a 32-bit integer: wider integers wrap, fractions are refused", () => {
  assert.equal(new Rng(-1).seed, -1);
  assert.equal(new Rng(0xffff_ffff).seed, -1);
  assert.equal(new Rng(0x1_0000_0007).seed, 7);
  const draws = (rng: Rng) => Array.from({ length: 5 }, () => rng.int(1_000_000));
  assert.deepEqual(draws(new Rng(0x1_0000_0007)), draws(new Rng(7)));
  assert.throws(() => new Rng(1.5), /seed is an integer/);
  assert.throws(() => new Rng(Number.NaN), /seed is an integer/);
});

test("the draws of a seed are pinned: replay files and trace hashes depend on them", () => {
  // A replay file records the seed, not the draws: any change to the generator, to a distribution or to how forks
  // derive their seeds makes every recorded run replay differently. Change these only with the replay format.
  const rng = new Rng(42);
  assert.deepEqual([rng.int(10), rng.int(0x1_0000_0000), rng.between(-5, 5), rng.float()], [5, 1440021225, -1, 0.8176910849288106]);
  assert.deepEqual(["strategy", "faults", "math-random", "actor/a/0", ""].map((label) => new Rng(42).fork(label).seed), [-884959656, 1835256824, 2145007715, -1694292138, -139498793]);
  assert.deepEqual([0, 1, -1].map((seed) => new Rng(seed).fork("strategy").seed), [1576866526, 1297794887, -2035921476]);
  assert.equal(new Rng(42).fork("faults").int(1000), 823);
});
