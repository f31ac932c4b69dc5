// The revision log on its own, below the API semantics: its bounds, its compaction and its named invariants, which
// the store's public API cannot break (so they are broken here by hand, to show each check fires).
import { test } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { deepFreeze } from "../../src/api/json.ts";
import { Registry } from "../../src/store/registry.ts";
import { RevisionLog, tombstoneBytes, versionsOfKey } from "../../src/store/revision-log.ts";
import type { Version } from "../../src/store/version.ts";
import { Watcher } from "../../src/store/watch.ts";

function configMaps(): ReturnType<Registry["lookup"]>["state"] {
  return new Registry().lookup({ apiVersion: "v1", kind: "ConfigMap" }).state;
}

function object(name: string, value: string): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default" }, data: { value } };
}

test("the log keeps its history within both bounds, compacting oldest first, one revision at a time", () => {
  const state = configMaps();
  const log = new RevisionLog({ historyRevisionsMax: 10, historyBytesMax: 1000 });
  // Sizes chosen to cross each bound: runs of small writes (revision bound), large ones (byte bound), and one write
  // larger than the whole byte bound, which stays alone as the newest revision.
  const sizes = [50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 50, 400, 400, 400, 2000, 10, 10, 300, 300, 300, 300];
  let compacted = 0;
  sizes.forEach((bytes, i) => {
    const key = `default/cm-${i % 3}`;
    log.commit(state, key, "ADDED", object(`cm-${i % 3}`, String(i)), state.objects.get(key), bytes);
    assert.equal(log.revision, i + 1);
    assert.ok(log.compactedRevision >= compacted, "the compacted revision never moves back");
    compacted = log.compactedRevision;
    assert.ok(log.revision - log.compactedRevision <= 10, `revision bound: ${log.revision} - ${log.compactedRevision}`);
    assert.ok(log.historyBytes <= 1000 || log.revision - log.compactedRevision === 1, `byte bound: ${log.historyBytes} bytes`);
    const kept = log.history(log.compactedRevision).map((event) => event.revision);
    assert.deepEqual(kept, Array.from({ length: log.revision - log.compactedRevision }, (_, k) => log.compactedRevision + 1 + k));
  });
  // The 2000-byte write was alone in the history right after it was committed; compaction moved past it since.
  assert.ok(log.compactedRevision > sizes.indexOf(2000) + 1);
  assert.throws(() => log.history(log.compactedRevision - 1), /too old resource version/);
});

test("a commit stamps, freezes and chains the key's versions, and the layer above hears of it before any watcher", () => {
  const state = configMaps();
  const heard: string[] = [];
  const log = new RevisionLog({ onCommit: (version) => heard.push(`commit ${version.event.revision}`) });
  const filter = { namespace: undefined, name: undefined, matches: undefined, view: (o: KubeObject) => o };
  const watcher = new Watcher(state.watchers, filter, (event) => heard.push(`watch ${event.revision}`), 0);
  state.watchers.add(watcher);
  log.replay(watcher, []);
  const first = log.commit(state, "default/a", "ADDED", object("a", "1"), undefined, 10);
  const second = log.commit(state, "default/a", "MODIFIED", object("a", "2"), first, 10);
  assert.equal(second.prev, first);
  assert.equal(second.event.object.metadata.resourceVersion, "2");
  assert.ok(Object.isFrozen(second.event.object) && Object.isFrozen(second.event.object.data));
  assert.deepEqual(heard, ["commit 1", "watch 1", "commit 2", "watch 2"]);
});

test("the log's invariants fail by name when broken: a key's version from the future, a watcher behind compaction", () => {
  const state = configMaps();
  const log = new RevisionLog({ historyRevisionsMax: 1 });
  log.commit(state, "default/a", "ADDED", object("a", "1"), undefined, 10);
  log.commit(state, "default/b", "ADDED", object("b", "1"), undefined, 10);
  const future = { ...state.objects.get("default/a")!, event: { type: "ADDED", object: object("a", "x"), revision: 9 } } as Version;
  assert.throws(() => log.commit(state, "default/a", "MODIFIED", object("a", "2"), future, 10), /log-revision-strictly-increasing/);
  const next = { ...future, event: { ...future.event, revision: log.revision + 1 } } as Version;
  assert.throws(() => log.commit(state, "default/a", "MODIFIED", object("a", "2"), next, 10), /log-revision-strictly-increasing/, "a version at the revision being committed is not before it");
  const filter = { namespace: undefined, name: undefined, matches: undefined, view: (o: KubeObject) => o };
  const behind = new Watcher(state.watchers, filter, () => {}, log.compactedRevision - 1);
  assert.throws(() => log.replay(behind, []), /log-watch-not-behind-compaction/);
});

