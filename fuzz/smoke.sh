#!/usr/bin/env bash
# CI smoke run of the fuzz targets: build every target (nightly, ASan), replay the kept
# reproducers of past crashes, then fuzz each target briefly from our fixtures as seeds.
# A crash, a leak, a disagreement with Go (yaml_go) or a build failure fails the run.
#   FUZZ_SMOKE_SECONDS  seconds of fuzzing per target (default 15)
set -euo pipefail
cd "$(dirname "$0")"
secs="${FUZZ_SMOKE_SECONDS:-15}"
command -v cargo-fuzz >/dev/null || { echo "ERROR: cargo-fuzz is required (cargo install cargo-fuzz)" >&2; exit 1; }
rustup run nightly rustc --version >/dev/null || { echo "ERROR: a nightly toolchain is required" >&2; exit 1; }

cargo +nightly fuzz build
targets=$(cargo +nightly fuzz list)
./seed.sh >/dev/null

for t in $targets; do
  if [ -d "regressions/$t" ]; then
    echo "== $t: replaying regressions/$t"
    cargo +nightly fuzz run "$t" regressions/"$t"/* -- -runs=1 >/dev/null 2>"/tmp/fuzz-smoke-$t.log" \
      || { cat "/tmp/fuzz-smoke-$t.log" >&2; exit 1; }
  fi
done

for t in $targets; do
  opts=(-max_total_time="$secs" -max_len=4096)
  case "$t" in
    yaml_*|inject_manifests) opts+=(-dict=yaml.dict) ;;
  esac
  echo "== $t: fuzzing ${secs}s"
  # A fresh corpus dir per run keeps the checked-in seeds unchanged.
  work="$(mktemp -d)"
  cp -r "corpus/$t/." "$work/"
  if ! cargo +nightly fuzz run "$t" "$work" -- "${opts[@]}" >"/tmp/fuzz-smoke-$t.log" 2>&1; then
    tail -60 "/tmp/fuzz-smoke-$t.log" >&2
    rm -rf "$work"
    exit 1
  fi
  grep -E "^Done [0-9]+ runs" "/tmp/fuzz-smoke-$t.log" | sed "s/^/   $t: /" || true
  rm -rf "$work"
done
echo "fuzz smoke: $(echo $targets | wc -w) targets built, regressions replayed, ${secs}s each, no crash"
