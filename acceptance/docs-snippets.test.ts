// The documentation's slow shell blocks (marked `slow`: real processes drilled at every fault kind, a Go program's
// first build), run as test/docs/snippets.test.ts runs the others. Its checks of every block's marker run here too.
process.env.SETTLE_DOCS_SLOW = "1";
await import("../test/docs/snippets.test.ts");
