#!/usr/bin/env bash
# The Ensemble operator in bash + kubectl: `kubectl get --watch` streams every change of the Ensembles, and the
# loop below keeps each Ensemble's child ConfigMaps (alpha-voice-0 .. alpha-voice-N-1) in step with spec.voices.
#   bash operator.sh          level-triggered: on every event, create whichever children are missing (the fix)
#   bash operator.sh --delta  edge-triggered: create new - old children, "old" being the voices it last saw in
#                             memory (the bug: a restart forgets the scale-up it was in the middle of)
# It needs only KUBECONFIG (and KUBECTL, when kubectl is not on PATH). settle drill kills its whole process group.
set -uo pipefail
namespace=academy-lab
mode=level
[ "${1:-}" = "--delta" ] && mode=delta
kubectl=${KUBECTL:-kubectl}
[ -x "$kubectl" ] || kubectl=kubectl
declare -A last_voices

log() { printf '{"msg":"%s"%s}\n' "$1" "${2:+,$2}" >&2; }

create_child() { # name index owner-uid
  "$kubectl" create -f - >/dev/null 2>&1 <<YAML || true
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1-voice-$2
  namespace: $namespace
  labels: { ensemble: $1 }
  ownerReferences: [{ apiVersion: academy.settle.dev/v1, kind: Ensemble, name: $1, uid: $3, controller: true }]
data: { voice: "$2" }
YAML
}

set_status() { # name
  local ready
  ready=$("$kubectl" get configmaps -n "$namespace" -l "ensemble=$1" -o name | wc -l)
  "$kubectl" patch ensembles.academy.settle.dev "$1" -n "$namespace" --subresource=status --type=merge \
    -p "{\"status\":{\"readyVoices\":$ready}}" >/dev/null
}

reconcile_level() { # name voices uid
  local existing i
  existing=$("$kubectl" get configmaps -n "$namespace" -l "ensemble=$1" -o name)
  for ((i = 0; i < $2; i++)); do
    grep -qx "configmap/$1-voice-$i" <<<"$existing" || create_child "$1" "$i" "$3"
  done
  set_status "$1"
}

handle_delta() { # event name voices uid
  local from=${last_voices[$2]:-$3} i
  last_voices[$2]=$3
  [ "$1" = ADDED ] && return
  for ((i = from; i < $3; i++)); do create_child "$2" "$i" "$4"; done
  [ "$from" != "$3" ] && set_status "$2"
}

log started "\"mode\":\"$mode\""
# A watch the server ends (timeout, restart) is opened again: kubectl lists first, so nothing is missed.
while true; do
"$kubectl" get ensembles.academy.settle.dev -n "$namespace" --watch --output-watch-events \
  -o jsonpath='{.type} {.object.metadata.name} {.object.spec.voices} {.object.metadata.uid}{"\n"}' |
  while read -r event name voices uid; do
    [ -z "$name" ] && continue
    log event "\"type\":\"$event\",\"name\":\"$name\",\"voices\":$voices"
    if [ "$mode" = delta ]; then handle_delta "$event" "$name" "$voices" "$uid"; else reconcile_level "$name" "$voices" "$uid"; fi
  done
log "watch ended, watching again"
sleep 0.2
done
