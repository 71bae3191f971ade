# Shared by the benchmark scripts that start `outrigger serve`; sourced, not run.

# wait_listening PID LOG [TRIES] [STEP]: return once LOG says the webhook listens; exit 1 with
# the log when the server exits first or does not listen within TRIES x STEP seconds.
wait_listening() {
  local pid=$1 log=$2 tries=${3:-400} step=${4:-0.05}
  for _ in $(seq 1 "$tries"); do
    grep -q "webhook listening" "$log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep "$step"
  done
  echo "the server did not listen within $tries x ${step}s" >&2
  cat "$log" >&2
  exit 1
}

# corpus_config DIR WORK: set the array `cfg` to serve's configuration flags and `settings` to
# what they name: DIR's config.yaml, values.json and mesh.yaml (a corpus settings directory)
# when DIR has them, else none (serve then uses the embedded default: a path given that does
# not exist stops it at start-up). The flags' former names are kept, which the baseline
# binaries these scripts compare against also take.
corpus_config() {
  local dir=$1 work=$2
  if [ -f "$dir/config.yaml" ]; then
    cfg=(--injectConfig "$dir/config.yaml" --injectValues "$dir/values.json" --meshConfig "$dir/mesh.yaml")
    settings="Istio chart defaults ($dir)"
  else
    cfg=()
    settings="embedded default"
  fi
}
