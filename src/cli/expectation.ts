// The line `settle explore --variant V` and `settle drill` end with: what was found against what the variant expects.

/** `a finding; the variant expects a finding`, or with `(unexpected)` when the outcome is not the expected one. */
export function expectationLine(found: boolean, expect: "finding" | "ok"): string {
  const matched = found === (expect === "finding");
  return `${found ? "a finding" : "no finding"}; the variant expects ${expect === "finding" ? "a finding" : "none"}${matched ? "" : " (unexpected)"}`;
}
