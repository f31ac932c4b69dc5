"""The kopf operator against `settle serve`, run in process by kopf's KopfRunner as kopf's docs show."""
import os
import time

import pytest
from kopf.testing import KopfRunner

from conftest import EXAMPLE

WAIT_S = 30
NAMESPACE = "academy-lab"


def children(cluster, name):
    listed = cluster.call("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?labelSelector=ensemble%3D{name}")
    return sorted(item["metadata"]["name"] for item in listed["items"])


def wait_until(check, what):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"not within {WAIT_S} s: {what}")


def ensemble(name, voices):
    return {"apiVersion": "academy.settle.dev/v1", "kind": "Ensemble", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"voices": voices}}


@pytest.fixture
def level_mode(monkeypatch):
    monkeypatch.setenv("ENSEMBLE_MODE", "level")


def run_operator():
    return KopfRunner(["run", "--standalone", "--namespace", NAMESPACE, "--verbose", str(EXAMPLE / "ensemble_operator.py")])


def test_creates_a_child_per_voice_and_follows_a_scale_up(settle_server, level_mode):
    with run_operator() as runner:
        settle_server.call("POST", f"/apis/academy.settle.dev/v1/namespaces/{NAMESPACE}/ensembles", ensemble("beta", 2))
        wait_until(lambda: children(settle_server, "beta") == ["beta-voice-0", "beta-voice-1"], "beta's 2 children")
        settle_server.call("PATCH", f"/apis/academy.settle.dev/v1/namespaces/{NAMESPACE}/ensembles/beta", {"spec": {"voices": 4}}, "application/merge-patch+json")
        wait_until(lambda: len(children(settle_server, "beta")) == 4, "beta's 4 children")
        wait_until(
            lambda: settle_server.call("GET", f"/apis/academy.settle.dev/v1/namespaces/{NAMESPACE}/ensembles/beta").get("status", {}).get("readyVoices") == 4,
            "beta's status.readyVoices 4",
        )
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None
    assert "Handler 'on_voices/spec.voices' succeeded" in runner.output


def test_resumes_an_existing_ensemble_and_creates_what_is_missing(settle_server, level_mode):
    settle_server.call("POST", f"/apis/academy.settle.dev/v1/namespaces/{NAMESPACE}/ensembles", ensemble("gamma", 3))
    # A child made before the operator starts, as a previous run of it would have left it.
    settle_server.call("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": "gamma-voice-1", "labels": {"ensemble": "gamma"}}})
    with run_operator() as runner:
        wait_until(lambda: children(settle_server, "gamma") == ["gamma-voice-0", "gamma-voice-1", "gamma-voice-2"], "gamma's 3 children")
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None


def test_the_schema_and_cel_rule_refuse_a_shrink(settle_server):
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as refused:
        settle_server.call("PATCH", f"/apis/academy.settle.dev/v1/namespaces/{NAMESPACE}/ensembles/alpha", {"spec": {"voices": 1}}, "application/merge-patch+json")
    assert refused.value.code == 422
    assert "an ensemble only grows" in refused.value.read().decode()
