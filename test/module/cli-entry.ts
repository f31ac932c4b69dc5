// Runs the CLI from the sources (the tests need no build).
import { main } from "../../src/cli/main.ts";
process.exitCode = await main(process.argv.slice(2));
