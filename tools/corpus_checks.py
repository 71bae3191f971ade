#!/usr/bin/env python3
"""Checks on every injected output of Istio's conformance corpus (kube-inject cases):

1. the output is the golden file byte for byte (after Istio's StripVersion: a status annotation's
   leading "version":"<hex>" blanked), as Istio's own test compares it;
2. the output validates with `kubernetes-validate --strict` (kinds without a schema, such as
   OpenShift's DeploymentConfig, are reported and skipped by the validator);
3. injecting the output again changes nothing (idempotency), compared as YAML trees with the
   status annotation's version blanked.

Usage: tools/corpus_checks.py OUTRIGGER_BINARY CORPUS_DIR
Last line: "N passed, M failed"; exit 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

# Goldens that are not fixed points of injection, in Istio too, with the reason. They are still
# run; a pass is reported so the entry can be removed.
NOT_FIXED_POINTS = {
    "56_merge-probers.yaml.injected":
        "the input is a pod injected by an older istiod (proxy under containers); the first "
        "injection keeps that stale proxy's args/env through the override step, re-injection "
        "refreshes it from the template",
    "69_sidecar-spire.yaml.injected":
        "the spire template adds a second istio-proxy under containers while the native proxy is "
        "an init container; re-injection moves it into initContainers next to the injected one",
}

# Cases whose golden pod the API server's validation refuses: outrigger writes them as istioctl
# does, with a warning naming the rule (checked here besides the golden).
REFUSED = {
    "69_sidecar-spire.yaml.injected":
        'spec.initContainers[1].name: Duplicate value: "istio-proxy" (validateInitContainers)',
}


def run(binary, corpus, case, input_path):
    settings = os.path.join(corpus, case["settings"])
    mesh = os.path.join(corpus, case["mesh_override"]) if case.get("mesh_override") else os.path.join(settings, "mesh.yaml")
    env = dict(os.environ)
    env.update(case.get("env") or {})
    cmd = [binary, "inject", "--injectConfigFile", os.path.join(settings, "config.yaml"),
           "--valuesFile", os.path.join(settings, "values.json"), "--meshConfigFile", mesh,
           "--native-sidecars", "true" if case.get("native_sidecars") else "false", "-f", input_path]
    # Text as written, byte for byte (no newline translation).
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode("utf-8"),
                                       r.stderr.decode("utf-8", "replace"))


# pilot/test/util/diff.go StripVersion
STATUS_VERSION = re.compile(r"sidecar.istio.io/status: '\{\"version\":\"([0-9a-f]+)\",")


def strip_version(text):
    return STATUS_VERSION.sub("sidecar.istio.io/status: '{\"version\":\"\",", text)


def first_line_diff(want, got):
    w, g = want.split("\n"), got.split("\n")
    for i in range(max(len(w), len(g))):
        a = w[i] if i < len(w) else None
        b = g[i] if i < len(g) else None
        if a != b:
            return "line %d: want %r, got %r" % (i + 1, a, b)
    return "same lines"


def docs(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def main():
    binary, corpus = sys.argv[1], sys.argv[2]
    cases = json.load(open(os.path.join(corpus, "cases.json")))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            if not c["kube_inject"] or c.get("expected_error"):
                continue
            name = c["name"].replace("/", "_")
            first = run(binary, corpus, c, os.path.join(corpus, c["input"]))
            problems = []
            refused = REFUSED.get(c["name"])
            if refused and refused not in first.stderr:
                problems.append("no warning naming the API server's rule %r" % refused)
            if first.returncode != 0:
                problems.append("injection failed: " + first.stderr.strip().splitlines()[-1:][0] if first.stderr.strip() else "injection failed")
            else:
                if c.get("expected"):
                    with open(os.path.join(corpus, c["expected"]), encoding="utf-8", newline="") as f:
                        golden = f.read()
                    if strip_version(first.stdout) != golden:
                        problems.append("output differs from the golden file byte for byte: "
                                        + first_line_diff(golden, strip_version(first.stdout)))
                out = os.path.join(tmp, name + ".yaml")
                with open(out, "w") as f:
                    f.write(first.stdout)
                v = subprocess.run(["kubernetes-validate", "--strict", "--quiet", "--no-warn", out],
                                   capture_output=True, text=True)
                if v.returncode != 0:
                    problems.append("kubernetes-validate: " + (v.stdout + v.stderr).strip()[:300])
                second = run(binary, corpus, c, out)
                if second.returncode != 0:
                    problems.append("re-injection failed: " + second.stderr.strip()[:200])
                elif docs(second.stdout) != docs(first.stdout):
                    problems.append("re-injection changed the output")
            exempt = NOT_FIXED_POINTS.get(c["name"])
            only_idempotency = problems and all(p.startswith("re-injection changed") for p in problems)
            if problems and exempt and only_idempotency:
                passed += 1
                print("PASS  %s (known: not a fixed point of injection: %s)" % (c["name"], exempt))
            elif problems:
                failed += 1
                print("FAIL  %s: %s" % (c["name"], "; ".join(problems)))
            else:
                passed += 1
                if exempt:
                    print("NOTE  %s is now a fixed point: remove it from NOT_FIXED_POINTS" % c["name"])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
