#!/usr/bin/env bash
# The Python packages of examples/python-kopf (kopf, pytest; pinned in its requirements.txt, from PyPI), in a virtual
# environment under node_modules/.cache, so nothing is installed into the system's Python. Made again when the
# requirements change. `npm test` runs this before the tests (after `npm ci`, which empties node_modules), and
# test/examples/python-kopf.test.ts runs it too.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=node_modules/.cache/settle-kopf-venv
requirements=examples/python-kopf/requirements.txt
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$venv/requirements.txt"; then exit 0; fi

python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "settle tests: examples/python-kopf needs Python 3 with venv and pip (none found as $python)" >&2
  exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
cp "$requirements" "$venv/requirements.txt"
