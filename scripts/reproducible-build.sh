#!/usr/bin/env bash
# Is the release binary reproducible? Build `outrigger` (release profile, Cargo.lock's versions)
# twice, each time in a fresh, empty target directory, and compare the two binaries' sha256.
# Exit 0 when they are identical, 1 when they differ (the first differing bytes are shown).
#
#   scripts/reproducible-build.sh            # two full release builds: minutes each
#   KEEP=1 scripts/reproducible-build.sh     # keep the two target directories
#
# What would otherwise differ between two builds, and how it is pinned:
# * paths: the checkout, Cargo's home (registry sources) and the target directory end up in
#   panic messages and file!() strings. RUSTFLAGS maps them to /src, /cargo and /target
#   (--remap-path-prefix; the same flags for both builds), CFLAGS does the same for the C code
#   of ring and mimalloc (-ffile-prefix-map). The standard library's paths are already
#   /rustc/<commit>.
# * time: nothing in the binary embeds it (build.rs records the git commit, `$RUSTC --version`
#   and the target only); SOURCE_DATE_EPOCH (the commit's time) covers C compilers' __DATE__.
# * the git commit: OUTRIGGER_GIT_COMMIT is set once, for both builds.
# * the toolchain: the same rustc and C compiler for both (a verifier elsewhere needs the rustc
#   that `outrigger version -o json` names).
# [profile.release] already strips symbols and debug info; codegen is deterministic.
set -euo pipefail
cd "$(dirname "$0")/.."
src="$(pwd)"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
work="$(mktemp -d "${TMPDIR:-/tmp}/outrigger-repro.XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 1)}"
export OUTRIGGER_GIT_COMMIT="${OUTRIGGER_GIT_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}"
remap="--remap-path-prefix=$src=/src --remap-path-prefix=$cargo_home=/cargo"
remap+=" --remap-path-prefix=$work/a=/target --remap-path-prefix=$work/b=/target"
export RUSTFLAGS="${RUSTFLAGS:-} $remap"
prefix_map="-ffile-prefix-map=$src=/src -ffile-prefix-map=$cargo_home=/cargo"
prefix_map+=" -ffile-prefix-map=$work/a=/target -ffile-prefix-map=$work/b=/target"
export CFLAGS="${CFLAGS:-} $prefix_map"
unset CARGO_BUILD_TARGET_DIR

echo "rustc: $(rustc --version); commit $OUTRIGGER_GIT_COMMIT; SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
declare -A sum
for t in a b; do
  start=$(date +%s)
  CARGO_TARGET_DIR="$work/$t" cargo build --release --locked -p outrigger --quiet
  sum[$t]=$(sha256sum "$work/$t/release/outrigger" | cut -d' ' -f1)
  echo "build $t: ${sum[$t]}  ($(stat -c %s "$work/$t/release/outrigger") bytes, $(( $(date +%s) - start )) s)"
done
if [ "${sum[a]}" = "${sum[b]}" ]; then
  echo "reproducible: both builds are sha256 ${sum[a]}"
  exit 0
fi
echo "NOT reproducible: the builds differ" >&2
cmp "$work/a/release/outrigger" "$work/b/release/outrigger" | head -1 >&2 || true
exit 1
