// `settle job`: exploration past one machine, on the engine users already run. Prints a Kubernetes Indexed Job
// whose pod i runs `settle explore <args> --shard i/N` (Kubernetes sets JOB_COMPLETION_INDEX in each pod of an
// Indexed Job) and, with a volume, the Job that merges the shards' findings with `settle merge`. Shards are
// disjoint and their union is the unsharded run, so the merged findings equal one machine's (for the bounded
// search, with its figures and completeness, from the search records the shards write beside their findings).
import { stringify } from "yaml";
import { quantityNanos } from "../api/quantity.ts";
import { intOption, parse, UsageError } from "./args.ts";

export const jobUsage = `Usage: settle job --shards N --image IMG [options] -- <settle explore arguments>

Prints, as YAML, a Kubernetes Indexed Job (completionMode Indexed, N completions) whose pod i runs
"settle explore <arguments> --shard i/N". With --pvc, each shard copies its findings to the claim
(<findings-dir>/shard-i) and a second Job merges them ("settle merge", into <findings-dir>/merged); without
it, findings go to each pod's stdout (kubectl logs). The claim must be ReadWriteMany (NFS, CephFS, EFS,
Filestore, Azure Files...): every shard pod and the merge pod mount it at once, on whichever nodes they land;
with a ReadWriteOnce claim the pods on other nodes stay Pending. The merge Job waits for every shard's marker
for at most --merge-deadline-s, then fails (exit 3, the Job marked failed without retries) naming the shards
that never finished.
With --strategy bounded, each shard also writes its search record beside its findings, the merge
says whether the whole space was searched (complete for K, F) with the unsharded search's schedule count,
and, with --pvc, each shard saves its search to <findings-dir>/shard-i.checkpoint as it goes, so a pod the
Job starts again resumes it.

  settle job --shards 8 --image registry.example/my-explorer:1 --pvc settle-findings -- examples/ensemble --runs 4000 | kubectl apply -f -
  kubectl wait --for=condition=complete job/settle-explore --timeout=1h   # then the merge Job runs to completion
  settle job --shards 4 --image IMG --pvc settle-findings -- my/scenario.ts --strategy bounded --preemptions 3

The image is node:20 with your scenarios and "npm install settle" in --workdir (default /app), and
node_modules/.bin on PATH; the README's CLI reference has the recipe (Sharding).

Options:
  --shards N           pods, one shard each (N >= 1)
  --image IMG          the container image
  --name NAME          the Job's name (default settle-explore; the merge Job is NAME-merge)
  --namespace NS       the Jobs' namespace (default: the one kubectl uses)
  --pvc CLAIM          a PersistentVolumeClaim (ReadWriteMany) for the findings, mounted at --findings-dir
  --findings-dir DIR   where shards copy their findings (default /findings)
  --workdir DIR        the container's working directory (default /app)
  --parallelism P      pods at once (default N)
  --cpu Q              CPU per shard pod, a Kubernetes quantity (e.g. 2 or 1500m): its request and limit
  --memory Q           memory per shard pod (e.g. 2Gi): its request and limit
  --workers-per-shard W  explore worker threads per shard pod (default: the whole CPUs of --cpu, at least 1,
                       else explore's default, the node's cores, which a CPU limit does not lower)
  --merge-deadline-s S  how long the merge Job waits for the shards, in seconds (default 21600, 6 hours)

Exit codes: 0 printed, 2 usage error.
`;

const shardsMax = 10_000;
const nameRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Quotes a word for sh, so explore arguments reach settle unchanged. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./=:,@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'"'"'`)}'`;
}

export interface JobSpec {
  name: string;
  namespace: string | undefined;
  image: string;
  shards: number;
  parallelism: number;
  pvc: string | undefined;
  findingsDir: string;
  workdir: string;
  exploreArgs: string[];
  /** Per shard pod: Kubernetes quantities, each the container's request and limit. */
  resources: { cpu?: string; memory?: string };
  /** `--workers` for each shard's explore; undefined: explore's default. */
  workersPerShard: number | undefined;
  /** How long the merge pod waits for every shard's marker before it fails. */
  mergeDeadlineS: number;
}

/** The merge pod's exit code when shards never finished: the Job fails at once (a retry would wait again). */
export const mergeTimeoutExitCode = 3;
const mergeDeadlineSDefault = 6 * 3600;
const mergePollS = 5;

/**
 * The shell script each shard pod runs. Exit code 1 of `settle explore` means "findings", which is this Job's
 * output, not a failed pod: it exits 0 then, and keeps 2 (bad input) as a failure. Runs the same way locally
 * with JOB_COMPLETION_INDEX set, which is how the tests check the shards.
 */
