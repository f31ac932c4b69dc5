// The Ensemble operator on @dot-i/k8s-operator 1.3 (over @kubernetes/client-node 0.20 and its `request` transport)
// in the README's idiom: a subclass of Operator whose init() calls watchResource() with an async handler wrapped in
// try/catch, children created through the framework's CoreV1Api (this.k8sApi) and the status written with
// patchResourceStatus(). Each Ensemble's child ConfigMaps (alpha-voice-0 .. N-1) follow spec.voices.
//
//   node operator.mjs               level: on every event, create whichever children are missing; a failed
//                                   reconcile is tried again after 500 ms (its own retry)
//   node operator.mjs --no-retry    level, the README's handler: a failure is logged ("handler failed") and that is all
//   node operator.mjs --delta       delta: on MODIFIED, create children from the voices last seen (kept in memory)
//                                   to the new count; a restart forgets a scale-up in progress
//
// It needs only KUBECONFIG (the framework calls loadFromDefault), as on a cluster.
import operator from "@dot-i/k8s-operator";

const Operator = operator.default;
const { ResourceEventType } = operator;
const NAMESPACE = "academy-lab";
const GROUP = "academy.settle.dev";
const VERSION = "v1";
const DELTA = process.argv.includes("--delta");
const RETRY = !process.argv.includes("--no-retry");
const RETRY_MS = 500;

const log = (msg, fields = {}) => process.stderr.write(`${JSON.stringify({ msg, ...fields })}\n`);
const logger = { info: (m) => log(m), debug: () => {}, warn: (m) => log(m), error: (m) => log(String(m).slice(0, 300)) };

class EnsembleOperator extends Operator {
  lastVoices = new Map(); // the delta variant's memory: gone after a restart
  latest = new Map(); // the newest event per name, for a retry

  async init() {
    await this.watchResource(GROUP, VERSION, "ensembles", (e) => this.onEvent(e), NAMESPACE);
  }

  async onEvent(e) {
    const { name } = e.meta;
    log("event", { type: e.type, name, voices: e.object.spec?.voices });
    try {
      if (e.type !== ResourceEventType.Added && e.type !== ResourceEventType.Modified) return;
      if (DELTA) await this.delta(e);
      else {
        this.latest.set(name, e);
        await this.reconcile(e);
      }
    } catch (error) {
      log("handler failed", { name, error: String(error?.body?.message ?? error?.message ?? error).slice(0, 200) });
      if (DELTA || !RETRY) return;
      setTimeout(() => void this.onEvent({ ...this.latest.get(name), type: ResourceEventType.Modified }), RETRY_MS);
    }
  }

  async createChild(owner, index) {
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
      await this.k8sApi.createNamespacedConfigMap(NAMESPACE, body);
    } catch (error) {
      // Already there only with reason AlreadyExists: a 409 Conflict is a failure to retry.
      if (error?.statusCode !== 409 || error.body?.reason !== "AlreadyExists") throw error;
    }
  }

  async children(name) {
    const { body } = await this.k8sApi.listNamespacedConfigMap(NAMESPACE, undefined, undefined, undefined, undefined, `ensemble=${name}`);
    return new Set(body.items.map((item) => item.metadata.name));
  }

  async reconcile(e) {
    const { name } = e.meta;
    const existing = await this.children(name);
    for (let i = 0; i < e.object.spec.voices; i++) if (!existing.has(`${name}-voice-${i}`)) await this.createChild(e.object, i);
    await this.patchResourceStatus(e.meta, { readyVoices: (await this.children(name)).size });
  }

  async delta(e) {
    const { name } = e.meta;
    const voices = e.object.spec.voices;
    const before = this.lastVoices.get(name) ?? voices;
    this.lastVoices.set(name, voices);
    if (e.type === ResourceEventType.Added || before === voices) return;
    for (let i = before; i < voices; i++) await this.createChild(e.object, i);
    await this.patchResourceStatus(e.meta, { readyVoices: (await this.children(name)).size });
  }
}

const ensembles = new EnsembleOperator(logger);
log("started", { mode: DELTA ? "delta" : RETRY ? "level" : "level-no-retry" });
await ensembles.start();
const exit = () => {
  ensembles.stop();
  process.exit(0);
};
process.on("SIGTERM", exit).on("SIGINT", exit);
