// What the pause must guarantee, read from the world only: the two Kustomizations, the controller's pods and
// their logs (`kubectl logs`: which executions started and ended in which process), and the CI log of the script.
import { always, eventually, podLogsCell, type PodLogs, type Property, type ScenarioContext, type WorldView } from "settle/sim";
import {
  childOwned,
  childRef,
  executionEndLine,
  executionStartLine,
  fluxNamespace,
  isReconciling,
  parentOwned,
  parentOwnerAnnotation,
  parentRef,
  podKind,
  type Condition,
} from "./kustomize.ts";
import { lines, readFaultsCell, stdoutCell, type ReadFaults, type ScriptOutput } from "./script.ts";
import type { FluxPauseParams } from "./scenario.ts";

const fixedCounterLine = /^observations=\d+ unreadable=\d+ child_not_owned=\d+ parent_not_owned=\d+ parent_changed=\d+ version_changes=\d+$/;
const preClaimCounterLine = /^observations=\d+ unreadable=\d+ reconciling=\d+$/;
const fixedLines = new Set<string>(Object.values(lines));

type Which = "parent" | "child";
const refs = { parent: parentRef, child: childRef } as const;

/** Everything the properties remember between steps; updated once per distinct world state. */
class Observer {
  lastWriteMs: Record<Which, number> = { parent: Number.NEGATIVE_INFINITY, child: Number.NEGATIVE_INFINITY };
  private lastRv: Record<Which, string> = { parent: "", child: "" };
  /** Private values seen anywhere in the world: they must never reach the output. */
  readonly taints = new Set<string>();
  /** Since the restart line: the predicate was false in every state observed. */
  childFalseAll = true;
  parentFalseAll = true;
  parentUnstableAll = true;
  /** When the script last consumed an injected read failure. */
  lastReadFailureMs = Number.NEGATIVE_INFINITY;
  private pendingReadFailures = 0;
  private key = "";

  constructor(private readonly holder: string) {
    this.taints.add(holder);
  }

  observe(view: WorldView): void {
    const out = view.external<ScriptOutput>(stdoutCell);
    const { pending } = view.external<ReadFaults>(readFaultsCell);
    const key = `${view.now()}:${view.revision}:${out.lines.length}:${out.result ?? ""}:${pending}`;
    if (key === this.key) return;
    this.key = key;
    for (const which of ["parent", "child"] as const) this.observeObject(view, which);
    if (pending < this.pendingReadFailures) this.lastReadFailureMs = view.now();
    this.pendingReadFailures = pending;
    for (const pod of view.list({ ...podKind, namespace: fluxNamespace })) this.taints.add(pod.metadata.uid ?? "");
    if (restartLineAt(out) !== undefined && out.result === undefined) {
      const parent = view.get(parentRef);
      const child = view.get(childRef);
      const holder = this.holder;
      const childOk = childOwned(child, child?.metadata.uid ?? "", holder);
      const parentOk = parentOwned(parent, parent?.metadata.uid ?? "", holder);
      this.childFalseAll &&= !childOk;
      this.parentFalseAll &&= !parentOk;
      this.parentUnstableAll &&= !parentOk || isReconciling(parent);
    }
  }

  private observeObject(view: WorldView, which: Which): void {
    const object = view.get(refs[which]);
    if (object === undefined) return;
    const rv = object.metadata.resourceVersion ?? "";
    if (rv !== this.lastRv[which]) {
      this.lastRv[which] = rv;
      this.lastWriteMs[which] = view.now();
    }
    this.taints.add(object.metadata.uid ?? "");
    for (const [k, v] of Object.entries(object.metadata.annotations ?? {})) if (k.endsWith("-owner")) this.taints.add(v);
    for (const c of ((object.status as { conditions?: Condition[] } | undefined)?.conditions ?? []) as Condition[]) {
      this.taints.add(c.reason);
      this.taints.add(c.message);
    }
  }
}

function restartLineAt(out: ScriptOutput): number | undefined {
  return out.lines.find((l) => l.text === lines.restarted)?.atMs;
}

function lineAt(out: ScriptOutput, text: string): number | undefined {
  return out.lines.find((l) => l.text === text)?.atMs;
}

/** Parses the counter line printed after the timeout line. */
function timeoutCounters(out: ScriptOutput): Record<string, number> | undefined {
  const at = out.lines.findIndex((l) => l.text === lines.timeout);
  if (at < 0) return undefined;
  const counters: Record<string, number> = {};
  for (const pair of (out.lines[at + 1]?.text ?? "").split(" ")) {
    const [name, value] = pair.split("=");
    if (name !== undefined && value !== undefined) counters[name] = Number(value);
  }
  return counters;
}

