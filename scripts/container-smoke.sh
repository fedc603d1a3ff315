#!/usr/bin/env bash
# Builds the container image and checks that it serves: `redline serve` starts as a
# non-root user with the TEST-ONLY App key, answers /healthz, and the image's own
# HEALTHCHECK command passes inside it.
#
#   scripts/container-smoke.sh [docker|podman]     (default: docker, else podman)
#
# Uses port 3000 of this machine (the port the HEALTHCHECK probes).
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${1:-$(command -v docker >/dev/null && echo docker || echo podman)}"
image=redline:smoke
name="redline-smoke-$$"

"$engine" build -t "$image" .
cleanup() { "$engine" rm -f "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"$engine" run -d --name "$name" -p 127.0.0.1:3000:3000 \
  -e GITHUB_APP_ID=1 \
  -e GITHUB_APP_PRIVATE_KEY="$(cat tests/fixtures/github/TEST-ONLY-app-private-key.pem)" \
  -e GITHUB_WEBHOOK_SECRET=smoke-test-secret \
  -e REDLINE_API_KEY=unused -e REDLINE_BASE_URL=http://127.0.0.1:9/v1 \
  "$image" >/dev/null

for _ in $(seq 1 60); do
  if curl --fail --silent --max-time 2 http://127.0.0.1:3000/healthz >/dev/null; then
    break
  fi
  sleep 1
done
curl --fail --silent --show-error --max-time 2 http://127.0.0.1:3000/healthz >/dev/null \
  || { "$engine" logs "$name"; echo "container-smoke: /healthz did not answer" >&2; exit 1; }
uid="$("$engine" exec "$name" id -u)"
[ "$uid" != 0 ] || { echo "container-smoke: runs as root" >&2; exit 1; }
"$engine" exec "$name" sh -c 'curl --fail --silent --max-time 4 http://127.0.0.1:3000/healthz' >/dev/null \
  || { echo "container-smoke: the HEALTHCHECK command fails inside the container" >&2; exit 1; }
"$engine" exec "$name" test -f /var/lib/redline/redline.db \
  || { echo "container-smoke: no SQLite queue on the volume" >&2; exit 1; }
echo "container-smoke: ok (uid $uid, /healthz 200, queue on /var/lib/redline)"
