// STUB: owned by the report work; replace wholesale.
export const reportUsage = `Usage: settle report (not built yet)
`;

export async function reportCommand(_argv: string[]): Promise<number> {
  process.stderr.write("settle report: not built yet\n");
  return 2;
}
