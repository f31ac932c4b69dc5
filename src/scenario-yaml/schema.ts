// The JSON Schema of `scenario.yaml`: what the loader validates against (with ajv) and what editors complete from
// (`examples/scenario.schema.json` is this object, written out; a test keeps the two equal).
import { drillFaultKinds } from "../api/faults.ts";

const celExpression = { type: "string", minLength: 1, description: "A CEL expression over the world: get(kind, ns, name), get(kind, name), list(kind), list(kind, ns), list(kind, ns, selector)." };

const objectRef = {
  type: "object",
  required: ["kind", "name"],
  properties: {
    apiVersion: { type: "string", description: "Default: found from the kind among the served kinds." },
    kind: { type: "string" },
    namespace: { type: "string" },
    name: { type: "string" },
  },
};

const step = {
  type: "object",
  description: "One workload step: exactly one of apply, patch, delete, sleep, waitFor.",
  minProperties: 1,
  maxProperties: 1,
  additionalProperties: false,
  properties: {
    apply: { type: "object", description: "A manifest: created when absent, else merged into the object (a merge patch).", required: ["kind", "metadata"] },
    patch: {
      type: "object",
      allOf: [objectRef],
      properties: { ...objectRef.properties, merge: { type: "object", description: "RFC 7386 merge patch." }, json: { type: "array", description: "RFC 6902 operations." }, status: { type: "boolean", description: "Patch the status subresource." } },
      oneOf: [{ required: ["merge"] }, { required: ["json"] }],
      additionalProperties: false,
    },
    delete: { ...objectRef, additionalProperties: false },
    sleep: { type: "integer", minimum: 0, maximum: 600_000, description: "Milliseconds." },
    waitFor: {
      oneOf: [
        celExpression,
        { type: "object", required: ["condition"], additionalProperties: false, properties: { condition: celExpression, timeoutMs: { type: "integer", minimum: 1, description: "Default 30000." } } },
      ],
    },
  },
};

const property = {
  type: "object",
  additionalProperties: false,
  required: ["expr"],
  oneOf: [{ required: ["always"] }, { required: ["eventually"] }],
  properties: {
    always: { type: "string", minLength: 1, description: "Name of a safety property: checked after every write." },
    eventually: { type: "string", minLength: 1, description: "Name of a liveness property: must hold once the world is quiet." },
    expr: celExpression,
    withinMs: { type: "integer", minimum: 1, description: "eventually only: must hold this long after the workload's end at the latest." },
  },
};

export const scenarioSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  $id: "https://settle.dev/schemas/scenario.schema.json",
  title: "settle scenario (YAML)",
  type: "object",
  additionalProperties: false,
  required: ["name", "variants", "properties"],
  properties: {
    $schema: { type: "string" },
    name: { type: "string", pattern: "^[a-z0-9][a-z0-9-]{0,62}$" },
    description: { type: "string" },
    variants: {
      type: "object",
      minProperties: 1,
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        properties: {
          description: { type: "string" },
          command: { type: "array", minItems: 1, items: { type: "string" }, description: "The controller's command, run from the scenario's folder." },
          module: {
            type: "string",
            minLength: 1,
            description: "A Node.js controller module, relative to the scenario: settle explore runs it in the simulator; settle drill runs `node MODULE ARGS...` unless a command is given.",
          },
          go: {
            type: "string",
            minLength: 1,
            description:
              "A Go main package (a folder inside a Go module), relative to the scenario: settle explore builds it for js/wasm and runs it in the simulator; settle drill runs a native build of it unless a command is given.",
          },
          args: { type: "array", items: { type: "string" }, description: "module or go only: the program's arguments." },
          replicas: { type: "integer", minimum: 1, maximum: 16, description: "module or go only: how many instances run, each with its own identity and crashes (default 1)." },
          expect: { enum: ["finding", "ok"], description: "What settle explore and settle drill find of this variant: a finding (buggy) or none (fixed). Default ok." },
          drillExpect: {
            enum: ["finding", "ok"],
            description: "What settle drill finds, where it differs from expect (a real process restarted as a kubelet would, under the scenario's faults.kinds). Default: expect.",
          },
          env: { type: "object", additionalProperties: { type: "string" }, description: "Extra environment variables for the controller (command or module)." },
        },
      },
    },
    world: {
      type: "object",
      additionalProperties: false,
      properties: {
        files: { type: "array", items: { type: "string" }, description: "Manifest files or folders (their .yaml, .yml and .json files), relative to the scenario." },
        manifests: { type: "array", items: { type: "object", required: ["apiVersion", "kind", "metadata"] } },
      },
    },
    workload: { type: "array", items: step },
    properties: { type: "array", minItems: 1, items: property },
    faults: {
      oneOf: [
        { const: "none" },
        {
          type: "object",
          additionalProperties: false,
          properties: {
            kinds: { type: "array", items: { enum: drillFaultKinds }, description: "The faults settle drill applies at each point without --faults (declare what an expected finding needs). Default [kill]; --faults applies every kind." },
            afterWrites: { type: "array", items: { type: "integer", minimum: 1 }, description: "Points (write numbers). Default: every write of the reference run." },
          },
        },
      ],
    },
    drill: {
      type: "object",
      additionalProperties: false,
      properties: {
        quietMs: {
          type: "integer",
          minimum: 1,
          description: "The reference run's quiet window (default 2000) and the most a learned window may widen to; --quiet-ms fixes the window instead.",
        },
        timeoutMs: { type: "integer", minimum: 1, description: "The bound on every phase of a run (default 60000)." },
        coldStart: {
          type: "boolean",
          description:
            "Start each controller process at its turn, as --cold-start does: for a client that drops the path of the kubeconfig's server URL, whose requests the drill then cannot tell apart from the running process's.",
        },
      },
    },
  },
} as const;
