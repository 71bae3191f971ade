#!/usr/bin/env bash
# drift --kube at scale: 10,000 realistic pods (3 application containers, env, probes, 4 KB of
# managedFields) read through the tests' fake API server, 500 a page, by the release binary.
# Prints the drift process' own wall and CPU time and peak resident set (/usr/bin/time) and the
# load average; the test checks that every pod is current. Target (issue 20): under 5 s and
# 200 MiB on 2 cores. The library's benchmark of the same work is `cargo bench --bench drift`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p outrigger
OUTRIGGER_SCALE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/outrigger" \
  cargo test -p outrigger --test drift_kube -- --ignored --nocapture scale_ten_thousand_pods
