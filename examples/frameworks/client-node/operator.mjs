// The Ensemble operator on @kubernetes/client-node 1.x in its documented informer idiom: makeInformer over a list
// function from CustomObjectsApi, handlers on add/update, and the README's restart of the informer on 'error'.
// Each Ensemble's child ConfigMaps (alpha-voice-0 .. alpha-voice-N-1) follow spec.voices.
//
//   node operator.mjs               level: on every event, create whichever children are missing; a failed
//                                   reconcile is tried again after 500 ms (its own retry: the informer has none)
//   node operator.mjs --no-retry    level, but a failed reconcile is only logged (what the informer gives you)
//   node operator.mjs --delta       delta: on an update, create children from the voices last seen (kept in
//                                   memory) to the new count; a restart forgets a scale-up in progress
//
// It needs only KUBECONFIG (loadFromDefault), as on a cluster.
import * as k8s from "@kubernetes/client-node";

const NAMESPACE = "academy-lab";
const GROUP = "academy.settle.dev";
const VERSION = "v1";
const PLURAL = "ensembles";
const DELTA = process.argv.includes("--delta");
const RETRY = !process.argv.includes("--no-retry");
const RETRY_MS = 500;

const log = (msg, fields = {}) => process.stderr.write(`${JSON.stringify({ msg, ...fields })}\n`);

const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const lastVoices = new Map(); // the delta variant's memory: gone after a restart

async function createChild(owner, index) {
  const name = owner.metadata.name;
  const body = {
    metadata: {
      name: `${name}-voice-${index}`,
      namespace: NAMESPACE,
      labels: { ensemble: name },
      ownerReferences: [{ apiVersion: `${GROUP}/${VERSION}`, kind: "Ensemble", name, uid: owner.metadata.uid, controller: true }],
    },
    data: { voice: String(index) },
  };
  try {
    await core.createNamespacedConfigMap({ namespace: NAMESPACE, body });
  } catch (error) {
    if (!alreadyExists(error)) throw error; // already there: someone (or an earlier try) created it
  }
}

/** A create's 409 means "already there" only with reason AlreadyExists: a 409 Conflict is a failure to retry. */
function alreadyExists(error) {
  if (error?.code !== 409) return false;
  try {
    const status = typeof error.body === "string" ? JSON.parse(error.body) : error.body;
    return status?.reason === "AlreadyExists";
  } catch {
    return false;
  }
}

async function children(name) {
  const list = await core.listNamespacedConfigMap({ namespace: NAMESPACE, labelSelector: `ensemble=${name}` });
  return new Set(list.items.map((item) => item.metadata.name));
}

async function setStatus(name) {
  const readyVoices = (await children(name)).size;
  await custom.patchNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL, name, body: [{ op: "add", path: "/status", value: { readyVoices } }] });
}

async function reconcile(ensemble) {
  const { name } = ensemble.metadata;
  const existing = await children(name);
  for (let i = 0; i < ensemble.spec.voices; i++) if (!existing.has(`${name}-voice-${i}`)) await createChild(ensemble, i);
  await setStatus(name);
}

async function onDelta(type, ensemble) {
  const { name } = ensemble.metadata;
  const voices = ensemble.spec.voices;
  const before = lastVoices.get(name) ?? voices;
  lastVoices.set(name, voices);
  if (type === "add" || before === voices) return;
  for (let i = before; i < voices; i++) await createChild(ensemble, i);
  await setStatus(name);
}

function handle(type, ensemble) {
  log("event", { type, name: ensemble.metadata.name, voices: ensemble.spec.voices });
  const work = DELTA ? onDelta(type, ensemble) : reconcile(ensemble);
  work.catch((error) => {
    log("handler failed", { name: ensemble.metadata.name, error: String(error.message ?? error).slice(0, 200) });
    if (DELTA || !RETRY) return;
    // Read the latest from the informer's cache when the retry runs, not the object of the failed event.
    setTimeout(() => {
      const latest = informer.get(ensemble.metadata.name, NAMESPACE);
      if (latest !== undefined) handle("retry", latest);
    }, RETRY_MS);
  });
}

const path = `/apis/${GROUP}/${VERSION}/namespaces/${NAMESPACE}/${PLURAL}`;
const informer = k8s.makeInformer(kc, path, () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL }));
informer.on("add", (obj) => handle("add", obj));
informer.on("update", (obj) => handle("update", obj));
informer.on("error", (error) => {
  // As client-node's README shows: an informer stops on an error; start it again after a pause.
  log("informer error, restarting", { error: String(error?.message ?? error).slice(0, 200) });
  setTimeout(() => informer.start(), 1000);
});
log("started", { mode: DELTA ? "delta" : RETRY ? "level" : "level-no-retry" });
await informer.start();
