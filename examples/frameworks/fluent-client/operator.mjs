// The Ensemble operator on kubernetes-fluent-client 3.x (Pepr's client) in its documented idiom: a custom kind
// registered with RegisterKind, K8s(Kind).InNamespace(ns).Watch((object, phase) => ...) and server-side apply with
// K8s(kind.ConfigMap).Apply(...). Each Ensemble's child ConfigMaps (alpha-voice-0 .. N-1) follow spec.voices.
//
//   node operator.mjs               level: on every event, apply every child the spec asks for; a failed
//                                   reconcile is tried again after 500 ms (its own retry)
//   node operator.mjs --no-retry    level, but a failed reconcile is only logged (the Watch emits data_error)
//   node operator.mjs --delta       delta: on MODIFIED, apply children from the voices last seen (kept in memory)
//                                   to the new count; a restart forgets a scale-up in progress
//
// It needs only KUBECONFIG, as on a cluster.
import { GenericKind, K8s, RegisterKind, WatchEvent, kind } from "kubernetes-fluent-client";

const NAMESPACE = "academy-lab";
const GROUP = "academy.settle.dev";
const VERSION = "v1";
const DELTA = process.argv.includes("--delta");
const RETRY = !process.argv.includes("--no-retry");
const RETRY_MS = 500;

const log = (msg, fields = {}) => process.stderr.write(`${JSON.stringify({ msg, ...fields })}\n`);

class Ensemble extends GenericKind {}
RegisterKind(Ensemble, { group: GROUP, version: VERSION, kind: "Ensemble", plural: "ensembles" });

const lastVoices = new Map(); // the delta variant's memory: gone after a restart
const latest = new Map(); // the newest object seen per name, for a retry

function applyChild(owner, index) {
  const name = owner.metadata.name;
  return K8s(kind.ConfigMap).Apply({
    metadata: {
      name: `${name}-voice-${index}`,
      namespace: NAMESPACE,
      labels: { ensemble: name },
      ownerReferences: [{ apiVersion: `${GROUP}/${VERSION}`, kind: "Ensemble", name, uid: owner.metadata.uid, controller: true }],
    },
    data: { voice: String(index) },
  });
}

async function setStatus(ensemble) {
  const children = await K8s(kind.ConfigMap).InNamespace(NAMESPACE).WithLabel("ensemble", ensemble.metadata.name).Get();
  await K8s(Ensemble).PatchStatus({ metadata: { name: ensemble.metadata.name, namespace: NAMESPACE }, status: { readyVoices: children.items.length } });
}

async function reconcile(ensemble) {
  for (let i = 0; i < ensemble.spec.voices; i++) await applyChild(ensemble, i);
  await setStatus(ensemble);
}

async function onDelta(phase, ensemble) {
  const { name } = ensemble.metadata;
  const voices = ensemble.spec.voices;
  const before = lastVoices.get(name) ?? voices;
  lastVoices.set(name, voices);
  if (phase === "ADDED" || before === voices) return;
  for (let i = before; i < voices; i++) await applyChild(ensemble, i);
  await setStatus(ensemble);
}

async function handle(ensemble, phase) {
  const { name } = ensemble.metadata;
  log("event", { phase, name, voices: ensemble.spec.voices });
  if (DELTA) return onDelta(phase, ensemble);
  latest.set(name, ensemble);
  try {
    await reconcile(ensemble);
  } catch (error) {
    if (!RETRY) throw error; // the Watch reports it as data_error and goes on
    log("reconcile failed, retrying", { name, error: String(error?.message ?? error).slice(0, 200) });
    setTimeout(() => void handle(latest.get(name), "RETRY"), RETRY_MS);
  }
}

const watcher = K8s(Ensemble).InNamespace(NAMESPACE).Watch(handle);
watcher.events.on(WatchEvent.DATA_ERROR, (error) => log("handler failed", { error: String(error?.message ?? error).slice(0, 200) }));
watcher.events.on(WatchEvent.NETWORK_ERROR, (error) => log("watch network error", { error: String(error?.message ?? error).slice(0, 200) }));
watcher.events.on(WatchEvent.RECONNECT, (count) => log("watch reconnect", { count }));
watcher.events.on(WatchEvent.LIST_ERROR, (error) => log("list error", { error: String(error?.message ?? error).slice(0, 200) }));
watcher.events.on(WatchEvent.OLD_RESOURCE_VERSION, (rv) => log("watch 410, relisting", { rv }));
log("started", { mode: DELTA ? "delta" : RETRY ? "level" : "level-no-retry" });
await watcher.start();
