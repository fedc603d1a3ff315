#!/usr/bin/env bash
# Runs `redline action` with the inputs the composite action mapped onto REDLINE_*.
# Empty inputs are unset, so that the config file and the defaults apply.
set -uo pipefail
for name in REDLINE_PROVIDER REDLINE_MODEL REDLINE_API_KEY REDLINE_BASE_URL REDLINE_STRATEGY \
            REDLINE_FAIL_ON REDLINE_CONFIG REDLINE_MAX_COMMENTS REDLINE_MAX_COST REDLINE_MAX_TOKENS \
            REDLINE_TIMEOUT REDLINE_VERIFY REDLINE_VERIFY_MODEL; do
  if [ -z "${!name:-}" ]; then unset "$name"; fi
done
if [ -n "${REDLINE_API_KEY:-}" ]; then echo "::add-mask::${REDLINE_API_KEY}"; fi
exec "${REDLINE_BIN_DIR:?REDLINE_BIN_DIR is not set}/redline" action
