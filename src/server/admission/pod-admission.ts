// What kube-apiserver's default admission chain does to every Pod it creates, so that a Pod read back from `settle
// serve` has the fields a client diffs against on a real cluster:
// - ServiceAccount: `serviceAccountName` defaults to `default` (and the deprecated `serviceAccount` mirrors it), and
//   unless automounting is turned off (on the pod, else on its ServiceAccount) a projected volume
//   `kube-api-access-<suffix>` (a bound token, the cluster CA from the `kube-root-ca.crt` ConfigMap, the namespace) is
//   mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every container and init container that
//   does not mount something there already.
// - DefaultTolerationSeconds: tolerations of the not-ready and unreachable NoExecute taints for 300 seconds, unless
//   the pod tolerates them already.
// - Priority: `priority` from the pod's PriorityClass (or the cluster's global default class, else 0) and its
//   `preemptionPolicy`; an unknown class, or a `priority` that disagrees with the class, is refused (403).
// One difference: the real ServiceAccount plugin refuses a pod whose ServiceAccount does not exist; without a
// controller making `default` accounts (plain `settle serve`), that would refuse every pod, so settle does not.
import { ApiError } from "../../api/errors.ts";
import type { KubeObject } from "../../api/object.ts";
import type { Store } from "../../store/index.ts";
import { isRecord, records, type JsonObject } from "../../api/json.ts";

const tokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount";
const tokenVolumePrefix = "kube-api-access-";
/** The bound token's lifetime the real plugin asks for (an hour and a bit, so clients that refresh are noticed). */
const tokenExpirationSeconds = 3607;
const tolerationSeconds = 300;
const untoleratedTaints = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"];
/** The classes every cluster has from its first start, with their values. */
export const systemPriorityClasses: Readonly<Record<string, number>> = { "system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000 };
/** The characters of generated name suffixes (no vowels, no look-alikes), as the API machinery draws them. */
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789";

function forbidden(pod: KubeObject, message: string): ApiError {
  return new ApiError("Forbidden", 403, `pods "${pod.metadata.name ?? ""}" is forbidden: ${message}`, { name: pod.metadata.name ?? "", kind: "pods" });
}

/** The pod admission of `settle serve`; token volume suffixes count up in the generated-name alphabet. */
export class PodAdmission {
  #count = 0;

  constructor(readonly store: () => Store) {}

  /** Applies the three plugins to a pod being created, in place (`spec` is the pod's own, not shared). */
  admitCreate(pod: KubeObject): void {
    if (!isRecord(pod.spec)) return;
    const spec = pod.spec;
    this.#serviceAccount(pod, spec);
    defaultTolerations(spec);
    this.#priority(pod, spec);
  }

  #serviceAccount(pod: KubeObject, spec: JsonObject): void {
    if (typeof spec.serviceAccountName !== "string" || spec.serviceAccountName === "") spec.serviceAccountName = "default";
    spec.serviceAccount = spec.serviceAccountName;
    if (!this.#automounts(pod, spec)) return;
    const volumes = records(spec.volumes);
    const existing = volumes.find((v) => typeof v.name === "string" && v.name.startsWith(tokenVolumePrefix));
    const name = typeof existing?.name === "string" ? existing.name : `${tokenVolumePrefix}${this.#suffix()}`;
    let mounted = false;
    for (const container of [...records(spec.initContainers), ...records(spec.containers)]) {
      const mounts = records(container.volumeMounts);
      if (mounts.some((m) => m.mountPath === tokenMountPath)) continue;
      container.volumeMounts = [...mounts, { name, readOnly: true, mountPath: tokenMountPath }];
      mounted = true;
    }
    if (existing === undefined && mounted) spec.volumes = [...volumes, tokenVolume(name)];
  }

  /** The pod's own setting, else its ServiceAccount's (when it exists), else true. */
  #automounts(pod: KubeObject, spec: JsonObject): boolean {
    if (typeof spec.automountServiceAccountToken === "boolean") return spec.automountServiceAccountToken;
    try {
      const account = this.store().get({ apiVersion: "v1", kind: "ServiceAccount", namespace: pod.metadata.namespace ?? "", name: String(spec.serviceAccountName) });
      const automount = (account as unknown as JsonObject).automountServiceAccountToken;
      return typeof automount === "boolean" ? automount : true;
    } catch {
      return true;
    }
  }

  #suffix(): string {
    let n = this.#count++;
    let text = "";
    for (let i = 0; i < 5; i++) {
      text += suffixAlphabet[n % suffixAlphabet.length];
      n = Math.floor(n / suffixAlphabet.length);
    }
    return text;
  }

  #priority(pod: KubeObject, spec: JsonObject): void {
    const { name, value, preemptionPolicy } = this.#priorityClass(pod, spec);
    if (name !== "") spec.priorityClassName = name;
    if (typeof spec.priority === "number" && spec.priority !== value) {
      throw forbidden(pod, `the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`);
    }
    spec.priority = value;
    if (typeof spec.preemptionPolicy === "string" && spec.preemptionPolicy !== preemptionPolicy) {
      throw forbidden(pod, `the string value of PreemptionPolicy (${spec.preemptionPolicy}) must not be provided in pod spec; priority admission controller computed ${preemptionPolicy} from the given PriorityClass name`);
    }
    spec.preemptionPolicy = preemptionPolicy;
  }

  /** The pod's class (named, else the global default), as name, value and preemption policy. */
  #priorityClass(pod: KubeObject, spec: JsonObject): { name: string; value: number; preemptionPolicy: string } {
    const classes = this.store().list({ apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass" }).items as unknown as JsonObject[];
    const named = typeof spec.priorityClassName === "string" ? spec.priorityClassName : "";
    const found = named === "" ? classes.find((c) => c.globalDefault === true) : classes.find((c) => isRecord(c.metadata) && c.metadata.name === named);
    if (found === undefined) {
      if (named !== "") throw forbidden(pod, `no PriorityClass with name ${named} was found`);
      return { name: "", value: 0, preemptionPolicy: "PreemptLowerPriority" };
    }
    const name = isRecord(found.metadata) && typeof found.metadata.name === "string" ? found.metadata.name : named;
    return { name, value: typeof found.value === "number" ? found.value : 0, preemptionPolicy: typeof found.preemptionPolicy === "string" ? found.preemptionPolicy : "PreemptLowerPriority" };
  }
}

function tokenVolume(name: string): JsonObject {
  return {
    name,
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: tokenExpirationSeconds, path: "token" } },
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
        { downwardAPI: { items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }] } },
      ],
      defaultMode: 0o644,
    },
  };
}

/** Tolerations of the not-ready and unreachable taints for 300 s, for a pod that does not tolerate them already. */
function defaultTolerations(spec: JsonObject): void {
  const tolerations = records(spec.tolerations);
  const added: JsonObject[] = [];
  for (const key of untoleratedTaints) {
    const tolerated = tolerations.some((t) => (t.key === key || t.key === undefined || t.key === "") && (t.effect === "NoExecute" || t.effect === undefined || t.effect === ""));
    if (!tolerated) added.push({ key, operator: "Exists", effect: "NoExecute", tolerationSeconds });
  }
  if (added.length > 0) spec.tolerations = [...tolerations, ...added];
}
