#!/usr/bin/env python3
"""Check a CycloneDX SBOM (JSON) of the outrigger binary against Cargo.lock.

    python3 tools/check_sbom.py SBOM.json [--package outrigger] [--target TRIPLE]
                                [--metadata METADATA.json] [--lock Cargo.lock]

The crates the binary depends on are those reached from the package through normal and build
dependencies (no dev-dependencies) in `cargo metadata --filter-platform TARGET` (default: the
host, as `rustc -vV` names it; cargo-cyclonedx describes the host by default too): what is
linked into the binary, and what runs to build it (build scripts' and proc-macros' crates).
Other platforms' crates (windows-sys and the like) are not part of this binary.

Fails (exit 1), naming the crates, when the SBOM
  * misses a crate the binary depends on, or lists one twice;
  * lists a crate the binary does not depend on, or one that is not in Cargo.lock;
  * gives a SHA-256 for a registry crate that differs from Cargo.lock's checksum;
  * does not describe the package itself as its subject (metadata.component).
Prints the counts when it passes.
"""

import argparse
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter


def host_target():
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("host: "):
            return line.split(": ", 1)[1].strip()
    sys.exit("rustc -vV names no host")


def load_metadata(path, target, manifest):
    if path:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    cmd = [os.environ.get("CARGO", "cargo"), "metadata", "--format-version", "1", "--locked",
           "--filter-platform", target, "--manifest-path", manifest]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def binary_dependencies(meta, package):
    """(name, version) of every crate `package` reaches through normal and build edges."""
    by_id = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    roots = [i for i in meta["workspace_members"] if by_id[i]["name"] == package]
    if len(roots) != 1:
        sys.exit(f"package {package!r} is not one workspace member: {roots}")
    seen, todo = set(), list(roots)
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            kinds = {k.get("kind") for k in dep.get("dep_kinds", [{"kind": None}])}
            if kinds & {None, "build"} and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    seen.discard(roots[0])
    return {(by_id[i]["name"], by_id[i]["version"]) for i in seen}


def sbom_components(bom):
    """(name, version, sha256 or None) of every component, nested ones included."""
    out = []

    def walk(components):
        for c in components or []:
            if c.get("type") == "library" or c.get("purl", "").startswith("pkg:cargo/"):
                sha = next((h["content"] for h in c.get("hashes", [])
                            if h.get("alg") == "SHA-256"), None)
                out.append((c["name"], c.get("version", ""), sha))
            walk(c.get("components"))

    walk(bom.get("components"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sbom")
    ap.add_argument("--package", default="outrigger")
    ap.add_argument("--target", help="platform the SBOM describes (default: the host)")
    ap.add_argument("--metadata", help="`cargo metadata` JSON (default: run it)")
    ap.add_argument("--lock", default="Cargo.lock")
    ap.add_argument("--manifest-path", default="Cargo.toml")
    args = ap.parse_args()

    with open(args.sbom, encoding="utf-8") as f:
        bom = json.load(f)
    with open(args.lock, "rb") as f:
        lock = tomllib.load(f)
    locked = {(p["name"], p["version"]): p.get("checksum") for p in lock["package"]}
    target = args.target or host_target()
    wanted = binary_dependencies(load_metadata(args.metadata, target, args.manifest_path),
                                 args.package)

    errors = []
    subject = bom.get("metadata", {}).get("component", {})
    if subject.get("name") != args.package:
        errors.append(f"the SBOM describes {subject.get('name')!r}, not {args.package!r}")
    listed = sbom_components(bom)
    counts = Counter((n, v) for n, v, _ in listed)
    for (n, v), k in sorted(counts.items()):
        if k > 1:
            errors.append(f"{n} {v} listed {k} times")
    have = set(counts)
    for n, v in sorted(wanted - have):
        errors.append(f"missing: {n} {v} (the binary depends on it)")
    for n, v in sorted(have - wanted):
        why = "not in Cargo.lock" if (n, v) not in locked else "the binary does not depend on it"
        errors.append(f"extra: {n} {v} ({why})")
    for n, v, sha in listed:
        checksum = locked.get((n, v))
        if sha and checksum and sha.lower() != checksum.lower():
            errors.append(f"{n} {v}: SHA-256 {sha} differs from Cargo.lock's {checksum}")
    not_locked = sorted(w for w in wanted if w not in locked)
    for n, v in not_locked:
        errors.append(f"{n} {v}: a dependency that Cargo.lock does not list")

    if errors:
        print(f"SBOM {args.sbom}: {len(errors)} problem(s)", file=sys.stderr)
        for e in errors:
            print(f"  {e}", file=sys.stderr)
        sys.exit(1)
    hashed = sum(1 for _, _, sha in listed if sha)
    print(f"SBOM {args.sbom}: lists all {len(wanted)} crates {args.package} depends on for "
          f"{target} (normal and build dependencies; Cargo.lock has {len(locked)} packages), "
          f"{hashed} with a SHA-256 equal to Cargo.lock's checksum")


if __name__ == "__main__":
    main()
