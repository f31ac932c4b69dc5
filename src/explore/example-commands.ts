// The command lines settle prints for running a variant of an example: `settle list-examples` (its text and its
// JSON's `run` and `commands`), the hint of `settle explore` for a variant it skips, and the replay line of a drill.
// One source, so that what settle tells a user to type is what the examples' tests run (test/examples/commands).

/** Where a variant runs: settle explore (a code scenario, or a scenario.yaml variant with a program) and settle drill. */
export type Runner = "explore" | "drill";

/** The command line that runs `variant` of the scenario at `scenario` (a path as shown) under `runner`. */
export function variantCommand(runner: Runner, scenario: string, variant: string): string {
  return `settle ${runner} ${scenario} --variant ${variant}`;
}

/**
 * The runners of a scenario.yaml variant, the first the one to reach for: a program (`module:` or `go:`) runs in the
 * simulator and, as a process, under settle drill; a variant with only a command runs only under settle drill.
 */
export function yamlVariantRunners(variant: { module?: string; go?: string }): Runner[] {
  return variant.module !== undefined || variant.go !== undefined ? ["explore", "drill"] : ["drill"];
}
