// STUB: owned by the serve work; replace wholesale.
export const serveUsage = `Usage: settle serve (not built yet)
`;

export async function serveCommand(_argv: string[]): Promise<number> {
  process.stderr.write("settle serve: not built yet\n");
  return 2;
}
