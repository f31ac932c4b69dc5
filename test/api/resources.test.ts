import { test } from "node:test";
import assert from "node:assert/strict";
import { guessPlural, guessSingular } from "../../src/api/resources.ts";

// Expected values are what apimachinery's UnsafeGuessKindToResource returns, including its English mistakes.
const cases: Array<[kind: string, plural: string]> = [
  ["Pod", "pods"],
  ["ConfigMap", "configmaps"],
  ["Deployment", "deployments"],
  ["Ingress", "ingresses"],
  ["Status", "statuses"],
  ["Policy", "policies"],
  ["NetworkPolicy", "networkpolicies"],
  ["Gateway", "gatewaies"],
  ["Endpoints", "endpoints"],
  ["MyEndpoints", "myendpoints"],
  ["Box", "boxs"],
  ["Mesh", "meshs"],
  ["Leaf", "leafs"],
  ["CRONJOB", "cronjobs"],
  ["S", "ses"],
  ["y", "ies"],
  ["", ""],
];

for (const [kind, plural] of cases) {
  test(`the guessed plural of ${JSON.stringify(kind)} is ${JSON.stringify(plural)}`, () => {
    assert.equal(guessPlural(kind), plural);
  });
}

test("the guessed singular of a kind is its lower-case form", () => {
  assert.equal(guessSingular("ConfigMap"), "configmap");
  assert.equal(guessSingular("Endpoints"), "endpoints");
});
