#!/usr/bin/env python3
"""The Ensemble operator in Python, on Debian's python3-kubernetes client: a watch on the Ensembles keeps each
Ensemble's child ConfigMaps (alpha-voice-0 .. alpha-voice-N-1) in step with spec.voices.

  python3 operator.py          level-triggered: on every event, create whichever children are missing (the fix)
  python3 operator.py --delta  edge-triggered: create new - old children, "old" being the voices last seen in
                               memory (the bug: a restart forgets the scale-up it was in the middle of)

It needs only KUBECONFIG; settle drill kills its whole process group.
"""
import json
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NAMESPACE = "academy-lab"
GROUP, VERSION, PLURAL = "academy.settle.dev", "v1", "ensembles"
DELTA = "--delta" in sys.argv
SLOW_S = next((float(a.split("=", 1)[1]) / 1000 for a in sys.argv if a.startswith("--slow-reconcile-ms=")), 0.0)


def log(msg, **fields):
    print(json.dumps({"msg": msg, **fields}), file=sys.stderr, flush=True)


config.load_kube_config()
core = client.CoreV1Api()
custom = client.CustomObjectsApi()
last_voices = {}  # in memory only: a restart forgets it, which is the whole point


def create_child(owner, index):
    name = owner["metadata"]["name"]
    body = {
        "metadata": {
            "name": f"{name}-voice-{index}",
            "namespace": NAMESPACE,
            "labels": {"ensemble": name},
            "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "Ensemble", "name": name,
                                 "uid": owner["metadata"]["uid"], "controller": True}],
        },
        "data": {"voice": str(index)},
    }
    try:
        core.create_namespaced_config_map(NAMESPACE, body)
    except ApiException as error:
        if error.status != 409:
            raise
    time.sleep(SLOW_S)


def children(name):
    items = core.list_namespaced_config_map(NAMESPACE, label_selector=f"ensemble={name}").items
    return {item.metadata.name for item in items}


def set_status(name):
    ready = len(children(name))
    custom.patch_namespaced_custom_object_status(GROUP, VERSION, NAMESPACE, PLURAL, name, {"status": {"readyVoices": ready}})


def reconcile_level(ensemble):
    name, voices = ensemble["metadata"]["name"], ensemble["spec"]["voices"]
    existing = children(name)
    for i in range(voices):
        if f"{name}-voice-{i}" not in existing:
            create_child(ensemble, i)
    set_status(name)


def handle_delta(event_type, ensemble):
    name, voices = ensemble["metadata"]["name"], ensemble["spec"]["voices"]
    before = last_voices.get(name, voices)
    last_voices[name] = voices
    if event_type == "ADDED" or before == voices:
        return
    for i in range(before, voices):
        create_child(ensemble, i)
    set_status(name)


def main():
    log("started", mode="delta" if DELTA else "level")
    while True:
        # The stream lists first (ADDED events) and then watches; a watch the server ends is simply opened again.
        for event in watch.Watch().stream(custom.list_namespaced_custom_object, GROUP, VERSION, NAMESPACE, PLURAL):
            ensemble = event["object"]
            log("event", type=event["type"], name=ensemble["metadata"]["name"], voices=ensemble["spec"]["voices"])
            if DELTA:
                handle_delta(event["type"], ensemble)
            else:
                reconcile_level(ensemble)
        log("watch ended, watching again")


if __name__ == "__main__":
    main()
