#!/bin/sh
# Seed the corpora with our own fixtures (a leading options byte for inject_manifests).
set -eu
cd "$(dirname "$0")"
mkdir -p corpus/yaml_from_str corpus/inject_manifests
for f in ../tests/fixtures/*.yaml ../tests/fixtures/bad/*.yaml ../examples/*.yaml; do
    case "$f" in *.injected.yaml) continue ;; esac
    n=$(basename "$f" .yaml)
    cp "$f" "corpus/yaml_from_str/$n"
    { printf '\000'; cat "$f"; } > "corpus/inject_manifests/$n-0"
    { printf '\001'; cat "$f"; } > "corpus/inject_manifests/$n-1"
done
