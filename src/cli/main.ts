// Entry point of the `settle` command. Exit codes: 0 no finding, 1 a finding, 2 usage or input error.
import { readFileSync } from "node:fs";

const usage = `settle — find, reproduce and explain controllers that go quiet while the world is wrong

Usage: settle <command> [options]

Commands:
  help              show this help

Options:
  -h, --help        show help
  -V, --version     print the version

Exit codes: 0 no finding, 1 a finding, 2 usage or input error.
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "-h" || command === "--help") {
    process.stdout.write(usage);
    return command === undefined ? 2 : 0;
  }
  if (command === "-V" || command === "--version" || command === "version") {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  process.stderr.write(`settle: unknown command "${command}"${rest.length ? "" : ""}\nRun "settle --help" for usage.\n`);
  return 2;
}
