#!/usr/bin/env python3
"""Turn the Go/protobuf type facts in ../shared/schema into the compact tables outrigger embeds.

Usage: python3 tools/gen_schema_tables.py [SCHEMA_DIR] [--out DIR]
Writes crates/outrigger-go/data/{k8s-types,proto-types}.json (or into DIR). Re-run when the
schema facts change; the test crates/outrigger-go/tests/schema_tables.rs checks that running it
gives the committed tables.
"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
out = os.path.join(here, "..", "crates", "outrigger-go", "data")
if "--out" in args:
    i = args.index("--out")
    out = args[i + 1]
    del args[i:i + 2]
src = args[0] if args else os.path.join(here, "..", "..", "shared", "schema")

k = json.load(open(os.path.join(src, "k8s-go-types.json")))
structs = {}
for name, s in sorted(k["structs"].items()):
    fields = []
    for f in s["fields"]:
        if not f.get("exported", True):
            continue
        o = {"go": f["go_name"], "json": f["json_name"], "kind": f["kind"]}
        for a, b in (("elem", "elem"), ("elem_kind", "elem_kind"), ("type_ref", "type_ref"),
                     ("key", "key"), ("key_kind", "key_kind"), ("named_type", "named_type")):
            if f.get(a) is not None:
                o[b] = f[a]
        if f.get("omitempty"):
            o["omitempty"] = True
        if f.get("omitzero"):
            o["omitzero"] = True
        if f.get("inline"):
            o["inline"] = True
        if f.get("embedded"):
            o["embedded"] = True
        tags = f.get("other_tags") or {}
        if "patchStrategy" in tags:
            o["patch_strategy"] = tags["patchStrategy"]
        if "patchMergeKey" in tags:
            o["patch_merge_key"] = tags["patchMergeKey"]
        fields.append(o)
    structs[name] = {"go_name": s["go_name"], "fields": fields}
# OpenShift's DeploymentConfig (kube-inject supports it) is not in the Kubernetes facts: merge the
# hand-transcribed supplement.
extra = json.load(open(os.path.join(here, "openshift-types.json")))
structs.update(extra["structs"])
named = {n: {"kind": v["kind"], "underlying": v.get("underlying_canonical", v.get("underlying"))}
         for n, v in sorted(k["named_types"].items())}
json.dump({"structs": structs, "named_types": named}, open(os.path.join(out, "k8s-types.json"), "w"),
          separators=(",", ":"), sort_keys=True)

p = json.load(open(os.path.join(src, "istio-proto-types.json")))
messages = {}
for name, m in sorted(p["messages"].items()):
    fields = []
    for f in m["fields"]:
        o = {"proto": f["proto_name"], "json": f["json_name"], "go": f["go_name"], "number": f["number"],
             "type": f["type"], "type_kind": f["type_kind"], "getter": f["getter"]}
        if f.get("repeated"):
            o["repeated"] = True
        if f.get("oneof"):
            o["oneof"] = f["oneof"]
            o["oneof_go_field"] = f.get("oneof_go_field")
        if f.get("map_key"):
            o["map_key"] = f["map_key"]
            o["map_value"] = f["map_value"]
            o["map_value_kind"] = f.get("map_value_kind")
        if f.get("well_known"):
            o["well_known"] = True
        fields.append(o)
    messages[name] = {"go_type": m.get("go_type"), "well_known": bool(m.get("well_known")), "fields": fields,
                      "oneofs": [{"name": o["name"], "go_field": o["go_field"], "fields": o["fields"]} for o in m.get("oneofs", [])],
                      "go_struct_field_order": m.get("go_struct_field_order", [])}
enums = {name: {"go_type": e.get("go_type"), "values": [{"name": v["name"], "number": v["number"]} for v in e["values"]]}
         for name, e in sorted(p["enums"].items())}
json.dump({"messages": messages, "enums": enums}, open(os.path.join(out, "proto-types.json"), "w"),
          separators=(",", ":"), sort_keys=True)
print("wrote", out)
