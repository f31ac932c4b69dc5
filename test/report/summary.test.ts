// The figures a variant's summary line prints.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runsPerSecond } from "../../src/report/summary.ts";

test("runs per second keep two significant digits below one, so a long single run is not 0 runs/s", () => {
  assert.equal(runsPerSecond(1, 26_000), 0.038);
  assert.equal(runsPerSecond(3, 2_000), 1.5);
  assert.equal(runsPerSecond(1000, 12_345), 81);
  assert.equal(runsPerSecond(4, 0), 4, "a run too fast to time counts its runs");
});