export function shardScript(spec: JobSpec): string {
  const workers = spec.workersPerShard === undefined ? [] : ["--workers", String(spec.workersPerShard)];
  const explore = ["settle", "explore", ...spec.exploreArgs, ...workers].map(shellQuote).join(" ");
  // A bounded shard saves its search on the claim as it goes: a pod that failed (evicted, OOM-killed) and is
  // started again by the Job resumes there instead of from the first schedule.
  const checkpoint = spec.pvc !== undefined && isBounded(spec.exploreArgs) && !spec.exploreArgs.some((a) => a === "--checkpoint" || a.startsWith("--checkpoint="));
  const resume = checkpoint ? ` --checkpoint ${shellQuote(spec.findingsDir)}/shard-"$JOB_COMPLETION_INDEX".checkpoint` : "";
  const lines = [`${explore} --shard "$JOB_COMPLETION_INDEX/${spec.shards}"${resume}`, "code=$?", '[ "$code" -le 1 ] || exit "$code"'];
  if (spec.pvc !== undefined) {
    // The marker is written last, so the merge Job never reads a shard that is still being copied.
    const target = `${shellQuote(spec.findingsDir)}/shard-"$JOB_COMPLETION_INDEX"`;
    lines.unshift(`rm -f ${target}.done`);
    lines.push(`rm -rf ${target} && mkdir -p ${target}`, `if [ -d .settle/findings ]; then cp -R .settle/findings/. ${target}/; fi`, `touch ${target}.done`);
  }
  return lines.join("\n");
}

/** Whether the explore arguments ask for the bounded search. */
function isBounded(args: readonly string[]): boolean {
  return args.some((a, i) => a === "--strategy=bounded" || (a === "--strategy" && args[i + 1] === "bounded"));
}

function podSpec(spec: JobSpec, container: Record<string, unknown>): Record<string, unknown> {
  const mount = spec.pvc === undefined ? {} : { volumeMounts: [{ name: "findings", mountPath: spec.findingsDir }] };
  const amounts = Object.fromEntries(Object.entries(spec.resources).filter(([, v]) => v !== undefined));
  const resources = Object.keys(amounts).length === 0 || container.name !== "explore" ? {} : { resources: { requests: amounts, limits: amounts } };
  const volumes = spec.pvc === undefined ? {} : { volumes: [{ name: "findings", persistentVolumeClaim: { claimName: spec.pvc } }] };
  return { restartPolicy: "Never", containers: [{ ...container, image: spec.image, workingDir: spec.workdir, ...resources, ...mount }], ...volumes };
}

function metadata(spec: JobSpec, name: string): Record<string, unknown> {
  return { name, ...(spec.namespace === undefined ? {} : { namespace: spec.namespace }), labels: { "app.kubernetes.io/name": "settle", "app.kubernetes.io/instance": spec.name } };
}

/**
 * The merge pod's script. Kubernetes starts both Jobs at once, so it waits until every shard has written its
 * marker, then merges; exit code 1 of `settle merge` again means "findings", not a failure. A shard that never
 * finishes (its pods failed past the backoff limit, or never scheduled) would keep it waiting forever: after
 * `deadlineS` it names the shards without a marker and exits `mergeTimeoutExitCode`.
 */
export function mergeScript(dir: string, shards: number, deadlineS: number, job: string): string {
  const missing = `i=0; while [ "$i" -lt ${shards} ]; do [ -e ${dir}/shard-"$i".done ] || printf ' %s' "$i"; i=$((i + 1)); done`;
  return [
    `waited=0`,
    `until [ "$(ls ${dir}/shard-*.done 2>/dev/null | wc -l)" -ge ${shards} ]; do`,
    `  if [ "$waited" -ge ${deadlineS} ]; then`,
    `    echo "settle merge: gave up after ${deadlineS} s: shard(s)$(${missing}) of ${shards} never finished (see kubectl describe job/${job} and the logs of its failed pods)" >&2`,
    `    exit ${mergeTimeoutExitCode}`,
    `  fi`,
    `  sleep ${Math.min(mergePollS, deadlineS)}; waited=$((waited + ${Math.min(mergePollS, deadlineS)}))`,
    `done`,
    `settle merge ${dir}/shard-* --out ${dir}/merged`,
    "code=$?",
    '[ "$code" -le 1 ] || exit "$code"',
  ].join("\n");
}

/** The Indexed Job and, with a claim, the merge Job. */
export function jobManifests(spec: JobSpec): Array<Record<string, unknown>> {
  const explore = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: metadata(spec, spec.name),
    spec: {
      completionMode: "Indexed",
      completions: spec.shards,
      parallelism: spec.parallelism,
      backoffLimit: spec.shards,
      template: { spec: podSpec(spec, { name: "explore", command: ["sh", "-c", shardScript(spec)] }) },
    },
  };
  if (spec.pvc === undefined) return [explore];
  const dir = shellQuote(spec.findingsDir);
  const merge = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: metadata(spec, `${spec.name}-merge`),
    spec: {
      completions: 1,
      backoffLimit: 2,
      // Shards that never finished fail the Job at once: a retried pod would only wait out the deadline again.
      podFailurePolicy: { rules: [{ action: "FailJob", onExitCodes: { containerName: "merge", operator: "In", values: [mergeTimeoutExitCode] } }] },
      template: { spec: podSpec(spec, { name: "merge", command: ["sh", "-c", mergeScript(dir, spec.shards, spec.mergeDeadlineS, spec.name)] }) },
    },
  };
  return [explore, merge];
}

