// Every TypeScript block of the README type-checks under strict `tsc`, in a project of its own that resolves
// `settle` to this package as a user's project does (its compiled dist/ and .d.ts, through package.json's exports).
// A block that is a fragment (a property, a controller using kinds defined elsewhere) is preceded by a comment
// `<!-- typecheck ... -->` whose text wraps it: the line `/* block */` stands for the block. The comment does not
// show on a rendered page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../", import.meta.url));

interface Block {
  line: number;
  source: string;
}

/** The README's ```ts blocks, each inside the wrapper of the `<!-- typecheck -->` comment just above it, if any. */
export function typescriptBlocks(readme: string): Block[] {
  const blocks: Block[] = [];
  const pattern = /(?:<!-- typecheck\n([\s\S]*?)-->\n)?```ts\n([\s\S]*?)```/g;
  for (const match of readme.matchAll(pattern)) {
    const wrapper = match[1];
    const body = match[2]!;
    if (wrapper !== undefined) assert.ok(wrapper.includes("/* block */"), "a typecheck wrapper marks where the block goes with /* block */");
    const line = readme.slice(0, match.index + match[0].indexOf("```ts")).split("\n").length;
    blocks.push({ line, source: wrapper === undefined ? body : wrapper.replace("/* block */", body) });
  }
  return blocks;
}

test("every TypeScript block of the README type-checks strictly against the package", () => {
  const blocks = typescriptBlocks(readFileSync(join(repo, "README.md"), "utf8"));
  assert.ok(blocks.length >= 5, `found ${blocks.length} blocks`);
  const dir = mkdtempSync(join(tmpdir(), "settle-readme-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(repo, join(dir, "node_modules", "settle"), "dir");
    symlinkSync(join(repo, "node_modules", "@types"), join(dir, "node_modules", "@types"), "dir");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "readme-blocks", private: true, type: "module" }));
    const compilerOptions = { target: "es2022", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, types: ["node"], lib: ["es2023"] };
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
    const names = blocks.map((block) => `readme-line-${block.line}.ts`);
    blocks.forEach((block, i) => writeFileSync(join(dir, names[i]!), block.source));
    const tsc = spawnSync(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", dir], { cwd: dir, encoding: "utf8" });
    assert.equal(tsc.status, 0, `tsc on the README's blocks (files named by their README line):\n${tsc.stdout}${tsc.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
