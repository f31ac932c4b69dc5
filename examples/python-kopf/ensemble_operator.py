"""A kopf operator for the Ensemble (academy.settle.dev/v1): one child ConfigMap per voice.

Two ways to handle a change of spec.voices, chosen by ENSEMBLE_MODE:

- "level" (the default, the fix): every handler lists the Ensemble's children and creates whichever are missing,
  so running it again (kopf retries a failed handler, and re-runs one a crash interrupted) converges.
- "delta" (the bug): the update handler creates the children numbered from the old count to the new one, from the
  diff kopf hands it. kopf re-runs a handler a crash interrupted with the same diff, so after a kill between two
  creates the rerun meets a child that is already there, fails with 409 AlreadyExists, and kopf retries it with the
  same diff until it gives up: the scale-up never finishes.
"""
import json
import os
import ssl
import urllib.error
import urllib.request

import kopf

GROUP, VERSION, PLURAL = "academy.settle.dev", "v1", "ensembles"
MODE = os.environ.get("ENSEMBLE_MODE", "level")
# kopf waits 60 s before retrying a failed handler by default; the drill waits seconds for a quiet world.
RETRY_BACKOFF_S = 1.0


class Api:
    """The few core/v1 ConfigMap calls the handlers make, over kopf's own connection settings (the kubeconfig)."""

    def __init__(self):
        self.credentials = None

    def call(self, method, path, body=None):
        assert self.credentials is not None, "kopf logged in before any handler runs"
        creds = self.credentials
        context = ssl.create_default_context()
        if creds.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif creds.ca_path:
            context.load_verify_locations(cafile=creds.ca_path)
        elif creds.ca_data:
            context.load_verify_locations(cadata=creds.ca_data.decode() if isinstance(creds.ca_data, bytes) else creds.ca_data)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if creds.token:
            headers["Authorization"] = f"{creds.scheme or 'Bearer'} {creds.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(creds.server.rstrip("/") + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return json.loads(response.read() or b"{}")


api = Api()


@kopf.on.login()
def login(**kwargs):
    credentials = kopf.login_with_kubeconfig(**kwargs)
    api.credentials = credentials
    return credentials


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.enabled = False


def child_name(name, index):
    return f"{name}-voice-{index}"


def create_child(namespace, name, uid, index):
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": child_name(name, index),
            "namespace": namespace,
            "labels": {"ensemble": name},
            "ownerReferences": [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "Ensemble", "name": name, "uid": uid, "controller": True}],
        },
        "data": {"voice": str(index)},
    }
    api.call("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)


def existing_children(namespace, name):
    listed = api.call("GET", f"/api/v1/namespaces/{namespace}/configmaps?labelSelector=ensemble%3D{name}")
    return {item["metadata"]["name"] for item in listed.get("items", [])}


def already_exists(error):
    """A 409 from a create that names the object as there already (reason AlreadyExists), not any other conflict."""
    if error.code != 409:
        return False
    try:
        return json.loads(error.read() or b"{}").get("reason") == "AlreadyExists"
    except ValueError:
        return False


def converge(namespace, name, uid, voices):
    """Creates every missing child; a child created meanwhile by anyone (409 AlreadyExists) is as good as one made here."""
    have = existing_children(namespace, name)
    for index in range(voices):
        if child_name(name, index) in have:
            continue
        try:
            create_child(namespace, name, uid, index)
        except urllib.error.HTTPError as error:
            if not already_exists(error):
                raise
    return {"readyVoices": voices}


@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=RETRY_BACKOFF_S)
@kopf.on.create(GROUP, VERSION, PLURAL, backoff=RETRY_BACKOFF_S)
def on_create(spec, name, namespace, uid, patch, **_):
    patch.status.update(converge(namespace, name, uid, spec.get("voices", 0)))


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.voices", backoff=RETRY_BACKOFF_S)
def on_voices(old, new, name, namespace, uid, patch, **_):
    if MODE == "delta":
        for index in range(old or 0, new or 0):
            create_child(namespace, name, uid, index)
        patch.status["readyVoices"] = new
        return
    patch.status.update(converge(namespace, name, uid, new or 0))
