// What kube-apiserver's bootstrap controller keeps in every cluster: the `kubernetes` Service in `default` (cluster IP
// 10.96.0.1, port 443 named https) and its Endpoints and EndpointSlice naming the API server itself, so clients in
// pods, charts and tests that look for `kubernetes.default.svc` find it. Made once the server listens (the port is
// known then), unless the store has them already.
import { isAlreadyExists } from "../api/errors.ts";
import type { KubeObject } from "../api/object.ts";
import type { Store } from "../store/index.ts";

export const kubernetesServiceIp = "10.96.0.1";

export function ensureKubernetesService(store: Store, address: string, port: number): void {
  const metadata = { name: "kubernetes", namespace: "default" };
  const https = { name: "https", port, protocol: "TCP" };
  const objects = [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { ...metadata, labels: { component: "apiserver", provider: "kubernetes" } },
      spec: { type: "ClusterIP", clusterIP: kubernetesServiceIp, ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: port }], sessionAffinity: "None" },
    },
    {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { ...metadata, labels: { "endpointslice.kubernetes.io/skip-mirror": "true" } },
      subsets: [{ addresses: [{ ip: address }], ports: [https] }],
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { ...metadata, labels: { "kubernetes.io/service-name": "kubernetes" } },
      addressType: "IPv4",
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports: [https],
    },
  ];
  for (const object of objects) {
    try {
      store.create(object as unknown as KubeObject);
    } catch (error) {
      // A world served with its own (a setup file that has them) keeps them.
      if (!isAlreadyExists(error)) throw error;
    }
  }
}
