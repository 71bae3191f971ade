#!/usr/bin/env bash
# The long differential run of the YAML reader against Go's sigs.k8s.io/yaml (the Go oracle,
# tests/go-oracle): a million generated inputs by default.
#   scripts/yaml-differential.sh                 # 1,000,000 inputs, the fixed long-run seed
#   OUTRIGGER_DIFF_ITERATIONS=5000000 OUTRIGGER_DIFF_SEED=0xabcdef scripts/yaml-differential.sh
# Needs Go and the Debian packages listed in tests/go-oracle/build.sh. Prints the agreement
# counts and fails on any disagreement (each one listed with Go's and our answer).
set -euo pipefail
cd "$(dirname "$0")/.."
export OUTRIGGER_REQUIRE_GO_ORACLE=1
export OUTRIGGER_DIFF_ITERATIONS="${OUTRIGGER_DIFF_ITERATIONS:-1000000}"
exec cargo test -p outrigger-inject --test go_yaml -- --ignored --exact a_million_random_inputs
