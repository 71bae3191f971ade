//! Tests of the mesh module, including the corpus conformance checks (skipped when the corpus
//! is absent).

use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::testing::{corpus, yaml, yaml_docs};

/// Results travel through the decoder's recursion: the error stays at most a `String` wide
/// (the wide decoding errors are boxed in `MeshError::Decode`).
#[test]
fn mesh_errors_stay_one_string_wide() {
    assert!(std::mem::size_of::<MeshError>() <= std::mem::size_of::<String>() + 8);
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

fn apply_file(p: &Path) -> Value {
    let via_test_yaml = apply_mesh_config_value(&yaml(&read(p)), &default_mesh_config())
        .unwrap_or_else(|e| panic!("apply {}: {e}", p.display()));
    let via_crate_yaml = apply_mesh_config(&read(p), &default_mesh_config())
        .unwrap_or_else(|e| panic!("apply {} via crate::yaml: {e}", p.display()));
    assert_eq!(via_test_yaml, via_crate_yaml, "{}", p.display());
    via_crate_yaml
}

fn canonical_file(p: &Path) -> Value {
    to_canonical(MESH_CONFIG, &yaml(&read(p)))
        .unwrap_or_else(|e| panic!("canonical {}: {e}", p.display()))
}

fn assert_merge_reproduces(raw: &Path, merged: &Path) {
    let got = apply_file(raw);
    let want = canonical_file(merged);
    assert_eq!(
        got,
        want,
        "{} over defaults != {}",
        raw.display(),
        merged.display()
    );
    // ApplyMeshConfig of the merged file is idempotent.
    let again = apply_file(merged);
    assert_eq!(again, want, "re-applying {}", merged.display());
    let twice = apply_mesh_config_value(&yaml(&read(merged)), &got).expect("apply twice");
    assert_eq!(twice, want, "applying {} twice", merged.display());
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn settings_mesh_yaml_over_defaults_reproduces_merged() {
    let Some(root) = corpus() else { return };
    let mut n = 0;
    for entry in std::fs::read_dir(root.join("settings")).expect("settings dir") {
        let dir = entry.expect("dir entry").path();
        assert_merge_reproduces(&dir.join("mesh.yaml"), &dir.join("mesh-merged.yaml"));
        n += 1;
    }
    assert!(n >= 20, "only {n} settings variants");
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn mesh_overrides_reproduce_merged() {
    let Some(root) = corpus() else { return };
    let dir = root.join("mesh-overrides");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("mesh-overrides dir") {
        let p = entry.expect("dir entry").path();
        let name = p
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        if let Some(stem) = name
            .strip_suffix(".yaml")
            .filter(|s| !s.ends_with("-merged"))
        {
            assert_merge_reproduces(&p, &dir.join(format!("{stem}-merged.yaml")));
            n += 1;
        }
    }
    assert_eq!(n, 6);
}

/// Every `proxy.istio.io/config` annotation value found in a document tree.
fn proxy_config_annotations(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("proxy.istio.io/config", Value::String(s)) => out.push(s.clone()),
                    _ => proxy_config_annotations(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| proxy_config_annotations(x, out)),
        _ => {}
    }
}

/// The `PROXY_CONFIG` env values of a golden file (line after `value: |`).
fn golden_proxy_configs(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() == "- name: PROXY_CONFIG" {
            if let Some(v) = lines.get(i + 2) {
                out.push(v.trim().to_string());
            }
        }
    }
    out
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn proto_to_json_matches_corpus_proxy_config_env() {
    let Some(root) = corpus() else { return };
    let cases: Value = serde_json::from_str(&read(&root.join("cases.json"))).expect("cases.json");
    let mut checked = 0;
    for case in cases.as_array().expect("cases array") {
        let Some(expected) = case["expected"].as_str() else {
            continue;
        };
        let mesh_file = match case["mesh_override"].as_str() {
            Some(o) => root.join(o),
            None => root
                .join(case["settings"].as_str().expect("settings"))
                .join("mesh.yaml"),
        };
        let mut mesh = apply_file(&mesh_file);
        let mut annotations = Vec::new();
        let input = read(&root.join(case["input"].as_str().expect("input")));
        yaml_docs(&input)
            .iter()
            .for_each(|d| proxy_config_annotations(d, &mut annotations));
        for a in annotations.iter().take(1) {
            mesh = apply_proxy_config(a, &mesh).expect("annotation applies");
        }
        let got = proto_to_json(PROXY_CONFIG, &mesh["defaultConfig"]);
        for want in golden_proxy_configs(&read(&root.join(expected))) {
            assert_eq!(got, want, "case {}", case["name"]);
            checked += 1;
        }
    }
    assert!(checked >= 80, "only {checked} PROXY_CONFIG values checked");
}

#[test]
fn default_proxy_config_encodes_empty() {
    assert_eq!(proto_to_json(PROXY_CONFIG, &default_proxy_config()), "{}");
    let mesh = default_mesh_config();
    assert_eq!(proto_to_json(PROXY_CONFIG, &mesh["defaultConfig"]), "{}");
}

#[test]
fn proto_to_json_spec_examples() {
    let mut pc = default_proxy_config();
    pc["discoveryAddress"] = json!("foo:123");
    pc["concurrency"] = json!(0);
    pc["proxyMetadata"] = json!({"FOO": "bar"});
    assert_eq!(
        proto_to_json(PROXY_CONFIG, &pc),
        r#"{"discoveryAddress":"foo:123","concurrency":0,"proxyMetadata":{"FOO":"bar"}}"#
    );
    let hold = apply_proxy_config_value(
        &json!({"holdApplicationUntilProxyStarts": true}),
        &default_mesh_config(),
    )
    .expect("apply");
    assert_eq!(
        proto_to_json(PROXY_CONFIG, &hold["defaultConfig"]),
        r#"{"holdApplicationUntilProxyStarts":true}"#
    );
    let tracing = apply_mesh_config_value(
        &json!({"defaultConfig": {"tracing": {}}}),
        &default_mesh_config(),
    )
    .expect("apply");
    assert_eq!(
        proto_to_json(PROXY_CONFIG, &tracing["defaultConfig"]),
        r#"{"tracing":{}}"#
    );
}

#[test]
fn proto_to_json_encoding_rules() {
    let pc = to_canonical(
        PROXY_CONFIG,
        &json!({
            "proxy_metadata": {"b": "2", "a": "<&>"},
            "drainDuration": "1.5s",
            "tracingServiceName": "CANONICAL_NAME_ONLY",
            "controlPlaneAuthPolicy": 1000,
            "interceptionMode": 1,
            "statusPort": 15021,
            "tracing": {"sampling": 1.5, "maxPathTagLength": 3},
            "meshId": "",
            "fileFlushInterval": "1ms",
        }),
    )
    .expect("decodes");
    assert_eq!(
        proto_to_json(PROXY_CONFIG, &pc),
        concat!(
            r#"{"tracingServiceName":"CANONICAL_NAME_ONLY","drainDuration":"1.500s","#,
            r#""controlPlaneAuthPolicy":"INHERIT","interceptionMode":"TPROXY","#,
            r#""tracing":{"maxPathTagLength":3,"sampling":1.5},"#,
            r#""proxyMetadata":{"a":"\u003c\u0026\u003e","b":"2"},"statusPort":15021,"#,
            r#""fileFlushInterval":"0.001s"}"#
        )
    );
}

#[test]
fn int64_wrappers_are_quoted_and_mismatch_gives_empty_object() {
    let mesh = to_canonical(
        MESH_CONFIG,
        &json!({"zoneAwareLbSetting": {"minClusterSize": "7"}}),
    )
    .expect("decodes");
    assert_eq!(mesh["zoneAwareLbSetting"]["minClusterSize"], json!(7));
    assert_eq!(
        proto_to_json(MESH_CONFIG, &mesh),
        r#"{"zoneAwareLbSetting":{"minClusterSize":"7"}}"#
    );
    assert_eq!(
        proto_to_json(PROXY_CONFIG, &json!({"statusPort": "x"})),
        "{}"
    );
    assert_eq!(proto_to_json("no.such.Message", &json!({})), "{}");
}

#[test]
fn to_canonical_errors_name_the_field() {
    let err = |v: Value| to_canonical(PROXY_CONFIG, &v).unwrap_err().to_string();
    assert_eq!(
        err(json!({"x": 1})),
        r#"unknown field "x" in istio.mesh.v1alpha1.ProxyConfig"#
    );
    assert!(err(json!({"statusPort": "abc"})).starts_with("statusPort: invalid int32"));
    assert!(err(json!({"drainDuration": "5"}))
        .contains(r#"drainDuration: bad Duration: time: missing unit in duration "5""#));
    assert!(
        err(json!({"interceptionMode": "FOO"})).contains("interceptionMode: unknown value \"FOO\"")
    );
    assert!(
        err(json!({"tracing": {"zipkin": {"adress": "x"}}})).contains(
            r#"tracing.zipkin: unknown field "adress" in istio.mesh.v1alpha1.Tracing.Zipkin"#
        )
    );
    assert!(err(json!({"statusPort": 1e12})).contains("statusPort"));
    assert!(
        err(json!({"serviceCluster": "a", "tracingServiceName": "APP_LABEL_AND_NAMESPACE"}))
            .contains("oneof cluster_name")
    );
}

#[test]
fn canonical_form_normalises() {
    let v = to_canonical(
        PROXY_CONFIG,
        &json!({"stat_name_length": "12", "concurrency": "0", "drainDuration": "1m",
                "extraStatTags": [], "configPath": "", "holdApplicationUntilProxyStarts": false,
                "interceptionMode": "REDIRECT", "tracingServiceName": 0}),
    )
    .expect("decodes");
    assert_eq!(
        v,
        json!({"tracingServiceName": "APP_LABEL_AND_NAMESPACE", "drainDuration": "60s",
               "statNameLength": 12, "concurrency": 0, "holdApplicationUntilProxyStarts": false})
    );
    // Keys follow declaration order.
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    assert_eq!(keys[0], "tracingServiceName");
}

#[test]
fn proxy_config_merge_semantics() {
    let mut mesh = default_mesh_config();
    mesh["defaultConfig"]["proxyMetadata"] = json!({"A": "1", "B": "2"});
    mesh["defaultConfig"]["proxyHeaders"] =
        json!({"forwardedClientCert": "SANITIZE", "server": {"disabled": true}});
    mesh["defaultConfig"]["tracing"] = json!({"zipkin": {"address": "z:9411"}, "sampling": 5.0});
    let out = apply_proxy_config_value(
        &json!({
            "proxyMetadata": {"B": "3", "C": "4"},
            "proxyHeaders": {"requestId": {"disabled": true}},
            "tracing": {"sampling": 1.0},
            "tracingServiceName": "CANONICAL_NAME_ONLY",
            "concurrency": null,
            "unknownField": 1
        }),
        &mesh,
    )
    .expect("applies");
    let pc = &out["defaultConfig"];
    assert_eq!(pc["proxyMetadata"], json!({"A": "1", "B": "3", "C": "4"}));
    assert_eq!(
        pc["proxyHeaders"],
        json!({"forwardedClientCert": "SANITIZE", "requestId": {"disabled": true},
               "server": {"disabled": true}})
    );
    assert_eq!(
        pc["tracing"],
        json!({"sampling": 1.0}),
        "messages replace wholesale"
    );
    assert!(pc.get("serviceCluster").is_none(), "oneof sibling cleared");
    assert!(pc.get("concurrency").is_none());
    assert_eq!(pc["configPath"], json!("./etc/istio/proxy"));
    let err = apply_proxy_config_value(&json!({"statusPort": "x"}), &mesh).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("could not parse proxy config: statusPort"));
}

#[test]
fn mesh_merge_special_fields() {
    let base = apply_mesh_config_value(
        &json!({"trustDomainAliases": ["b", "a"], "accessLogFile": "/dev/stdout",
                "defaultProviders": {"metrics": ["prometheus"], "tracing": ["x"]}}),
        &default_mesh_config(),
    )
    .expect("applies");
    let out = apply_mesh_config_value(
        &json!({
            "trustDomainAliases": ["c", "a"],
            "accessLogFile": "",
            "defaultProviders": {"metrics": []},
            "extensionProviders": [
                {"name": "envoy", "envoyFileAccessLog": {"path": "/dev/stderr"}},
                {"name": "new", "prometheus": {}}
            ],
            "defaultConfig": {"proxyMetadata": {"K": "V"}},
            "inboundTrafficPolicy": {"mode": "LOCALHOST"},
            "some_unknown": true
        }),
        &base,
    )
    .expect("applies");
    assert_eq!(out["trustDomainAliases"], json!(["a", "b", "c"]));
    assert!(
        out.get("accessLogFile").is_none(),
        "explicit empty string clears"
    );
    assert_eq!(out["defaultProviders"], json!({"tracing": ["x"]}));
    let names: Vec<&str> = out["extensionProviders"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["prometheus", "stackdriver", "envoy", "new"]);
    assert_eq!(
        out["extensionProviders"][2]["envoyFileAccessLog"]["path"],
        "/dev/stderr"
    );
    assert_eq!(out["defaultConfig"]["proxyMetadata"], json!({"K": "V"}));
    assert_eq!(out["defaultConfig"]["drainDuration"], "45s");
    assert_eq!(inbound_traffic_policy_mode(&out), "localhost");
    assert_eq!(inbound_traffic_policy_mode(&base), "passthrough");
    assert_eq!(
        apply_mesh_config_value(&Value::Null, &base).expect("null is a no-op"),
        base
    );
    let err = apply_mesh_config_value(&json!({"proxyListenPort": "x"}), &base).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("failed to convert to proto. proxyListenPort"),
        "{err}"
    );
}

#[test]
fn effective_proxy_config_layers_without_zero_overrides() {
    let mesh = default_mesh_config();
    assert_eq!(
        effective_proxy_config_value(&mesh, None),
        default_proxy_config()
    );
    // A mesh defaultConfig that cleared statNameLength: the webhook layering restores the default.
    let cleared = apply_mesh_config_value(&json!({"defaultConfig": {"statNameLength": 0}}), &mesh)
        .expect("applies");
    assert!(cleared["defaultConfig"].get("statNameLength").is_none());
    let eff = effective_proxy_config_value(&cleared, None);
    assert_eq!(eff["statNameLength"], json!(189));
    // Annotation zero values do not override in the webhook path; they do in kube-inject.
    let ann = json!({"statusPort": 0, "concurrency": 0, "proxyMetadata": {"X": "1"}});
    let eff = effective_proxy_config_value(&mesh, Some(&ann));
    assert_eq!(eff["statusPort"], json!(15020));
    assert_eq!(eff["concurrency"], json!(0));
    assert_eq!(eff["proxyMetadata"], json!({"X": "1"}));
    let kube = apply_proxy_config_value(&ann, &mesh).expect("applies");
    assert!(kube["defaultConfig"].get("statusPort").is_none());
    // A broken annotation is ignored.
    let eff = effective_proxy_config_value(&mesh, Some(&json!({"statusPort": "x"})));
    assert_eq!(eff, default_proxy_config());
}

#[test]
fn apply_proxy_config_yaml_errors() {
    let mesh = default_mesh_config();
    let err = apply_proxy_config("concurrency: [1", &mesh)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("could not parse proxy config: "), "{err}");
    let err = apply_proxy_config("drainDuration: 5", &mesh)
        .unwrap_err()
        .to_string();
    assert!(err.contains("drainDuration"), "{err}");
    let out = apply_proxy_config("holdApplicationUntilProxyStarts: true", &mesh).expect("applies");
    assert_eq!(
        out["defaultConfig"]["holdApplicationUntilProxyStarts"],
        json!(true)
    );
    assert_eq!(
        effective_proxy_config(&mesh, Some("concurrency: 2"))["concurrency"],
        json!(2)
    );
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn held_out_override_proxy_config_env() {
    let Some(root) = corpus() else { return };
    let dir = root.join("mesh-overrides");
    let pc = |f: &str| proto_to_json(PROXY_CONFIG, &apply_file(&dir.join(f))["defaultConfig"]);
    assert_eq!(pc("tracing-empty.yaml"), r#"{"tracing":{}}"#);
    assert_eq!(
        pc("proxy-metadata-tls-client-key.yaml"),
        r#"{"proxyMetadata":{"ISTIO_META_TLS_CLIENT_KEY":"/etc/identity/client/keys/client-key.pem"}}"#
    );
    assert_eq!(pc("inbound-localhost.yaml"), "{}");
    assert_eq!(
        inbound_traffic_policy_mode(&apply_file(&dir.join("inbound-localhost.yaml"))),
        "localhost"
    );
}

/// Deterministic pseudo-random JSON values for the no-panic sweep.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn value(&mut self, depth: u32, msg: Option<&str>) -> Value {
        const STRS: [&str; 12] = [
            "",
            "x",
            "45s",
            "1.5s",
            "-1ms",
            "MUTUAL_TLS",
            "REDIRECT",
            "1e400",
            "é:80",
            "[::1]:15012",
            "99999999999999999999h",
            "Infinity",
        ];
        match self.next() % if depth > 3 { 6 } else { 8 } {
            0 => Value::Null,
            1 => Value::Bool(self.next().is_multiple_of(2)),
            2 => json!(self.next() as i64 - (1 << 30)),
            3 => json!(f64::from(self.next() as u32) / 7.0),
            4 | 5 => json!(STRS[(self.next() % 12) as usize]),
            6 => Value::Array(
                (0..self.next() % 3)
                    .map(|_| self.value(depth + 1, None))
                    .collect(),
            ),
            _ => self.object(depth + 1, msg),
        }
    }

    fn object(&mut self, depth: u32, msg: Option<&str>) -> Value {
        let desc = msg.and_then(|m| crate::kube::schema::proto().message(m));
        let mut m = serde_json::Map::new();
        for _ in 0..self.next() % 6 {
            match desc.filter(|d| !d.fields.is_empty()) {
                Some(d) => {
                    let f = &d.fields[(self.next() % d.fields.len() as u64) as usize];
                    let sub = (f.type_kind == crate::kube::schema::ProtoKind::Message)
                        .then_some(f.ty.as_str());
                    m.insert(f.json.clone(), self.value(depth, sub));
                }
                None => {
                    let k = format!("k{}", self.next() % 5);
                    m.insert(k, self.value(depth, None));
                }
            }
        }
        Value::Object(m)
    }
}

#[test]
fn no_panics_on_random_inputs() {
    let mut rng = Lcg(7);
    let mesh = default_mesh_config();
    for _ in 0..3000 {
        let pc = rng.object(0, Some(PROXY_CONFIG));
        if let Ok(c) = to_canonical(PROXY_CONFIG, &pc) {
            let _ = proto_to_json(PROXY_CONFIG, &c);
            let _ = proxy_config_errors(&c);
        }
        let _ = apply_proxy_config_value(&pc, &mesh);
        let _ = effective_proxy_config_value(&mesh, Some(&pc));
        let _ = proto_to_json(PROXY_CONFIG, &pc);
        let mc = rng.object(0, Some(MESH_CONFIG));
        if let Ok(m) = apply_mesh_config_value(&mc, &mesh) {
            let _ = proto_to_json(MESH_CONFIG, &m);
        }
        let _ = to_canonical(MESH_CONFIG, &mc);
    }
}
