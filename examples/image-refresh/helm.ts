// Helm, as far as this system sees it: the hourly auto-upgrade CronJob that runs `helm upgrade` only when the
// chart repository has a newer version than the release (LATEST == CURRENT exits 0), and `helm rollback`,
// which re-applies a stored release. Both write the workloads the way helm 3's three-way merge does for the
// fields the chart renders: every container image goes back to what the chart says (`repo:tag`), while
// annotations the chart does not render (the ones kubectl wrote) survive.
import { isApiError, isConflict, isNotFound, type Client, type KubeObject } from "settle";
import type { ExternalHandle, ProgramContext } from "settle/sim";
import { containersOf, namespace } from "./system.ts";

/** External cell of the chart repository: the newest published chart version. */
export const chartRepoCell = "helm/chart-repo";
export interface ChartRepo {
  latest: string;
}

/** The release record (helm's storage driver, here the ConfigMap driver). */
export const releaseRef = { apiVersion: "v1", kind: "ConfigMap", namespace, name: "sh.helm.release.v1.client" } as const;

export function releaseRecord(version: string, revision: number, previous?: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: releaseRef.name, namespace, labels: { owner: "helm", name: "client" } },
    data: { version, revision: String(revision), ...(previous === undefined ? {} : { previous }) },
  };
}

function dataOf(object: KubeObject): Record<string, string | undefined> {
  return (object.data ?? {}) as Record<string, string | undefined>;
}

export interface HelmEnv {
  charts: ExternalHandle<ChartRepo>;
  /** The chart's workload objects at a version. */
  render(version: string): KubeObject[];
}

/** The auto-upgrade tick: a no-op unless a newer chart was released. */
export async function runAutoUpgrade(p: ProgramContext, env: HelmEnv): Promise<number> {
  const { latest } = await env.charts.read();
  const release = await p.client.get(releaseRef);
  const current = dataOf(release).version ?? "";
  if (current === latest) {
    await p.log(`client is already at chart ${current}; nothing to do`);
    return 0;
  }
  await p.log(`helm upgrade client ${current} -> ${latest} --reset-then-reuse-values`);
  await applyRelease(p.client, env.render(latest));
  await writeRelease(p.client, release, latest, current);
  await p.log(`release client upgraded to ${latest}`);
  return 0;
}

/** `helm rollback client`: re-applies the previous release's manifest (stored, not re-rendered). */
export async function rollback(client: Client, render: (version: string) => KubeObject[]): Promise<void> {
  const release = await client.get(releaseRef);
  const previous = dataOf(release).previous;
  if (previous === undefined) return;
  await applyRelease(client, render(previous));
  await writeRelease(client, release, previous, dataOf(release).version);
}

async function writeRelease(client: Client, release: KubeObject, version: string, previous: string | undefined): Promise<void> {
  const revision = Number(dataOf(release).revision ?? "1") + 1;
  const next = releaseRecord(version, revision, previous);
  await client.update({ object: { ...next, metadata: { ...next.metadata, resourceVersion: release.metadata.resourceVersion } } });
}

/** Writes each rendered workload over the live one, keeping what the chart does not render. */
export async function applyRelease(client: Client, rendered: readonly KubeObject[]): Promise<void> {
  for (const desired of rendered) await applyOne(client, desired);
}

const conflictRetriesMax = 5;

async function applyOne(client: Client, desired: KubeObject): Promise<void> {
  const ref = { apiVersion: desired.apiVersion, kind: desired.kind, namespace, name: desired.metadata.name ?? "" };
  for (let attempt = 0; ; attempt++) {
    let live: KubeObject;
    try {
      live = await client.get(ref);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await client.create({ object: desired });
      return;
    }
    try {
      await client.update({ object: merged(live, desired) });
      return;
    } catch (error) {
      if (!(isApiError(error) && isConflict(error)) || attempt + 1 >= conflictRetriesMax) throw error;
    }
  }
}

/** The live object with the chart's labels, template and container images; other live fields are kept. */
function merged(live: KubeObject, desired: KubeObject): KubeObject {
  const next = structuredClone(live);
  next.metadata.labels = { ...(live.metadata.labels ?? {}), ...(desired.metadata.labels ?? {}) };
  const want = new Map(containersOf(desired).map((c) => [c.name, c.image]));
  for (const container of containersOf(next)) {
    const image = want.get(container.name);
    if (image !== undefined) container.image = image;
  }
  return next;
}
