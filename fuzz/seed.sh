#!/bin/sh
# Seed the corpora with our own fixtures (a leading options byte for inject_manifests).
set -eu
cd "$(dirname "$0")"
mkdir -p corpus/yaml_from_str corpus/yaml_fast corpus/yaml_go corpus/yaml_stream_go corpus/inject_manifests corpus/template_exec
# Golden outputs are seeds too: they drive the re-injection (strip and re-apply) paths.
for f in ../tests/fixtures/*.yaml ../tests/fixtures/bad/*.yaml ../tests/fixtures/yaml/*.yaml ../examples/*.yaml; do
    n=$(basename "$f" .yaml)
    cp "$f" "corpus/yaml_from_str/$n"
    cp "$f" "corpus/yaml_fast/$n"
    cp "$f" "corpus/yaml_go/$n"
    cp "$f" "corpus/yaml_stream_go/$n"
    { printf '\000'; cat "$f"; } > "corpus/inject_manifests/$n-0"
    { printf '\001'; cat "$f"; } > "corpus/inject_manifests/$n-1"
done
# The stream fixtures (no final newline, directives, `...`, CRLF, bad separators) for the split.
for f in ../tests/fixtures/streams/*.yaml; do
    cp "$f" "corpus/yaml_stream_go/$(basename "$f" .yaml)"
done
# Istio's injection templates and our default, as template seeds.
for f in ../crates/outrigger-inject/defaults/*.yaml; do
    cp "$f" "corpus/template_exec/$(basename "$f" .yaml)"
done
