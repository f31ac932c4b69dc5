// Shrinking: from a failing run to a minimal one with the same verdict and property. First the faults
// (each one that is not needed goes), then the choices (delta debugging towards the FIFO default).
import { fifoStrategy, type Choices } from "../sim/strategy.ts";
import type { PlannedFault } from "../sim/types.ts";
import { findingKey } from "../check/verdict.ts";
import { runScenario, type RunOutcome, type RunSpec } from "./run.ts";
import type { Scenario } from "./scenario.ts";

export interface ShrinkInput {
  spec: Omit<RunSpec, "strategy" | "choices" | "faults" | "drawFaults" | "traceMode" | "expectTrace">;
  choices: Choices;
  faults: readonly PlannedFault[];
  outcome: RunOutcome;
}

export interface ShrinkResult {
  choices: Array<[number, number]>;
  faults: PlannedFault[];
  outcome: RunOutcome;
  /** Candidate runs tried. */
  attempts: number;
}

export interface ShrinkOptions {
  /** Candidate runs at most. Default 400. */
  attemptsMax?: number;
}

export async function shrink(scenario: Scenario, input: ShrinkInput, options: ShrinkOptions = {}): Promise<ShrinkResult> {
  const attemptsMax = options.attemptsMax ?? 400;
  const key = findingKey(input.outcome.verdict);
  let attempts = 0;
  let best = { choices: [...input.choices] as Array<[number, number]>, faults: [...input.faults], outcome: input.outcome };

  const attempt = async (choices: Array<[number, number]>, faults: PlannedFault[]): Promise<boolean> => {
    if (attempts >= attemptsMax) return false;
    attempts++;
    const outcome = await runScenario(scenario, { ...input.spec, choices: choices.length > 0 ? choices : [], faults, strategy: fifoStrategy() });
    if (findingKey(outcome.verdict) !== key) return false;
    // Keep what the run actually used: faults past its end are dropped, choices too.
    best = { choices: outcome.choices, faults: outcome.faults, outcome };
    return true;
  };

  // Faults: try each one without it, repeatedly, until none can go.
  let progress = true;
  while (progress && attempts < attemptsMax) {
    progress = false;
    for (let i = 0; i < best.faults.length; i++) {
      const fewer = best.faults.filter((_, j) => j !== i);
      if (await attempt(best.choices, fewer)) {
        progress = true;
        break;
      }
    }
  }
  // Choices: all default first; then ddmin over chunks of non-default choices.
  if (best.choices.length > 0 && !(await attempt([], best.faults))) {
    let chunks = 2;
    while (best.choices.length > 0 && attempts < attemptsMax) {
      const size = Math.ceil(best.choices.length / chunks);
      let removed = false;
      for (let start = 0; start < best.choices.length; start += size) {
        const rest = [...best.choices.slice(0, start), ...best.choices.slice(start + size)];
        if (await attempt(rest, best.faults)) {
          removed = true;
          chunks = Math.max(chunks - 1, 2);
          break;
        }
      }
      if (removed) continue;
      if (size === 1) break;
      chunks = Math.min(chunks * 2, best.choices.length);
    }
  }
  return { ...best, attempts };
}
