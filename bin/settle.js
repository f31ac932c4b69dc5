#!/usr/bin/env node
// settle's command line: the compiled package in dist/ (built by `npm run build`, which `prepare` runs after
// `npm ci`). Only a user's scenario files go through a TypeScript loader, registered when one is loaded.
let main;
try {
  ({ main } = await import("../dist/cli/main.js"));
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND" || !String(error.message).includes("dist")) throw error;
  console.error("settle: dist/ is missing; build it with `npm run build` (npm ci runs it in a clone)");
  process.exit(2);
}
// A reader that stops early (`settle list-examples | head`) closes the pipe: end quietly with the status a process
// killed by SIGPIPE has (128 + 13), as other command-line tools do, instead of an unhandled EPIPE.
process.stdout.on("error", (error) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(141);
});
process.exitCode = await main(process.argv.slice(2));
