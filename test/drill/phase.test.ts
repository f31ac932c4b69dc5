// A drill run's phases (src/drill/phase.ts): the transitions a run takes, and a named assertion for each it may not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { initialPhase, stepPhase, type PhaseInput, type RunPhase } from "../../src/drill/phase.ts";

test("a run goes opened, starting, watching, finished, closed; one that never watches finishes from starting", () => {
  const walk = (inputs: PhaseInput["type"][]): RunPhase[] => {
    const seen: RunPhase[] = [];
    let phase = initialPhase;
    for (const type of inputs) seen.push((phase = stepPhase(phase, { type } as PhaseInput)));
    return seen;
  };
  assert.deepEqual(walk(["begin", "watched", "finish", "close"]), ["starting", "watching", "finished", "closed"]);
  assert.deepEqual(walk(["begin", "finish", "close"]), ["starting", "finished", "closed"]);
  // A warmed-up run no point took is closed unopened; a run that threw is closed on the way out.
  assert.deepEqual(walk(["close"]), ["closed"]);
  assert.deepEqual(walk(["begin", "watched", "close"]), ["starting", "watching", "closed"]);
});

test("every transition a run may not take fails its named assertion", () => {
  const cases: Array<[RunPhase, PhaseInput["type"], RegExp]> = [
    ["starting", "begin", /a run begins once, from opened/],
    ["closed", "begin", /a run begins once, from opened/],
    ["opened", "watched", /a run's first watch comes while it starts/],
    ["watching", "watched", /a run's first watch comes while it starts/],
    ["opened", "finish", /a run finishes once, after it began/],
    ["finished", "finish", /a run finishes once, after it began/],
    ["closed", "close", /a run is closed once/],
  ];
  for (const [phase, type, message] of cases) assert.throws(() => stepPhase(phase, { type } as PhaseInput), message, `${phase} + ${type}`);
});
