// `npm run bench`: prints the figures the issues ask for, one section per layer.
// Benchmarks may read real time; tests never do.
import { existsSync } from "node:fs";

type Bench = () => Promise<Record<string, string | number>>;

// `explicit` sections run only when named (`npm run bench -- module-determinism`): they take many minutes.
const sections: Array<{ name: string; file: string; exportName: string; explicit?: boolean }> = [
  { name: "startup", file: "./startup.ts", exportName: "benchStartup" },
  { name: "store", file: "./store.ts", exportName: "benchStore" },
  { name: "simulator", file: "./sim.ts", exportName: "benchSim" },
  { name: "scale", file: "./scale.ts", exportName: "benchScale" },
  { name: "runtime", file: "./runtime.ts", exportName: "benchRuntime" },
  { name: "exploration", file: "./explore.ts", exportName: "benchExplore" },
  { name: "cluster", file: "./cluster.ts", exportName: "benchCluster" },
  { name: "server", file: "./server.ts", exportName: "benchServer" },
  { name: "drill", file: "./drill.ts", exportName: "benchDrill" },
  { name: "example flux-pause", file: "./example-flux-pause.ts", exportName: "bench" },
  { name: "example image-refresh", file: "./example-image-refresh.ts", exportName: "bench" },
  { name: "example skyhook-config", file: "./example-skyhook-config.ts", exportName: "bench" },
  { name: "example bootc-rollout", file: "./example-bootc-rollout.ts", exportName: "bench" },
  { name: "zoo", file: "./zoo.ts", exportName: "benchZoo" },
  { name: "points", file: "./points.ts", exportName: "benchPoints" },
  { name: "bounded", file: "./bounded.ts", exportName: "benchBounded" },
  { name: "module", file: "./module.ts", exportName: "benchModule" },
  { name: "frameworks", file: "./frameworks.ts", exportName: "benchFrameworks" },
  { name: "envtest", file: "./envtest.ts", exportName: "benchEnvtest", explicit: true },
  { name: "module-determinism", file: "./module.ts", exportName: "benchModuleDeterminism", explicit: true },
  { name: "go", file: "./go.ts", exportName: "benchGo" },
  { name: "go-determinism", file: "./go.ts", exportName: "benchGoDeterminism", explicit: true },
];

const only = process.argv.slice(2);
for (const section of sections) {
  if (only.length > 0 ? !only.includes(section.name) : section.explicit === true) continue;
  if (!existsSync(new URL(section.file, import.meta.url))) continue;
  const module = (await import(section.file)) as Record<string, Bench>;
  const run = module[section.exportName];
  if (run === undefined) throw new Error(`bench/${section.file} does not export ${section.exportName}`);
  process.stdout.write(`\n== ${section.name}\n`);
  const figures = await run();
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [key, value] of Object.entries(figures)) {
    process.stdout.write(`  ${key.padEnd(width)}  ${value}\n`);
  }
}