function jobSpec(argv: string[]): JobSpec {
  const split = argv.indexOf("--");
  if (split === -1 || split === argv.length - 1) throw new UsageError("expects the explore arguments after --, e.g. -- examples/ensemble --runs 4000");
  const exploreArgs = argv.slice(split + 1);
  if (exploreArgs.some((a) => a === "--shard" || a.startsWith("--shard="))) throw new UsageError("the explore arguments must not set --shard: each pod gets its own");
  const { values, positionals } = parse(argv.slice(0, split), {
    shards: { type: "string" }, image: { type: "string" }, name: { type: "string" }, namespace: { type: "string" },
    pvc: { type: "string" }, "findings-dir": { type: "string" }, workdir: { type: "string" }, parallelism: { type: "string" },
    cpu: { type: "string" }, memory: { type: "string" }, "workers-per-shard": { type: "string" }, "merge-deadline-s": { type: "string" },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected "${positionals[0]}" before --`);
  if (values.shards === undefined) throw new UsageError("--shards N is required");
  if (typeof values.image !== "string" || values.image === "") throw new UsageError("--image IMG is required");
  const shards = intOption(values, "shards", 1, 1);
  if (shards > shardsMax) throw new UsageError(`--shards expects at most ${shardsMax}, got ${shards}`);
  const name = typeof values.name === "string" ? values.name : "settle-explore";
  if (!nameRe.test(name) || name.length > 57) throw new UsageError(`--name must be a DNS label of at most 57 characters (the merge Job adds "-merge"), got "${name}"`);
  const absolute = (key: string, fallback: string) => {
    const value = typeof values[key] === "string" ? (values[key] as string) : fallback;
    if (!value.startsWith("/")) throw new UsageError(`--${key} expects an absolute path, got "${value}"`);
    return value;
  };
  const resources = { ...quantityOption(values, "cpu"), ...quantityOption(values, "memory") };
  if (values["workers-per-shard"] !== undefined && exploreArgs.some((a) => a === "--workers" || a.startsWith("--workers="))) {
    throw new UsageError("give the workers once: --workers-per-shard or --workers in the explore arguments");
  }
  const cpuWorkers = resources.cpu === undefined ? undefined : Math.max(1, Number(quantityNanos(resources.cpu)! / 1_000_000_000n));
  const workersPerShard = values["workers-per-shard"] !== undefined ? intOption(values, "workers-per-shard", 1, 1) : exploreArgs.some((a) => a.startsWith("--workers")) ? undefined : cpuWorkers;
  return {
    name,
    namespace: typeof values.namespace === "string" ? values.namespace : undefined,
    resources,
    workersPerShard,
    mergeDeadlineS: intOption(values, "merge-deadline-s", mergeDeadlineSDefault, 1),
    image: values.image,
    shards,
    parallelism: Math.min(intOption(values, "parallelism", shards, 1), shards),
    pvc: typeof values.pvc === "string" ? values.pvc : undefined,
    findingsDir: absolute("findings-dir", "/findings"),
    workdir: absolute("workdir", "/app"),
    exploreArgs,
  };
}

/** `--cpu` / `--memory`: a positive Kubernetes quantity, as the pod's API would accept it. */
function quantityOption(values: Record<string, unknown>, name: "cpu" | "memory"): { cpu?: string; memory?: string } {
  const text = values[name];
  if (text === undefined) return {};
  const nanos = typeof text === "string" ? quantityNanos(text) : undefined;
  if (nanos === undefined || nanos <= 0n) throw new UsageError(`--${name} expects a positive Kubernetes quantity (e.g. ${name === "cpu" ? "2 or 1500m" : "2Gi or 512Mi"}), got "${String(text)}"`);
  return { [name]: text as string };
}

export async function jobCommand(argv: string[]): Promise<number> {
  const spec = jobSpec(argv);
  const documents = jobManifests(spec).map((doc) => stringify(doc, { lineWidth: 0 }));
  const claim = spec.pvc === undefined ? "" : `# the claim ${spec.pvc} must be ReadWriteMany: every shard pod and the merge pod mount it at once\n`;
  const header = `# settle job: ${spec.shards} shard(s) of settle explore ${spec.exploreArgs.join(" ")}\n${claim}`;
  process.stdout.write(header + documents.join("---\n"));
  return 0;
}
