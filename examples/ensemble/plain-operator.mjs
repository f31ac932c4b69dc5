#!/usr/bin/env node
// The Ensemble operator written without settle: a plain @kubernetes/client-node informer and an
// edge-triggered update handler, the way many operators start. It remembers the last `spec.voices` it saw and
// creates (or deletes) the difference. `settle drill` needs nothing from it but a kubeconfig: it is the
// black-box case. Usage: node examples/ensemble/plain-operator.mjs [--slow-reconcile-ms=200]
import * as k8s from "@kubernetes/client-node";

const namespace = "academy-lab";
const group = "academy.settle.dev";
const version = "v1";
const plural = "ensembles";
const slowMs = Number((process.argv.find((a) => a.startsWith("--slow-reconcile-ms=")) ?? "=0").split("=")[1]);

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (msg, fields = {}) => process.stderr.write(`${JSON.stringify({ msg, ...fields })}\n`);

/** In memory only: the last voices seen per Ensemble. A restart forgets it, which is the whole point. */
const lastVoices = new Map();
let chain = Promise.resolve();

async function child(owner, index, create) {
  const name = `${owner.metadata.name}-voice-${index}`;
  try {
    if (create) {
      const ownerReferences = [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true }];
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name, namespace, labels: { ensemble: owner.metadata.name }, ownerReferences }, data: { voice: String(index) } } });
    } else {
      await core.deleteNamespacedConfigMap({ namespace, name });
    }
  } catch (error) {
    const code = error?.code ?? error?.statusCode;
    if (code !== 409 && code !== 404) throw error;
  }
}

async function onUpdate(ensemble) {
  const name = ensemble.metadata.name;
  const from = lastVoices.get(name) ?? ensemble.spec.voices;
  const to = ensemble.spec.voices;
  lastVoices.set(name, to);
  if (from === to) return;
  for (let i = from; i < to; i++) {
    await child(ensemble, i, true);
    await sleep(slowMs);
  }
  for (let i = from - 1; i >= to; i--) await child(ensemble, i, false);
  const children = await core.listNamespacedConfigMap({ namespace, labelSelector: `ensemble=${name}` });
  await custom.patchNamespacedCustomObjectStatus(
    { group, version, namespace, plural, name, body: { status: { readyVoices: children.items.length, observedGeneration: ensemble.metadata.generation } } },
    mergePatch,
  );
  log("scaled", { name, from, to });
}

const informer = k8s.makeInformer(kc, `/apis/${group}/${version}/namespaces/${namespace}/${plural}`, () =>
  custom.listNamespacedCustomObject({ group, version, namespace, plural }),
);
informer.on("add", (ensemble) => lastVoices.set(ensemble.metadata.name, ensemble.spec.voices));
informer.on("update", (ensemble) => {
  chain = chain.then(() => onUpdate(ensemble)).catch((error) => log("update failed", { error: String(error) }));
});
informer.on("error", (error) => {
  log("informer error, restarting", { error: String(error) });
  setTimeout(() => informer.start(), 1000);
});
await informer.start();
log("started");
