// The bundling thread of bundle.ts: runs esbuild's asynchronous build with the per-file rewrite (rewrite.ts) as a
// plugin, posts the outcome on the port it was given and wakes the waiting thread.
import { readFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { workerData, type MessagePort } from "node:worker_threads";
import type { Loader, Message, Plugin } from "esbuild";
import type { BundleOutcome, BundleRequest } from "./bundle.ts";
import { rewriteSource } from "./rewrite.ts";

const { request, port } = workerData as { request: BundleRequest; port: MessagePort };

/** The `type` of the package a file belongs to (its nearest package.json), as Node decides a `.js` file's kind. */
const packageTypes = new Map<string, "module" | "commonjs">();

function packageType(dir: string): "module" | "commonjs" {
  const known = packageTypes.get(dir);
  if (known !== undefined) return known;
  let type: "module" | "commonjs" = "commonjs";
  let found = false;
  try {
    const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { type?: unknown };
    found = true;
    if (json.type === "module") type = "module";
  } catch {
    found = false;
  }
  if (!found && dirname(dir) !== dir) type = packageType(dirname(dir));
  packageTypes.set(dir, type);
  return type;
}

function loaderOf(path: string): Loader {
  if (/\.[cm]?ts$/.test(path)) return "ts";
  if (path.endsWith(".tsx")) return "tsx";
  if (path.endsWith(".jsx")) return "jsx";
  return "js";
}

const rewrite: Plugin = {
  name: "settle-module-rewrite",
  setup(build) {
    build.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      const rewritten = rewriteSource(text, args.path, { entry: args.path === request.absolute, packageType: packageType(dirname(args.path)) });
      if (rewritten === undefined) return undefined;
      // A library's import of something computed is its own business (an optional path, tried in a `try`); the
      // module's own is refused with where it is and what to write instead.
      const own = !args.path.split(sep).includes("node_modules");
      const errors = own ? rewritten.unbundled.map((at) => ({ text: `${at.form}: settle bundles what a module loads before it runs it; write its argument as a string literal (a relative path such as "./file.mjs", or a package name), or import each candidate that way and choose among them`, location: { file: args.path, line: at.line } })) : [];
      return { contents: rewritten.contents, loader: loaderOf(args.path), resolveDir: dirname(args.path), errors };
    });
  },
};

/** A message without its `detail` (anything a plugin threw, which a port may not be able to copy). */
function plain(message: Message): Message {
  return { ...message, detail: undefined, notes: message.notes.map((note) => ({ text: note.text, location: note.location })) };
}

async function bundle(): Promise<BundleOutcome> {
  const { build } = createRequire(import.meta.url)(request.esbuild) as typeof import("esbuild");
  try {
    const result = await build({
      entryPoints: [request.absolute],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      write: false,
      metafile: true,
      logLevel: "silent",
      keepNames: true,
      plugins: [rewrite],
      // What Node reads of a package: `main` alone, and the exports conditions node, import or require, default
      // (esbuild would add the bundlers' `module` condition and field).
      mainFields: ["main"],
      conditions: [],
      // What a file's rewrite left (`import.meta` used otherwise) names the module, as before the rewrite.
      define: { "import.meta.url": "__settle_meta_url", "import.meta.filename": "__filename", "import.meta.dirname": "__dirname" },
    });
    const output = result.outputFiles[0]!;
    return { text: output.text, inputs: Object.keys(result.metafile.inputs).length, exports: Object.values(result.metafile.outputs)[0]?.exports ?? [], errors: [] };
  } catch (error) {
    const errors = (error as { errors?: Message[] }).errors;
    if (errors !== undefined && errors.length > 0) return { errors: errors.map(plain) };
    return { errors: [], failure: error instanceof Error ? error.message : String(error) };
  }
}

const outcome = await bundle();
port.postMessage(outcome);
Atomics.store(request.signal, 0, 1);
Atomics.notify(request.signal, 0);