test("a log's writes restore into a log that stands where it stood, and not once it has compacted", () => {
  const state = configMaps();
  const log = new RevisionLog({ historyRevisionsMax: 4 });
  for (let i = 0; i < 3; i++) log.commit(state, `default/cm-${i}`, "ADDED", object(`cm-${i}`, String(i)), undefined, 10);
  const logged = log.writesAfter(1);
  assert.ok(logged !== undefined);
  const copyState = configMaps();
  const copy = new RevisionLog({ historyRevisionsMax: 4 });
  copy.commit(copyState, "default/cm-0", "ADDED", object("cm-0", "0"), undefined, 10);
  assert.equal(copy.endsWith(1, logged.baseEvent), true);
  copy.restoreWrites(logged.writes, () => copyState);
  assert.deepEqual(copy.history(0), log.history(0));
  assert.equal(copy.endsWith(3, logged.baseEvent), false, "the write before revision 4 is not revision 1's");
  for (let i = 3; i < 6; i++) log.commit(state, `default/cm-${i}`, "ADDED", object(`cm-${i}`, String(i)), undefined, 10);
  assert.equal(log.writesAfter(log.revision), undefined, "a compacted log has no whole history to give");
});

test("the history's byte count is the sum of the kept versions' bytes, and a bound met exactly compacts nothing", () => {
  const state = configMaps();
  const log = new RevisionLog({ historyRevisionsMax: 5, historyBytesMax: 100 });
  // A model of the two bounds over the kept sizes, oldest first; the newest revision always stays.
  const kept: number[] = [];
  const sizes = [40, 60, 1, 30, 69, 100, 100, 101, 5, 5, 5, 5, 5, 5, 95];
  sizes.forEach((bytes, i) => {
    const key = `default/cm-${i % 2}`;
    log.commit(state, key, "ADDED", object(`cm-${i % 2}`, String(i)), state.objects.get(key), bytes);
    kept.push(bytes);
    const sum = () => kept.reduce((a, b) => a + b, 0);
    while (kept.length > 5 || (sum() > 100 && kept.length > 1)) kept.shift();
    assert.equal(log.historyBytes, sum(), `bytes after revision ${i + 1}`);
    assert.equal(log.compactedRevision, log.revision - kept.length, `compacted revision after revision ${i + 1}`);
  });
});

test("a deletion counts more than its key in the byte bound, and the store's history grows by it", () => {
  const state = configMaps();
  const log = new RevisionLog();
  const added = log.commit(state, "default/a", "ADDED", object("a", "1"), undefined, 10);
  assert.ok(tombstoneBytes("default/a") > "default/a".length, "a tombstone carries a revision record besides its key");
  log.commit(state, "default/a", "DELETED", object("a", "1"), added, tombstoneBytes("default/a"));
  assert.equal(log.historyBytes, 10 + tombstoneBytes("default/a"));
});

test("compacting a deletion forgets its key only while the deletion is the key's newest version", () => {
  const state = configMaps();
  const log = new RevisionLog({ historyRevisionsMax: 2 });
  const a1 = log.commit(state, "default/a", "ADDED", object("a", "1"), undefined, 10);
  log.commit(state, "default/a", "DELETED", object("a", "1"), a1, 10);
  log.commit(state, "default/b", "ADDED", object("b", "1"), undefined, 10);
  assert.equal(state.objects.has("default/a"), true, "the deletion is not compacted yet: a watch may replay it");
  log.commit(state, "default/c", "ADDED", object("c", "1"), undefined, 10);
  assert.equal(log.compactedRevision, 2);
  assert.equal(state.objects.has("default/a"), false, "the compacted deletion leaves no entry behind");
  const x1 = log.commit(state, "default/x", "ADDED", object("x", "1"), undefined, 10);
  const x2 = log.commit(state, "default/x", "DELETED", object("x", "1"), x1, 10);
  const x3 = log.commit(state, "default/x", "ADDED", object("x", "2"), x2, 10);
  log.commit(state, "default/b", "MODIFIED", object("b", "2"), state.objects.get("default/b"), 10);
  log.commit(state, "default/b", "MODIFIED", object("b", "3"), state.objects.get("default/b"), 10);
  assert.ok(log.compactedRevision >= x2.event.revision);
  assert.equal(state.objects.get("default/x"), x3, "a key created again after its compacted deletion stays");
});

