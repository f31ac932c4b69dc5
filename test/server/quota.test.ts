// ResourceQuota in `settle serve`: a create the namespace's quota has no room for is refused with the real 403s
// (`exceeded quota`, `failed quota ... must specify`), and the quota's status shows its limits and what is used,
// kept up to date after writes as the quota controller keeps it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { realClock } from "../../src/api/clock.ts";
import { kubectl, request, testServer } from "./helpers.ts";
import type { TestServer } from "./helpers.ts";

const base = "/api/v1/namespaces/default";

async function quotaStatus(t: TestServer, name: string, want: (status: any) => boolean): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const status = (await request(t.server, "GET", `${base}/resourcequotas/${name}`)).json.status;
    if (status !== undefined && want(status)) return status;
    await realClock.sleep(10);
  }
  assert.fail(`quota ${name} never reached the status wanted`);
}

const pod = (name: string, resources?: object) => ({ metadata: { name }, spec: { containers: [{ name: "app", image: "nginx", ...(resources === undefined ? {} : { resources }) }] } });

test("object counts: the third ConfigMap under a quota of two is refused, and the status counts what exists", async () => {
  const t = await testServer();
  try {
    assert.equal((await kubectl(t, ["create", "quota", "objects", "--hard=configmaps=2,count/secrets=1"])).code, 0);
    for (const name of ["a", "b"]) assert.equal((await request(t.server, "POST", `${base}/configmaps`, { body: { metadata: { name } } })).status, 201);
    const refused = await request(t.server, "POST", `${base}/configmaps`, { body: { metadata: { name: "c" } } });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.json.reason, "Forbidden");
    assert.equal(refused.json.message, 'configmaps "c" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2');
    const status = await quotaStatus(t, "objects", (s) => s.used?.configmaps === "2");
    assert.deepEqual(status, { hard: { configmaps: "2", "count/secrets": "1" }, used: { configmaps: "2", "count/secrets": "0" } });
    assert.equal((await request(t.server, "DELETE", `${base}/configmaps/a`)).status, 200);
    assert.equal((await request(t.server, "POST", `${base}/configmaps`, { body: { metadata: { name: "c" } } })).status, 201, "room again after a delete");
    const described = await kubectl(t, ["get", "quota", "objects"]);
    assert.match(described.stdout, /configmaps: 2\/2, count\/secrets: 0\/1/);
  } finally {
    await t.close();
  }
});

test("compute: a pod must state what the quota limits, and one that would pass the limit is refused", async () => {
  const t = await testServer();
  try {
    const quota = { metadata: { name: "compute" }, spec: { hard: { "requests.cpu": "1", "limits.memory": "1Gi", pods: "10" } } };
    assert.equal((await request(t.server, "POST", `${base}/resourcequotas`, { body: quota })).status, 201);
    const bare = await request(t.server, "POST", `${base}/pods`, { body: pod("bare") });
    assert.equal(bare.status, 403, bare.text);
    assert.equal(bare.json.message, 'pods "bare" is forbidden: failed quota: compute: must specify limits.memory,requests.cpu');
    const sized = { requests: { cpu: "600m" }, limits: { memory: "512Mi" } };
    assert.equal((await request(t.server, "POST", `${base}/pods`, { body: pod("one", sized) })).status, 201);
    const second = await request(t.server, "POST", `${base}/pods`, { body: pod("two", sized) });
    assert.equal(second.status, 403, second.text);
    assert.equal(second.json.message, 'pods "two" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1');
    const status = await quotaStatus(t, "compute", (s) => s.used?.pods === "1");
    assert.deepEqual(status.used, { "limits.memory": "512Mi", pods: "1", "requests.cpu": "600m" });
  } finally {
    await t.close();
  }
});
