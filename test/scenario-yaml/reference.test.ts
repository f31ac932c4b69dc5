// The scenario.yaml format is usable from the npm package: the JSON Schema is exported as
// `settle/scenario.schema.json` (written by the build from the schema the loader validates with), and
// docs/scenario-yaml.md documents every field of it. The field list is derived from the schema, so a field added there
// (the variants' `module`, `args`, `env`, say) fails this test until the reference has a row for it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { scenarioSchema } from "../../src/scenario-yaml/index.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));

type Schema = { properties?: Record<string, Schema>; additionalProperties?: unknown; items?: unknown; oneOf?: Schema[]; anyOf?: Schema[]; allOf?: Schema[] };

/** Every field path of the schema: `name`, `variants.<name>.command`, `workload[].patch.merge`, ... */
export function fieldPaths(schema: Schema, prefix = ""): string[] {
  const paths: string[] = [];
  for (const [key, sub] of Object.entries(schema.properties ?? {})) {
    const path = `${prefix}${prefix === "" ? "" : "."}${key}`;
    paths.push(path, ...fieldPaths(sub, path));
  }
  if (typeof schema.additionalProperties === "object" && schema.additionalProperties !== null) paths.push(...fieldPaths(schema.additionalProperties as Schema, `${prefix}.<name>`));
  if (typeof schema.items === "object" && schema.items !== null) paths.push(...fieldPaths(schema.items as Schema, `${prefix}[]`));
  for (const branch of [...(schema.oneOf ?? []), ...(schema.anyOf ?? []), ...(schema.allOf ?? [])]) paths.push(...fieldPaths(branch, prefix));
  return [...new Set(paths)].map((p) => p.replace(/^\.<name>/, "<name>"));
}

/** The reference table of docs/scenario-yaml.md: the first column of each row. */
function documentedFields(): Set<string> {
  const reference = readFileSync(join(repo, "docs", "scenario-yaml.md"), "utf8");
  assert.ok(reference.startsWith("# scenario.yaml reference"), "docs/scenario-yaml.md is the scenario.yaml reference");
  return new Set([...reference.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!));
}

test("docs/scenario-yaml.md's reference has a row for every field of the schema, and no other", () => {
  const fields = fieldPaths(scenarioSchema as unknown as Schema);
  assert.ok(fields.includes("workload[].patch.merge") && fields.includes("variants.<name>.command") && fields.includes("world.files"), fields.join(", "));
  const documented = documentedFields();
  assert.deepEqual(fields.filter((f) => !documented.has(f)), [], "fields of the schema missing from docs/scenario-yaml.md");
  assert.deepEqual([...documented].filter((f) => !fields.includes(f)), [], "rows of docs/scenario-yaml.md that are no field of the schema");
});

test("the package exports the schema as settle/scenario.schema.json, the object the loader validates with", () => {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { exports: Record<string, unknown>; files: string[] };
  assert.equal(pkg.exports["./scenario.schema.json"], "./dist/scenario.schema.json");
  assert.ok(pkg.files.includes("dist"));
  // Resolved as a user's code would, through the package's exports (the repository resolves itself by name).
  const path = createRequire(join(repo, "package.json")).resolve("settle/scenario.schema.json");
  assert.equal(path, join(repo, "dist", "scenario.schema.json"));
  assert.deepEqual(JSON.parse(readFileSync(path, "utf8")), scenarioSchema);
  assert.deepEqual(JSON.parse(readFileSync(join(repo, "examples", "scenario.schema.json"), "utf8")), scenarioSchema);
});
