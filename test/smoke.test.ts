import { test } from "node:test";
import assert from "node:assert/strict";
test("smoke", () => { const x: number = 1; assert.equal(x, 1); });
