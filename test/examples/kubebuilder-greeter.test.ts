// The kubebuilder-layout Go operator (examples/go/kubebuilder-greeter): its Ginkgo suite, as kubebuilder scaffolds
// it, passes with `go test ./...` and KUBEBUILDER_ASSETS set to what `settle envtest-assets` prints; envtest starts
// settle's kube-apiserver and etcd, installs the CRD from config/crd/bases, and the suite's controller runs against
// them; the webhook suite's validating webhook, served in the test process with envtest's certificate, is called by
// settle's admission, and the Greeter's v2 (a spoke of v1, the hub) is read and written through the conversion
// webhook the same server runs, which envtest points the CRD at. This needs a Go toolchain (1.26, on PATH or in /usr/local/go) and the Go module proxy or a
// warm module cache.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const example = join(repo, "examples", "go", "kubebuilder-greeter");

/** The `go` command: on PATH, else Go's default install directory. */
export function goCommand(): string {
  const onPath = spawnSync("go", ["version"], { encoding: "utf8" });
  if (onPath.status === 0) return "go";
  if (existsSync("/usr/local/go/bin/go")) return "/usr/local/go/bin/go";
  assert.fail("this test needs a Go toolchain: none on PATH or in /usr/local/go (install Go 1.26 from go.dev/dl)");
}

/** `settle envtest-assets` into a fresh directory: the path KUBEBUILDER_ASSETS is set to. */
export function envtestAssets(): string {
  const dir = join(mkdtempSync(join(tmpdir(), "settle-envtest-go-")), "assets");
  const result = spawnSync(process.execPath, [join(repo, "bin", "settle.js"), "envtest-assets"], { env: { ...process.env, SETTLE_ENVTEST_ASSETS_DIR: dir }, encoding: "utf8" });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim();
}

test("examples/go/kubebuilder-greeter: go test ./... passes against settle envtest-assets", { timeout: 900_000 }, () => {
  const go = goCommand();
  const assets = envtestAssets();
  const result = spawnSync(go, ["test", "-count=1", "-v", "./...", "-args", "-ginkgo.v", "-ginkgo.no-color"], {
    cwd: example,
    env: { ...process.env, KUBEBUILDER_ASSETS: assets, GOFLAGS: "-mod=readonly" },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout}\n${result.stderr}`;
  assert.equal(result.status, 0, output.slice(-8000));
  assert.match(output, /ok\s+example\.com\/greeter\/internal\/controller/);
  assert.match(output, /ok\s+example\.com\/greeter\/internal\/webhook\/v1/);
  assert.match(output, /Running Suite: Controller Suite[\s\S]*?SUCCESS! -- 6 Passed \| 0 Failed/, "the controller suite");
  assert.match(output, /Running Suite: Webhook Suite[\s\S]*?SUCCESS! -- 6 Passed \| 0 Failed/, "the webhook suite: envtest's webhook configuration and the CRD's conversion webhook, called by settle");
  // Written at v2 and read at v1 and back: only the conversion webhook maps v2's recipient to v1's name.
  assert.match(output, /Greeter conversion webhook stores a Greeter written at v2 at v1, where recipient is name\n/);
});

test("examples/go/kubebuilder-greeter: the suite passes with SETTLE_FAULTS arming 500, 429, 409, a lost response and closed watches", { timeout: 900_000 }, () => {
  const go = goCommand();
  const assets = envtestAssets();
  const result = spawnSync(go, ["test", "-count=1", "-v", "./internal/controller", "-args", "-ginkgo.v", "-ginkgo.no-color"], {
    cwd: example,
    env: { ...process.env, KUBEBUILDER_ASSETS: assets, GOFLAGS: "-mod=readonly", SETTLE_FAULTS: join(example, "hack", "faults.yaml"), KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT: "true" },
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout}\n${result.stderr}`;
  assert.equal(result.status, 0, output.slice(-8000));
  assert.match(output, /with 6 fault\(s\) armed from SETTLE_FAULTS/);
  assert.match(output, /every fault from SETTLE_FAULTS was spent/, "each fault met the suite's requests");
  assert.match(output, /SUCCESS! -- 6 Passed \| 0 Failed/);
});
