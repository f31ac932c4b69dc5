// IPAddress names (networking.k8s.io/v1): the real server requires the name to be an IP address in canonical
// form, the key its allocator looks addresses up by; any other spelling of the same address is refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalIp, isCanonicalIpName } from "../../src/api/ip.ts";
import { assertFails, newStore } from "./helpers.ts";

const ipAddress = (name: string) => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "IPAddress",
  metadata: { name },
  spec: { parentRef: { group: "", resource: "services", namespace: "default", name: "web" } },
});

test("canonical IPs are written as Go's net.IP.String writes them", () => {
  const cases: Array<[string, string | undefined]> = [
    ["10.0.0.1", "10.0.0.1"],
    ["010.000.000.001", "10.0.0.1"],
    ["2001:DB8::1", "2001:db8::1"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["1:0:0:2:0:0:0:3", "1:0:0:2::3"],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
    ["::", "::"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::192.0.2.1", "::c000:201"],
    ["256.0.0.1", undefined],
    ["10.0.0", undefined],
    ["fe80::1%eth0", undefined],
    ["10.0.0.0/24", undefined],
    ["1::2::3", undefined],
    ["12345::", undefined],
    ["web", undefined],
  ];
  for (const [text, canonical] of cases) assert.equal(canonicalIp(text), canonical, text);
  assert.deepEqual(isCanonicalIpName("2001:db8::1"), []);
  assert.deepEqual(isCanonicalIpName("2001:DB8::1"), ['must be in canonical form ("2001:db8::1")']);
});

test("an IPAddress is created under its canonical IPv4 or IPv6 name and refused under any other", () => {
  const store = newStore();
  store.create(ipAddress("10.96.0.10"));
  store.create(ipAddress("2001:db8::a"));
  assertFails(store, () => store.create(ipAddress("10.96.000.11")), 422, "Invalid", /metadata\.name: Invalid value: "10\.96\.000\.11": must be in canonical form \("10\.96\.0\.11"\)/);
  assertFails(store, () => store.create(ipAddress("2001:DB8::b")), 422, "Invalid", /must be in canonical form \("2001:db8::b"\)/);
  assertFails(store, () => store.create(ipAddress("2001:db8:0:0:0:0:0:c")), 422, "Invalid", /must be in canonical form \("2001:db8::c"\)/);
  assertFails(store, () => store.create(ipAddress("web")), 422, "Invalid", /must be a valid IP address/);
  // Other kinds keep their rules: a ConfigMap may not be named like an IPv6 address.
  assertFails(store, () => store.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "2001:db8::1", namespace: "default" } }), 422, "Invalid");
});
