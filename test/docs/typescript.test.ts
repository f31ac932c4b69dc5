// Every TypeScript block of README.md, CONTRIBUTING.md and docs/*.md type-checks under strict `tsc`, in a project of its own that resolves
// `settle` to this package as a user's project does (its compiled dist/ and .d.ts, through package.json's exports).
// A block that is a fragment (a property, a controller using kinds defined elsewhere) is preceded by a comment
// `<!-- typecheck ... -->` whose text wraps it: the line `/* block */` stands for the block. The comment does not
// show on a rendered page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));

interface Block {
  line: number;
  source: string;
}

/** A Markdown text's ```ts blocks, each inside the wrapper of the `<!-- typecheck -->` comment just above it, if any. */
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

test("every TypeScript block of the documentation type-checks strictly against the package", () => {
  const files = ["README.md", "CONTRIBUTING.md", ...readdirSync(join(repo, "docs")).filter((n) => n.endsWith(".md")).map((n) => `docs/${n}`)];
  const blocks = files.flatMap((file) => typescriptBlocks(readFileSync(join(repo, file), "utf8")).map((block) => ({ ...block, name: `${file.replace(/[/.]/g, "-")}-line-${block.line}.ts` })));
  assert.ok(blocks.length >= 5, `found ${blocks.length} blocks`);
  const dir = mkdtempSync(join(tmpdir(), "settle-readme-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(repo, join(dir, "node_modules", "settle"), "dir");
    symlinkSync(join(repo, "node_modules", "@types"), join(dir, "node_modules", "@types"), "dir");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "readme-blocks", private: true, type: "module" }));
    const compilerOptions = { target: "es2022", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, types: ["node"], lib: ["es2023"] };
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.ts"] }));
    const names = blocks.map((block) => block.name);
    blocks.forEach((block, i) => writeFileSync(join(dir, names[i]!), block.source));
    const tsc = spawnSync(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", dir], { cwd: dir, encoding: "utf8" });
    assert.equal(tsc.status, 0, `tsc on the documentation's blocks (files named by their file and line):\n${tsc.stdout}${tsc.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
