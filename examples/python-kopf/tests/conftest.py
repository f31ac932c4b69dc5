"""Fixtures: a `settle serve` for the session, with the Ensemble world loaded, and its kubeconfig in KUBECONFIG.

settle is found as SETTLE (a command, e.g. "npx settle"), else this repository's bin/settle.js run by node.
"""
import json
import os
import shlex
import ssl
import subprocess
import tempfile
import urllib.request
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent
REPO = EXAMPLE.parent.parent
START_TIMEOUT_S = 60


def settle_command():
    given = os.environ.get("SETTLE")
    if given:
        return shlex.split(given)
    return ["node", str(REPO / "bin" / "settle.js")]


class Cluster:
    """The server: its kubeconfig path, and plain HTTP requests with its token for the tests' own reads and writes."""

    def __init__(self, kubeconfig, url, token):
        self.kubeconfig = kubeconfig
        self.url = url
        self.token = token

    def call(self, method, path, body=None, content_type="application/json"):
        request = urllib.request.Request(
            self.url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type, "Accept": "application/json"},
        )
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return json.loads(response.read() or b"{}")


@pytest.fixture(scope="session")
def settle_server():
    workdir = tempfile.mkdtemp(prefix="settle-kopf-")
    kubeconfig = os.path.join(workdir, "kubeconfig")
    process = subprocess.Popen(
        settle_command() + ["serve", "--port", "0", "--kubeconfig-out", kubeconfig, "--setup", str(EXAMPLE / "scenario.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    line = process.stdout.readline()
    if "listening on" not in line:
        process.kill()
        pytest.fail(f"settle serve did not start: {line}{process.stdout.read()}")
    with open(kubeconfig) as handle:
        text = handle.read()
    server = next(part.split(": ", 1)[1] for part in text.splitlines() if part.strip().startswith("server:"))
    token = next(part.split(": ", 1)[1] for part in text.splitlines() if part.strip().startswith("token:"))
    previous = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = kubeconfig
    yield Cluster(kubeconfig, server.strip(), token.strip())
    if previous is None:
        os.environ.pop("KUBECONFIG", None)
    else:
        os.environ["KUBECONFIG"] = previous
    process.terminate()
    process.wait(timeout=30)
