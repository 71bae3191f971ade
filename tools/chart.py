#!/usr/bin/env python3
"""Helm's Go SDK (PyPI helm-python-sdk) for the chart tests, offline.

  chart.py lint CHART                 lint --strict; prints the result as JSON
  chart.py render CHART VALUES_JSON [NAME NAMESPACE]
                                      render as `helm template NAME CHART -n NAMESPACE` would
                                      (default: release `outrigger` in namespace `outrigger`);
                                      prints the manifests as one YAML stream, NOTES.txt left
                                      out; a refusal (schema or `fail`) exits 1 with Helm's text
  chart.py validate SCHEMA_DIR FILE   validates the custom resources of a YAML stream against
                                      the JSON schemas in SCHEMA_DIR (<group>_<kind>.json);
                                      prints one line per object, exits 1 if any is invalid
"""
import json
import sys


def lint(chart):
    import helm_python

    print(json.dumps(helm_python.lint(chart, strict=True), indent=1))


def render(chart, values, name="outrigger", namespace="outrigger"):
    import helm_python

    try:
        with helm_python.Chart.load(chart) as c:
            out = c.render(json.loads(values), name=name, namespace=namespace, is_install=True)
    except helm_python.HelmError as e:
        print(str(e), file=sys.stderr)
        sys.exit(1)
    for path, text in sorted(out.items()):
        if text.strip() and not path.endswith("NOTES.txt"):
            print(f"---\n# Source: {path}\n{text.strip()}")


def validate(schema_dir, path):
    import os

    import jsonschema
    import yaml

    bad = 0
    with open(path) as f:
        for doc in yaml.safe_load_all(f):
            if not doc:
                continue
            group = doc["apiVersion"].split("/")[0]
            schema_path = os.path.join(schema_dir, f"{group}_{doc['kind']}.json")
            if "/" not in doc["apiVersion"] or not os.path.exists(schema_path):
                continue
            with open(schema_path) as s:
                schema = json.load(s)
            errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=str)
            name = f"{doc['kind']} {doc['metadata']['name']}"
            for e in errors:
                bad += 1
                print(f"{name}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
            if not errors:
                print(f"{name}: valid")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"lint": lint, "render": render, "validate": validate}[cmd](*args)
