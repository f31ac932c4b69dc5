// `settle/kube`: run settle controllers against a real API server.
export { createKubeClient, loadKubeConfig, type KubeClientOptions } from "./client.ts";
export { runControllerProcess, jsonLog, type KubeRunOptions, type KubeRunOptionsWith } from "./run.ts";
