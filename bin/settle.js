#!/usr/bin/env node
// settle's command line. Scenarios are TypeScript, so the CLI runs its own sources through tsx.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
