// settle/server: a Kubernetes-compatible HTTP API over a settle store, for kubectl, helm, client-node and
// controllers in any language.
export { startServer, isLoopback } from "./server.ts";
export { createServerStore, serverAdmission, serverHistoryBytesMax } from "./admission/admission.ts";
export type { ServerOptions, SettleServer } from "./server.ts";
export { kubeconfigText, writeKubeconfig } from "./auth/kubeconfig.ts";
export { loadSetup, manifestObjects, SetupError } from "./setup.ts";
export { decodeProtobuf } from "./encoding/protobuf.ts";
export { applyStrategicPatch } from "./strategic.ts";
export { parseFaultSpecs, serverFaultKinds } from "./faults.ts";
export { Auditor, parseAuditPolicy } from "./audit.ts";
export type { AuditPolicy } from "./audit.ts";
export type { ArmedFault, FaultSpec, FaultVerb, ServerFaultKind } from "./faults.ts";
