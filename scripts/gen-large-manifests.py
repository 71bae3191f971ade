#!/usr/bin/env python3
"""Generate the inputs of the README's `outrigger inject` memory figures.

Usage: scripts/gen-large-manifests.py DIR
Writes DIR/deployments.yaml (22,550 Deployments, about 10 MB) and DIR/annotations.yaml (one Pod
with 1,000,000 annotation keys, about 15 MB). Measure with
`/usr/bin/time -v target/release/outrigger inject -f DIR/deployments.yaml > /dev/null`
("Maximum resident set size").
"""
import os
import sys


def deployments(n, path):
    with open(path, "w") as f:
        for i in range(n):
            f.write(f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{i % 50}
  labels:
    app: app-{i}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: app-{i}
  template:
    metadata:
      labels:
        app: app-{i}
        version: v1
    spec:
      containers:
      - name: app
        image: registry.example.com/app:{i}
        ports:
        - containerPort: 8080
        env:
        - name: MODE
          value: production
---
""")


def annotations(n, path):
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\n  annotations:\n")
        for i in range(n):
            f.write(f"    k{i}: v\n")
        f.write("spec:\n  containers:\n  - name: app\n    image: app\n")


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    deployments(22550, os.path.join(out, "deployments.yaml"))
    annotations(1000000, os.path.join(out, "annotations.yaml"))
