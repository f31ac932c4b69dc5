// The entry point the assets directory's `kube-apiserver` and `etcd` scripts run: `node main.js <binary> [flags]`.
// Run only, never imported: it exits when the binary it names is done, with connections a client left open too.
import { apiServerMain } from "./kube-apiserver.ts";
import { etcdMain } from "./etcd.ts";

const [binary, ...argv] = process.argv.slice(2);
if (binary === "kube-apiserver") process.exitCode = await apiServerMain(argv, process.env, process.stdout, process.stderr);
else if (binary === "etcd") process.exitCode = await etcdMain(argv, process.stdout, process.stderr);
else {
  process.stderr.write(`settle envtest: expected "kube-apiserver" or "etcd" as the first argument, got "${binary ?? ""}"\n`);
  process.exitCode = 2;
}
process.exit();
