#!/usr/bin/env python3
"""A mirror operator in Python (Debian's python3-kubernetes, a watch stream): for every ConfigMap labelled
mirror=source it keeps a ConfigMap `<name>-mirror` with the same data and the source's uid in the annotation
`mirror.settle.dev/source-uid`. Objects are keyed by name, as most operators key them.

Both forms list the sources at start and bring every mirror level with them, then watch from the list's revision
(as an informer does), and retry a failed write. They differ in how they handle a watch event:

  python3 operator.py          level: compare the mirror with the source (uid and data) and rewrite it when they
                               differ; on a delete, remove the mirror of that uid (the fix)
  python3 operator.py --edge   edge: ADDED creates the mirror unless one exists ("a replayed ADDED, done already"),
                               MODIFIED copies the data, DELETED removes the mirror (the bug)

The edge form is right for every event it is shown, and survives a restart (it resyncs) and a closed watch (it
resumes). It is wrong for the events it is not shown: a watcher that falls behind sees a source deleted and created
again under the same name as one MODIFIED after a relist, or as the create alone, and keeps the old source's mirror.
It needs only KUBECONFIG.
"""
import json
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NAMESPACE = "mirror-lab"
UID_ANNOTATION = "mirror.settle.dev/source-uid"
SELECTOR = "mirror=source"
EDGE = "--edge" in sys.argv


def log(msg, **fields):
    print(json.dumps({"msg": msg, **fields}), file=sys.stderr, flush=True)


config.load_kube_config()
core = client.CoreV1Api()


def mirror_name(source):
    return f"{source.metadata.name}-mirror"


def read_mirror(source):
    try:
        return core.read_namespaced_config_map(mirror_name(source), NAMESPACE)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def mirror_body(source):
    return {
        "metadata": {"name": mirror_name(source), "namespace": NAMESPACE, "annotations": {UID_ANNOTATION: source.metadata.uid}},
        "data": dict(source.data or {}),
    }


def reason(error):
    try:
        return json.loads(error.body or "{}").get("reason")
    except ValueError:
        return None


def create_mirror(source):
    try:
        core.create_namespaced_config_map(NAMESPACE, mirror_body(source))
    except ApiException as error:
        # One that exists already is done; any other conflict is retried.
        if reason(error) != "AlreadyExists":
            raise


def delete_mirror(source, uid=None):
    """Deletes the mirror; with `uid`, only if it mirrors that source (a precondition would do the same)."""
    mirror = read_mirror(source)
    if mirror is None or (uid is not None and (mirror.metadata.annotations or {}).get(UID_ANNOTATION) != uid):
        return
    try:
        core.delete_namespaced_config_map(mirror_name(source), NAMESPACE)
    except ApiException as error:
        if error.status != 404:
            raise


def reconcile_level(event_type, source):
    if event_type == "DELETED":
        delete_mirror(source, uid=source.metadata.uid)
        return
    mirror = read_mirror(source)
    if mirror is None:
        create_mirror(source)
        return
    uid = (mirror.metadata.annotations or {}).get(UID_ANNOTATION)
    if uid != source.metadata.uid or (mirror.data or {}) != (source.data or {}):
        core.replace_namespaced_config_map(mirror_name(source), NAMESPACE, {**mirror_body(source), "metadata": {**mirror_body(source)["metadata"], "resourceVersion": mirror.metadata.resource_version}})


def handle_edge(event_type, source):
    if event_type == "ADDED":
        if read_mirror(source) is None:
            create_mirror(source)
    elif event_type == "MODIFIED":
        core.patch_namespaced_config_map(mirror_name(source), NAMESPACE, {"data": dict(source.data or {})})
    elif event_type == "DELETED":
        delete_mirror(source)


def with_retries(handler, event_type, source):
    """Runs a handler as a work queue would: a failed write (an error status, a lost response) is retried."""
    for attempt in range(6):
        try:
            handler(event_type, source)
            return
        except Exception as error:  # noqa: BLE001 - any failure of a request is retried, then given up on
            log("write failed", error=type(error).__name__, status=getattr(error, "status", None), attempt=attempt)
            time.sleep(0.2 * (attempt + 1))


def resync():
    """Lists the sources and brings each mirror level with it; returns the list's resourceVersion to watch from."""
    sources = core.list_namespaced_config_map(NAMESPACE, label_selector=SELECTOR)
    for source in sources.items:
        with_retries(reconcile_level, "ADDED", source)
    return sources.metadata.resource_version


def main():
    log("started", mode="edge" if EDGE else "level")
    handler = handle_edge if EDGE else reconcile_level
    resource_version = None
    while True:
        # As an informer does: list once (and after a 410), then watch from the list's revision, resuming a watch
        # the server ends from the last event seen, so that no event is missed.
        if resource_version is None:
            resource_version = resync()
        stream = watch.Watch()
        try:
            for event in stream.stream(core.list_namespaced_config_map, NAMESPACE, label_selector=SELECTOR, resource_version=resource_version):
                source = event["object"]
                log("event", type=event["type"], name=source.metadata.name, uid=source.metadata.uid)
                with_retries(handler, event["type"], source)
            resource_version = stream.resource_version
        except ApiException as error:
            if error.status != 410:
                raise
            resource_version = None
        log("watch ended, watching again")


if __name__ == "__main__":
    main()
