// Which ready steps commute: running them in either order leaves every actor, the store and external state
// the same, so a search that has run one order need not run the other (partial-order reduction). The answer
// must never be "commute" for two steps that do not: a wrong "yes" hides schedules, a wrong "no" only costs
// runs. So anything this file cannot see through is dependent.
import type { ReadyStep } from "./strategy.ts";
import type { StepFacts } from "./trace.ts";

/** What a step touches beyond its own actor's memory. */
type Touch =
  | { type: "local" }
  | { type: "delivery"; collection: NonNullable<StepFacts["object"]> }
  | { type: "everything" }
  | { type: "store" }
  | { type: "request"; facts: StepFacts }
  | { type: "external"; cell: string; write: boolean };

/**
 * A response and an actor's timer resume only their own actor's code, which reaches the world only through later
 * steps (a request, an external access), so they touch their actor alone. A watch delivery does too, but it also
 * takes the next event off its watch's queue and makes the following delivery ready, while a write into the
 * watched collection adds to that queue (and makes the delivery ready if none was): in either order the same
 * events arrive, yet which step made the next delivery differs, and the bounded search's preemption count depends
 * on that (see `StepOrigin`), so a delivery does not commute with writes into its collection. A start runs an
 * actor's setup and a step of the simulator itself ("sim") may do anything: both touch everything, as does any step
 * this file does not know. Garbage collection touches the whole store.
 */
function touchOf(step: ReadyStep): Touch {
  if (step.actor === "sim") return { type: "everything" };
  switch (step.kind) {
    case "response":
    case "timer":
      return { type: "local" };
    case "watch":
      return step.collection === undefined ? { type: "everything" } : { type: "delivery", collection: step.collection };
    case "gc":
      return { type: "store" };
    case "request":
      return step.facts?.object === undefined ? { type: "everything" } : { type: "request", facts: step.facts };
    case "external":
      return step.facts?.external === undefined ? { type: "everything" } : { type: "external", cell: step.facts.external, write: step.facts.access !== "read" };
    default:
      return { type: "everything" };
  }
}

function changesWorld(touch: Touch): boolean {
  if (touch.type === "store") return true;
  if (touch.type === "request") return touch.facts.access !== "read";
  return touch.type === "external" && touch.write;
}

/** Two requests touch the same thing when one's object or collection holds the other's object. */
function overlaps(a: NonNullable<StepFacts["object"]>, b: NonNullable<StepFacts["object"]>): boolean {
  if (a.kind !== b.kind) return false;
  if (a.namespace !== undefined && b.namespace !== undefined && a.namespace !== b.namespace) return false;
  // A request without a name lists or watches a collection (all namespaces when it has none): it sees every object in it.
  if (a.name === undefined || b.name === undefined) return true;
  return a.name === b.name;
}

/**
 * Two requests of different actors (not both writes: those never commute, if only because every write takes
 * the store's next revision) commute when they touch disjoint objects and collections (a list or watch does not
 * commute with a write inside it). Their latencies do not depend on their order: the kernel draws each actor
 * incarnation's latencies from its own stream, and the bounded search takes one constant latency anyway.
 */
function requestsCommute(a: StepFacts, b: StepFacts): boolean {
  // A CustomResourceDefinition decides whether its kind exists at all (and deleting it deletes its objects).
  if (a.object!.kind === crdKind || b.object!.kind === crdKind) return false;
  return !overlaps(a.object!, b.object!);
}

const crdKind = "CustomResourceDefinition";

/** A watch delivery and another actor's step: they commute unless the step may add to the watch's queue. */
function deliveryCommutes(collection: NonNullable<StepFacts["object"]>, other: Touch): boolean {
  switch (other.type) {
    case "local":
    case "delivery":
    case "external":
      return true;
    case "request":
      // A CustomResourceDefinition write may delete every object of its kind: events for any watch.
      if (other.facts.access === "read") return true;
      return other.facts.object!.kind !== crdKind && !overlaps(collection, other.facts.object!);
    default:
      // Garbage collection deletes anywhere in the store.
      return false;
  }
}

/** Whether `a` and `b` may run in either order with the same outcome. Steps of one actor never commute. */
export function commute(a: ReadyStep, b: ReadyStep): boolean {
  if (a.actor === b.actor) return false;
  const ta = touchOf(a);
  const tb = touchOf(b);
  if (ta.type === "everything" || tb.type === "everything") return false;
  if (ta.type === "delivery") return deliveryCommutes(ta.collection, tb);
  if (tb.type === "delivery") return deliveryCommutes(tb.collection, ta);
  if (ta.type === "local" || tb.type === "local") return true;
  // Two steps that both change the world do not commute even on disjoint state: the world between them differs
  // by order, and a safety property is checked there (a search that skips one order never sees that world).
  if (changesWorld(ta) && changesWorld(tb)) return false;
  if (ta.type === "external" && tb.type === "external") return ta.cell !== tb.cell || (!ta.write && !tb.write);
  if (ta.type === "external" || tb.type === "external") return true;
  if (ta.type === "store" || tb.type === "store") return false;
  return requestsCommute(ta.facts, tb.facts);
}