/** Executions of parent or child that started in a process still alive (its pod exists, no newer process). */
export function liveExecutions(view: WorldView): string[] {
  const logs = view.external<PodLogs>(podLogsCell);
  const live: string[] = [];
  for (const [podKey, entry] of Object.entries(logs)) {
    const [namespace, name] = podKey.split("/");
    if (namespace !== fluxNamespace || view.get({ ...podKind, namespace, name: name ?? "" }) === undefined) continue;
    const starts = entry.lines.filter((l) => l.startsWith("process start pid="));
    const pid = starts.at(-1)?.slice("process start pid=".length);
    if (pid === undefined) continue;
    for (const key of [`${parentRef.namespace}/${parentRef.name}`, `${childRef.namespace}/${childRef.name}`]) {
      const opened = entry.lines.filter((l) => l === executionStartLine(key, pid)).length;
      const closed = entry.lines.filter((l) => l === executionEndLine(key, pid)).length;
      if (opened > closed) live.push(`${key} in ${pid}`);
    }
  }
  return live;
}

export const l1Name = "L1: with no other writer the pause is OK within two polls after the restart and the last failed read";

export function propertiesFor(ctx: ScenarioContext<FluxPauseParams>): Property[] {
  const p = ctx.params;
  const seen = new Observer(p.holder);
  const out = (view: WorldView): ScriptOutput => {
    seen.observe(view);
    return view.external<ScriptOutput>(stdoutCell);
  };
  const noOtherWriter = ctx.workload !== "other-writer";
  const reachesProof = ctx.workload !== "frozen-condition-at-claim";
  let fenceAtOk: boolean | undefined;
  let quietAtOk: boolean | undefined;

  const properties: Property[] = [
    always(l1Name, (view) => {
      const o = out(view);
      const restartedAt = restartLineAt(o);
      if (!noOtherWriter || !reachesProof || restartedAt === undefined || o.result === "ok") return true;
      // Reads that eventually succeed: the two polls are counted from the last failed read, if later.
      if (view.external<ReadFaults>(readFaultsCell).pending > 0) return true;
      return view.now() <= Math.max(restartedAt, seen.lastReadFailureMs) + 2 * p.syncIntervalMs;
    }),
    always("S1 fence: OK only with both owned, suspended and unwritten between the two proof reads", (view) => {
      const o = out(view);
      const okAt = lineAt(o, lines.ok);
      if (okAt === undefined) return true;
      if (fenceAtOk === undefined) {
        const parent = view.get(parentRef);
        const child = view.get(childRef);
        const owned = parentOwned(parent, parent?.metadata.uid ?? "", p.holder) && childOwned(child, child?.metadata.uid ?? "", p.holder);
        const firstRead = okAt - p.syncIntervalMs;
        fenceAtOk = owned && seen.lastWriteMs.parent < firstRead && seen.lastWriteMs.child < firstRead;
      }
      return fenceAtOk;
    }),
    always("S1 fence: OK only when no execution of parent or child is alive", (view) => {
      const o = out(view);
      if (lineAt(o, lines.ok) === undefined) return true;
      quietAtOk ??= liveExecutions(view).length === 0;
      return quietAtOk;
    }),
    always("S2: another writer forces FAIL, never OK", (view) => noOtherWriter || out(view).result !== "ok"),
    always("S3: the output holds fixed lines only; no uid, resourceVersion, owner id or condition text", (view) => {
      const o = out(view);
      return o.lines.every(({ text }, i) => {
        const afterTimeout = o.lines[i - 1]?.text === lines.timeout;
        const afterPreClaim = o.lines[i - 1]?.text === lines.preClaimTimeout;
        const shape = afterTimeout ? fixedCounterLine.test(text) : afterPreClaim ? preClaimCounterLine.test(text) : fixedLines.has(text);
        return shape && ![...seen.taints].some((t) => t.length > 0 && text.includes(t));
      });
    }),
    always("S4: on timeout the counter of the failing predicate is > 0", (view) => {
      const counters = timeoutCounters(out(view));
      if (counters === undefined) return true;
      const { observations = 0, unreadable = 0 } = counters;
      if (unreadable >= observations) return true;
      if (seen.childFalseAll) return (counters.child_not_owned ?? 0) > 0;
      if (seen.parentFalseAll && "parent_not_owned" in counters) return (counters.parent_not_owned ?? 0) > 0;
      if (seen.parentUnstableAll && "parent_unstable" in counters) return (counters.parent_unstable ?? 0) > 0;
      return Object.entries(counters).some(([name, n]) => name !== "observations" && n > 0);
    }),
  ];
  if (!reachesProof) {
    properties.push(
      always("a parent already Reconciling before the claim is never claimed", (view) => {
        out(view);
        return view.get(parentRef)?.metadata.annotations?.[parentOwnerAnnotation] !== p.holder;
      }),
    );
  }
  const expected = noOtherWriter && reachesProof ? "ok" : "fail";
  properties.push(eventually(`the script ends ${expected.toUpperCase()}`, (view) => out(view).result === expected));
  return properties;
}
