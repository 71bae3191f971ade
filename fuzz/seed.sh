#!/bin/sh
# Seed the corpora with our own fixtures (a leading options byte for inject_manifests).
set -eu
cd "$(dirname "$0")"
mkdir -p corpus/yaml_from_str corpus/yaml_fast corpus/yaml_go corpus/yaml_stream_go corpus/inject_manifests corpus/template_exec corpus/template_deep
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
# Deep-nesting seeds: two bytes of repeat count (little-endian), then
# open 0xFF middle 0xFF close [0xFF prefix 0xFF suffix]; the reproducers of issue 17 are in
# regressions/template_deep. No seed recurses through `template` calls: 100,000 of them take
# about a minute under ASan (the engine's tests cover that limit).
deep() { printf "$1" > "corpus/template_deep/$2"; }
deep '\320\007{{with .a}}{{range .}}\377{{.}}\377{{end}}{{end}}' with-range-2000
deep '\020\047(\3771\377)\377{{ \377 }}' parens-10000
deep '\350\003{{block "b" .}}\377z\377{{end}}' blocks-1000