test("a log that compacted and then sliced its history still gives no snapshot, and endsWith only fits an uncompacted log", () => {
  const state = configMaps();
  const fresh = new RevisionLog();
  assert.equal(fresh.endsWith(0, undefined), true, "an empty log stands at revision 0");
  const first = fresh.commit(state, "default/a", "ADDED", object("a", "1"), undefined, 10);
  assert.equal(fresh.endsWith(1, first.event), true);
  assert.equal(fresh.endsWith(1, { ...first.event, revision: 7 }), false, "another write before revision 2");
  const bState = configMaps();
  const log = new RevisionLog({ historyRevisionsMax: 1 });
  // At the 1026th write the 1025th compaction slices the history array, and its head is back at 0.
  for (let i = 0; i < 1026; i++) log.commit(bState, "default/b", "ADDED", object("b", String(i)), bState.objects.get("default/b"), 10);
  assert.equal(log.writesAfter(log.revision), undefined, "a compacted log has no whole history to give");
  const newest = log.history(log.compactedRevision)[0];
  assert.equal(log.endsWith(log.revision, newest), false, "a compacted log is no base for a snapshot");
});

test("versionsOfKey walks one key's versions after one revision up to another, oldest first", () => {
  const state = configMaps();
  const log = new RevisionLog();
  let prev: Version | undefined;
  for (let i = 1; i <= 5; i++) {
    prev = log.commit(state, "default/a", i === 1 ? "ADDED" : "MODIFIED", object("a", String(i)), prev, 10);
    log.commit(state, "default/other", "ADDED", object("other", String(i)), state.objects.get("default/other"), 10);
  }
  // The key's versions are at revisions 1, 3, 5, 7 and 9.
  const revisions = (after: number, end: number) => versionsOfKey(state, "default/a", after, end).map((v) => v.event.revision);
  assert.deepEqual(revisions(0, 10), [1, 3, 5, 7, 9]);
  assert.deepEqual(revisions(3, 7), [5, 7]);
  assert.deepEqual(revisions(2, 6), [3, 5]);
  assert.deepEqual(revisions(9, 10), []);
  assert.deepEqual(versionsOfKey(state, "default/none", 0, 10), []);
});

test("a log refuses bounds that keep no revision or no byte, and a fractional revision bound", () => {
  assert.throws(() => new RevisionLog({ historyRevisionsMax: 0 }), /historyRevisionsMax >= 1/);
  assert.throws(() => new RevisionLog({ historyRevisionsMax: 1.5 }), /historyRevisionsMax is an integer/);
  assert.throws(() => new RevisionLog({ historyBytesMax: 0 }), /historyBytesMax > 0/);
  assert.equal(new RevisionLog({ historyRevisionsMax: 1, historyBytesMax: 1 }).historyRevisionsMax, 1, "the smallest bounds are allowed");
});

test("a frozen object is stored with its commit's revision, and a restored one that carries it is shared, not copied", () => {
  const state = configMaps();
  const log = new RevisionLog();
  // Frozen by the caller (as validating admission may leave it) and still carrying the version it was read at.
  const stale = deepFreeze({ ...object("a", "1"), metadata: { name: "a", namespace: "default", resourceVersion: "7" } });
  const first = log.commit(state, "default/a", "ADDED", stale, undefined, 10);
  assert.equal(first.event.object.metadata.resourceVersion, "1", "a frozen object's old resourceVersion is not kept");
  assert.equal(stale.metadata.resourceVersion, "7", "the caller's frozen object is left as it was");
  log.commit(state, "default/b", "ADDED", object("b", "1"), undefined, 10);
  const logged = log.writesAfter(0);
  assert.ok(logged !== undefined, "an uncompacted log gives its writes");
  const copyState = configMaps();
  const copy = new RevisionLog();
  copy.restoreWrites(logged.writes, () => copyState);
  const restored = copy.history(0);
  assert.deepEqual(restored, log.history(0));
  assert.ok(restored.every((event, i) => event.object === logged.writes[i]!.event.object), "a restored write shares the snapshot's object");
});

test("a log gives writes only from a revision it has, and endsWith fits only the revision it stands at", () => {
  const state = configMaps();
  const log = new RevisionLog();
  const first = log.commit(state, "default/a", "ADDED", object("a", "1"), undefined, 10);
  log.commit(state, "default/a", "MODIFIED", object("a", "2"), first, 10);
  assert.throws(() => log.writesAfter(-1), /a snapshot starts at a revision the store has/);
  assert.throws(() => log.writesAfter(3), /a snapshot starts at a revision the store has/);
  assert.equal(log.writesAfter(2)?.writes.length, 0, "nothing after the newest revision");
  assert.equal(log.endsWith(1, first.event), false, "a log at revision 2 does not stand where revision 1's did");
  assert.equal(log.endsWith(2, log.history(1)[0]), true);
});
