use serde_json::json;

use super::quantity;
use super::typed::*;
use crate::go::json as gojson;

fn go(ty: &str, v: serde_json::Value) -> String {
    gojson::to_string(&to_go_value(ty, &v).unwrap())
}

fn norm(ty: &str, mut v: serde_json::Value) -> serde_json::Value {
    normalize(ty, &mut v).unwrap();
    v
}

fn norm_err(ty: &str, mut v: serde_json::Value) -> String {
    normalize(ty, &mut v).unwrap_err().to_string()
}

#[test]
fn container_port_in_go_field_order() {
    let v = json!({"protocol":"TCP","containerPort":80,"name":"http"});
    assert_eq!(
        go("corev1.ContainerPort", v),
        r#"{"name":"http","containerPort":80,"protocol":"TCP"}"#
    );
}

#[test]
fn override_container_json_matches_appendix_d() {
    let v = json!({
        "securityContext": {"runAsGroup": 4321, "runAsUser": 1234},
        "image": "", "name": "istio-proxy", "unknownField": 1, "env": []
    });
    assert_eq!(
        go("corev1.Container", v),
        r#"{"name":"istio-proxy","resources":{},"securityContext":{"runAsUser":1234,"runAsGroup":4321}}"#
    );
}

#[test]
fn quantities_canonical_and_resources_sorted() {
    let v = json!({"name": "c", "resources": {"requests": {"memory": "1024Mi", "cpu": "2000m"},
        "limits": {"cpu": 0.5}}});
    assert_eq!(
        go("corev1.Container", v),
        r#"{"name":"c","resources":{"limits":{"cpu":"500m"},"requests":{"cpu":"2","memory":"1Gi"}}}"#
    );
}

#[test]
fn probe_handler_is_inline_and_ordered() {
    let v = json!({"periodSeconds": 10, "initialDelaySeconds": 0,
        "httpGet": {"scheme": "HTTP", "port": 8080, "path": "/ready"}});
    assert_eq!(
        go("corev1.Probe", v),
        r#"{"httpGet":{"path":"/ready","port":8080,"scheme":"HTTP"},"periodSeconds":10}"#
    );
    let v = json!({"grpc": {"port": 9000}});
    assert_eq!(
        go("corev1.Probe", v),
        r#"{"grpc":{"port":9000,"service":null}}"#
    );
}

#[test]
fn volume_source_inline_pointer_empty_struct_kept() {
    let v = json!({"emptyDir": {}, "name": "data"});
    assert_eq!(go("corev1.Volume", v), r#"{"name":"data","emptyDir":{}}"#);
    let v = json!({"name": "workload-socket", "emptyDir": null});
    assert_eq!(go("corev1.Volume", v), r#"{"name":"workload-socket"}"#);
}

#[test]
fn pod_zero_structs_and_nil_slices() {
    let v = json!({"metadata": {"name": "p", "creationTimestamp": null}, "spec": {}});
    assert_eq!(
        go("corev1.Pod", v),
        r#"{"metadata":{"name":"p"},"spec":{"containers":null},"status":{}}"#
    );
}

#[test]
fn normalize_keeps_unknown_fields_and_order() {
    let v = norm(
        "corev1.Pod",
        json!({"spec": {"futureField": {"a": null}, "containers": [
            {"name": "app", "readOnly": false, "newThing": [1],
             "securityContext": {"privileged": false, "runAsUser": 0, "allowPrivilegeEscalation": null},
             "ports": [{"containerPort": 80, "hostPort": 0, "protocol": ""}]}
        ]}, "metadata": {"labels": {}}, "apiVersion": "v1", "kind": ""}),
    );
    let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["spec", "metadata", "apiVersion", "status"]);
    assert_eq!(v["spec"]["futureField"], json!({"a": null}));
    let c = &v["spec"]["containers"][0];
    assert_eq!(c["newThing"], json!([1]));
    assert_eq!(c["readOnly"], json!(false), "unknown to Container: kept");
    assert_eq!(
        c["securityContext"],
        json!({"privileged": false, "runAsUser": 0})
    );
    assert_eq!(c["ports"], json!([{"containerPort": 80}]));
    assert_eq!(c["resources"], json!({}));
    assert_eq!(v["metadata"], json!({}));
}

#[test]
fn yaml_scalars_in_string_fields_become_strings() {
    let v = norm(
        "corev1.Container",
        json!({"name": "c", "env": [{"name": "A", "value": true}, {"name": "B", "value": 8},
            {"name": "C", "value": 1.5}, {"name": "D", "value": false}],
            "args": [1, true], "command": ["x"]}),
    );
    assert_eq!(
        v["env"],
        json!([{"name": "A", "value": "true"}, {"name": "B", "value": "8"},
            {"name": "C", "value": "1.5"}, {"name": "D", "value": "false"}])
    );
    assert_eq!(v["args"], json!(["1", "true"]));
    let m = norm(
        "metav1.ObjectMeta",
        json!({"labels": {"version": 2, "on": true}}),
    );
    assert_eq!(m["labels"], json!({"version": "2", "on": "true"}));
}

#[test]
fn ints_must_be_integral_numbers() {
    let v = norm("corev1.ContainerPort", json!({"containerPort": 80.0}));
    assert_eq!(gojson::to_string(&v["containerPort"]), "80");
    let e = norm_err(
        "corev1.Pod",
        json!({"spec": {"containers": [{"name": "a", "securityContext": {"runAsUser": "1337"}}]}}),
    );
    assert_eq!(
        e,
        "json: cannot unmarshal string into Go struct field SecurityContext.spec.containers.securityContext.runAsUser of type int64"
    );
    let e = norm_err(
        "corev1.Pod",
        json!({"spec": {"containers": [{"ports": [{"containerPort": 1.5}]}]}}),
    );
    assert_eq!(
        e,
        "json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    );
    let e = norm_err(
        "corev1.ContainerPort",
        json!({"containerPort": 3000000000i64}),
    );
    assert!(
        e.contains("number 3000000000") && e.ends_with("of type int32"),
        "{e}"
    );
    let e = norm_err("corev1.Container", json!({"stdin": "yes"}));
    assert_eq!(
        e,
        "json: cannot unmarshal string into Go struct field Container.stdin of type bool"
    );
}

#[test]
fn structural_mismatches_are_errors() {
    let e = norm_err("corev1.PodSpec", json!({"containers": {"name": "x"}}));
    assert_eq!(
        e,
        "json: cannot unmarshal object into Go struct field PodSpec.containers of type []v1.Container"
    );
    let e = norm_err("corev1.Container", json!({"name": ["x"]}));
    assert_eq!(
        e,
        "json: cannot unmarshal array into Go struct field Container.name of type string"
    );
    let e = norm_err("corev1.Container", json!({"securityContext": "x"}));
    assert!(e.contains("of type v1.SecurityContext"), "{e}");
    assert!(normalize("corev1.Pod", &mut json!([1])).is_err());
    assert!(normalize("nope.Type", &mut json!({})).is_err());
}

#[test]
fn quantity_errors_and_intorstring() {
    let e = norm_err(
        "corev1.ResourceRequirements",
        json!({"limits": {"cpu": "1x"}}),
    );
    assert_eq!(e, quantity::ERR_FORMAT_WRONG);
    let v = norm(
        "corev1.HTTPGetAction",
        json!({"port": "http-port", "host": ""}),
    );
    assert_eq!(v, json!({"port": "http-port"}));
    let v = norm("corev1.HTTPGetAction", json!({"port": 15021.0}));
    assert_eq!(gojson::to_string(&v), r#"{"port":15021}"#);
    let e = norm_err("corev1.HTTPGetAction", json!({"port": true}));
    assert_eq!(
        e,
        "json: cannot unmarshal bool into Go struct field HTTPGetAction.port of type int32"
    );
}

#[test]
fn case_insensitive_keys_are_canonicalised() {
    let v = norm(
        "corev1.ContainerPort",
        json!({"ContainerPort": 80, "Name": "http"}),
    );
    assert_eq!(v, json!({"containerPort": 80, "name": "http"}));
}

#[test]
fn null_root_is_zero_struct() {
    let v = norm("corev1.Container", serde_json::Value::Null);
    assert_eq!(gojson::to_string(&v), r#"{"name":"","resources":{}}"#);
}

#[test]
fn large_pod_normalises_quickly() {
    let env: Vec<_> = (0..1500)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": format!("v{i}")}))
        .collect();
    let mf: Vec<_> = (0..400)
        .map(|i| json!({"manager": format!("m{i}"), "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}, "pad": "x".repeat(400)}}))
        .collect();
    let pod = json!({"metadata": {"name": "big", "managedFields": mf},
        "spec": {"containers": [{"name": "app", "image": "x", "env": env}]}});
    // Warm the schema index (built once per process).
    normalize("corev1.Pod", &mut json!({})).unwrap();
    let mut v = pod.clone();
    normalize("corev1.Pod", &mut v).unwrap();
    assert_eq!(
        v["spec"]["containers"][0]["env"].as_array().unwrap().len(),
        1500
    );
    assert_eq!(
        v["metadata"]["managedFields"],
        pod["metadata"]["managedFields"]
    );
}

/// Convert a yaml-rust2 document to JSON (test helper; goldens are Go-quoted YAML).
fn yaml_to_json(y: &yaml_rust2::Yaml) -> serde_json::Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Real(s) => s
            .parse::<f64>()
            .map(serde_json::Value::from)
            .unwrap_or(serde_json::Value::Null),
        Yaml::Integer(i) => serde_json::Value::from(*i),
        Yaml::String(s) => serde_json::Value::from(s.as_str()),
        Yaml::Boolean(b) => serde_json::Value::from(*b),
        Yaml::Array(a) => serde_json::Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => serde_json::Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        _ => String::new(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        _ => serde_json::Value::Null,
    }
}

fn kind_type(kind: &str) -> Option<&'static str> {
    crate::ingest::workload::workload_kind(kind).map(|w| w.schema_type)
}

/// Every typed document Go wrote in the corpus goldens is a fixed point of `normalize`: it
/// neither adds nor drops a field, and quantities are already canonical.
#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_goldens_are_normalize_fixed_points() {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/istio"
    );
    let Ok(index) = std::fs::read_to_string(format!("{root}/cases.json")) else {
        eprintln!("conformance corpus not found at {root}; skipping");
        return;
    };
    let cases: serde_json::Value = serde_json::from_str(&index).unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    // Goldens of webhook-only cases (skipInjection) are stale Go output and are not compared by
    // Istio's test either; kube-inject goldens are exactly Go's typed encoding.
    let goldens = cases
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kube_inject"] == true);
    for path in goldens.filter_map(|c| c["expected"].as_str()) {
        let path = std::path::PathBuf::from(format!("{root}/{path}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(docs) = yaml_rust2::YamlLoader::load_from_str(&text) else {
            continue;
        };
        for d in &docs {
            let v = yaml_to_json(d);
            let Some(ty) = v["kind"].as_str().and_then(kind_type) else {
                continue;
            };
            let mut n = v.clone();
            match normalize(ty, &mut n) {
                Ok(()) if n == v => checked += 1,
                Ok(()) => failures.push(format!(
                    "{}: {}\n  go:  {}\n  ours:{}",
                    path.display(),
                    ty,
                    gojson::to_string_sorted(&v),
                    gojson::to_string_sorted(&n)
                )),
                Err(err) => failures.push(format!("{}: {err}", path.display())),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 50, "only {checked} documents checked");
    eprintln!("{checked} golden documents are normalize fixed points");
}

fn collect_annotation(v: &serde_json::Value, name: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k == name {
                    if let Some(s) = x.as_str() {
                        out.push(s.to_string());
                    }
                }
                collect_annotation(x, name, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_annotation(x, name, out)),
        _ => {}
    }
}

/// `proxy.istio.io/overrides` values in the goldens are Go's `json.Marshal` of containers:
/// re-encoding their (shuffled) content through `to_go_value` must give the same bytes.
#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_overrides_annotations_match_to_go_value() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/istio/cases"
    );
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!("conformance corpus not found at {dir}; skipping");
        return;
    };
    let mut values = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("injected") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for d in yaml_rust2::YamlLoader::load_from_str(&text).unwrap_or_default() {
            collect_annotation(&yaml_to_json(&d), "proxy.istio.io/overrides", &mut values);
        }
    }
    for s in &values {
        let parsed: serde_json::Value = serde_json::from_str(s).unwrap();
        let mut out = serde_json::Map::new();
        for (k, list) in parsed.as_object().unwrap() {
            let items = list
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    // Reverse key order so only to_go_value can restore it.
                    let rev: serde_json::Map<_, _> = c
                        .as_object()
                        .unwrap()
                        .iter()
                        .rev()
                        .map(|(a, b)| (a.clone(), b.clone()))
                        .collect();
                    to_go_value("corev1.Container", &serde_json::Value::Object(rev)).unwrap()
                })
                .collect();
            out.insert(k.clone(), serde_json::Value::Array(items));
        }
        assert_eq!(&gojson::to_string(&serde_json::Value::Object(out)), s);
    }
    assert!(!values.is_empty());
    eprintln!(
        "{} overrides annotations re-encoded byte for byte",
        values.len()
    );
}

fn collect_env(v: &serde_json::Value, name: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if m.get("name").and_then(|n| n.as_str()) == Some(name) {
                if let Some(s) = m.get("value").and_then(|x| x.as_str()) {
                    out.push(s.to_string());
                }
            }
            m.values().for_each(|x| collect_env(x, name, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_env(x, name, out)),
        _ => {}
    }
}

fn corpus_docs(sub: &str, suffix: &str) -> Option<Vec<serde_json::Value>> {
    let dir = format!(
        "{}/../../../shared/conformance/istio/{sub}",
        env!("CARGO_MANIFEST_DIR")
    );
    let entries = std::fs::read_dir(&dir).ok()?;
    let mut docs = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if !path.to_string_lossy().ends_with(suffix) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for d in yaml_rust2::YamlLoader::load_from_str(&text).unwrap_or_default() {
            docs.push(yaml_to_json(&d));
        }
    }
    Some(docs)
}

/// `ISTIO_META_POD_PORTS` is Go's `json.Marshal` of `[]ContainerPort` (omitempty on all but
/// containerPort): re-encoding each entry through `to_go_value` gives the same bytes.
#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_pod_ports_env_matches_to_go_value() {
    let Some(docs) = corpus_docs("cases", ".injected") else {
        eprintln!("conformance corpus not found; skipping");
        return;
    };
    let mut values = Vec::new();
    docs.iter()
        .for_each(|d| collect_env(d, "ISTIO_META_POD_PORTS", &mut values));
    for s in &values {
        let parsed: serde_json::Value = serde_json::from_str(s).unwrap();
        let ports: Vec<_> = parsed
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let rev: serde_json::Map<_, _> = p
                    .as_object()
                    .unwrap()
                    .iter()
                    .rev()
                    .map(|(a, b)| (a.clone(), b.clone()))
                    .collect();
                to_go_value("corev1.ContainerPort", &serde_json::Value::Object(rev)).unwrap()
            })
            .collect();
        // The template lays entries out one per line; the entries themselves are Go's bytes.
        let compact: String = s.split('\n').map(str::trim_start).collect();
        assert_eq!(gojson::to_string(&serde_json::Value::Array(ports)), compact);
    }
    assert!(values.len() > 10, "{}", values.len());
}

/// Every workload input of the corpus normalises without error, and normalising is idempotent.
#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_inputs_normalise_idempotently() {
    let Some(docs) = corpus_docs("cases", ".yaml") else {
        eprintln!("conformance corpus not found; skipping");
        return;
    };
    let mut n = 0;
    for d in docs {
        let Some(ty) = d["kind"].as_str().and_then(kind_type) else {
            continue;
        };
        let mut once = d.clone();
        normalize(ty, &mut once).unwrap_or_else(|e| panic!("{ty}: {e}\n{d}"));
        let mut twice = once.clone();
        normalize(ty, &mut twice).unwrap();
        assert_eq!(once, twice);
        n += 1;
    }
    assert!(n > 50, "{n}");
}

#[test]
fn times_are_reemitted_in_utc_seconds() {
    let v = norm(
        "metav1.ObjectMeta",
        json!({"creationTimestamp": "2024-01-01T01:00:00.5+02:00", "deletionTimestamp": "2024-01-02T03:04:05Z"}),
    );
    assert_eq!(
        v,
        json!({"creationTimestamp": "2023-12-31T23:00:00Z", "deletionTimestamp": "2024-01-02T03:04:05Z"})
    );
    let v = norm(
        "metav1.ObjectMeta",
        json!({"creationTimestamp": "0001-01-01T00:00:00Z"}),
    );
    assert_eq!(v, json!({}));
    let e = norm_err("metav1.ObjectMeta", json!({"creationTimestamp": 5}));
    assert_eq!(e, "json: cannot unmarshal number into Go struct field ObjectMeta.creationTimestamp of type string");
    assert!(norm_err(
        "metav1.ObjectMeta",
        json!({"creationTimestamp": "yesterday"})
    )
    .starts_with("parsing time"));
}

#[test]
fn leaf_and_resource_list_types() {
    let v = to_go_value(
        "corev1.ResourceList",
        &json!({"memory": "1024Mi", "cpu": "4000m"}),
    )
    .unwrap();
    assert_eq!(gojson::to_string(&v), r#"{"cpu":"4","memory":"1Gi"}"#);
    assert_eq!(
        to_go_value("resource.Quantity", &json!("0.5")).unwrap(),
        json!("500m")
    );
    assert_eq!(
        to_go_value("intstr.IntOrString", &json!(8080.0)).unwrap(),
        json!(8080)
    );
    assert_eq!(
        to_go_value("intstr.IntOrString", &json!("http")).unwrap(),
        json!("http")
    );
    assert!(to_go_value("intstr.IntOrString", &json!(true)).is_err());
    assert!(to_go_value("corev1.ResourceList", &json!({"cpu": "x"})).is_err());
    assert!(to_go_value("corev1.ResourceList", &json!([1])).is_err());
}

#[test]
fn random_trees_never_panic() {
    let mut g = crate::testing::random::Gen(7);
    let mut ok = 0;
    for _ in 0..3000 {
        let a = g.value(0);
        // Every second tree is a merge patch in `merge::strategic`'s test of the same seed;
        // skipping it keeps the trees seen here the same.
        g.value(0);
        for ty in ["corev1.Pod", "corev1.Container", "metav1.ObjectMeta"] {
            let mut x = a.clone();
            if normalize(ty, &mut x).is_ok() {
                ok += 1;
                // Normalising a normalised tree is a no-op.
                let mut y = x.clone();
                normalize(ty, &mut y).unwrap();
                assert_eq!(x, y, "{ty}: {a}");
            }
            let _ = to_go_value(ty, &a);
        }
    }
    assert!(ok > 100, "{ok}");
}

fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn removed_fields_keep_the_order_of_the_rest_and_emitted_ones_go_last() {
    let v = norm(
        "corev1.Volume",
        json!({"zz": 1, "emptyDir": null, "hostPath": null, "secret": {"secretName": ""}, "y": 2}),
    );
    assert_eq!(keys(&v), ["zz", "secret", "y", "name"]);
    let v = norm(
        "corev1.Container",
        json!({"x": 1, "name": null, "image": "", "args": [], "resources": {}}),
    );
    // `name` is re-added at the end: Go leaves the zero value and always writes it.
    assert_eq!(keys(&v), ["x", "resources", "name"]);
}

#[test]
fn folded_keys_count_as_present_fields() {
    let v = norm("corev1.EnvVar", json!({"NAME": "a", "Value": "b"}));
    assert_eq!(keys(&v), ["name", "value"]);
    let v = norm("corev1.Container", json!({"Name": "c", "NAME": "d"}));
    assert_eq!(keys(&v), ["name", "resources"]);
    assert_eq!(v["name"], "d");
    let v = norm("corev1.Container", json!({"Name": "", "Resources": null}));
    assert_eq!(keys(&v), ["name", "resources"]);
}

#[test]
fn repeated_quantities_stay_canonical() {
    for _ in 0..3 {
        let v = norm(
            "corev1.ResourceRequirements",
            json!({"limits": {"cpu": " 2000m ", "memory": "1Gi"}, "requests": {"cpu": "2"}}),
        );
        assert_eq!(v["limits"], json!({"cpu": "2", "memory": "1Gi"}));
        assert_eq!(v["requests"], json!({"cpu": "2"}));
    }
    for _ in 0..2 {
        let e = norm_err(
            "corev1.ResourceRequirements",
            json!({"limits": {"cpu": "2x"}}),
        );
        assert!(e.contains("quantities must match"), "{e}");
    }
}

/// Results travel through the recursion of [`normalize`]: the error stays at most a `String`
/// wide (a 512-deep document must not overflow a test thread's stack).
#[test]
fn type_errors_stay_one_string_wide() {
    assert!(std::mem::size_of::<TypeError>() <= std::mem::size_of::<String>() + 8);
}

#[test]
fn type_errors_name_the_struct_the_path_and_the_go_type() {
    let mut v = json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "x"}]}]}});
    let e = normalize("corev1.Pod", &mut v).expect_err("a string port");
    let TypeError::Field(f) = &e else {
        panic!("not a field type error: {e:?}");
    };
    assert_eq!(
        **f,
        FieldTypeError {
            got: "string".into(),
            owner: "ContainerPort".into(),
            path: ["spec", "containers", "ports", "containerPort"]
                .map(String::from)
                .to_vec(),
            ty: "int32".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
    );
}

/// `normalize_changed` says `false` only for a tree that normalisation leaves exactly as it was
/// (keys in order, numbers by representation), and says it of every normalised pod; each pod
/// below is out of normal form in one way (every step that rewrites a value).
#[test]
fn normalize_changed_is_false_exactly_for_normal_trees() {
    use crate::config::render_memo::same;
    let c = |extra: serde_json::Value| {
        let mut c = json!({"name": "app", "image": "nginx", "resources": {}});
        if let (Some(m), Some(x)) = (c.as_object_mut(), extra.as_object()) {
            m.extend(x.clone());
        }
        json!({"metadata": {"name": "p", "creationTimestamp": null},
               "spec": {"containers": [c]}})
    };
    let pods = [
        c(json!({})),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}}),
        c(json!({"resources": {"requests": {"cpu": "1000m"}}})),
        c(json!({"resources": {"requests": {"cpu": 1}}})),
        c(json!({"env": [{"name": "A", "value": 1}, {"name": "B", "value": true}]})),
        c(json!({"ports": [{"containerPort": 80.0}]})),
        c(json!({"ports": [null]})),
        c(json!({"args": [null, "a"]})),
        c(json!({"Name": "app2"})),
        c(json!({"command": []})),
        c(json!({"workingDir": ""})),
        c(json!({"stdin": null})),
        json!({"metadata": {"name": "p", "creationTimestamp": "2024-01-01T01:00:00.5+02:00"},
               "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {}}]}}),
        json!({"metadata": {"name": "p", "creationTimestamp": "0001-01-01T00:00:00Z"},
               "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {}}]}}),
        json!({"metadata": {"name": "p", "creationTimestamp": null, "labels": {}},
               "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {}}]}}),
    ];
    let mut normal_seen = 0;
    for pod in &pods {
        let mut once = pod.clone();
        let changed = normalize_changed("corev1.Pod", &mut once).unwrap();
        assert_eq!(changed, !same(pod, &once), "{pod} -> {once}");
        normal_seen += usize::from(!changed);
        let mut twice = once.clone();
        assert!(
            !normalize_changed("corev1.Pod", &mut twice).unwrap(),
            "a normalised pod is in normal form: {once}"
        );
        assert!(same(&once, &twice));
    }
    assert!(normal_seen < pods.len(), "some pods are out of normal form");
}

/// Pods to normalise beside each other: raw (quantities to canonicalise, nulls, zero omitempty
/// fields, numbers in string fields, case-folded keys, unknown fields, a type error) and in
/// normal form, differing in a field, an element, a key order.
fn beside_cases() -> Vec<serde_json::Value> {
    let proxy = json!({"name": "istio-proxy", "image": "proxy:1", "args": ["a", "b"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
        "resources": {"limits": {"cpu": "2000m", "memory": "1024Mi"}},
        "startupProbe": {"initialDelaySeconds": 0, "periodSeconds": 1, "httpGet": {"port": 15021}},
        "securityContext": {"runAsUser": 1337}});
    let app = json!({"name": "app", "image": "app:1", "ports": [{"containerPort": 80}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 80}}});
    let pod = json!({"metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"initContainers": [proxy], "containers": [app],
                 "volumes": [{"name": "v", "emptyDir": {}}]}});
    let mut cases = vec![pod.clone()];
    let mut edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut p = pod.clone();
        f(&mut p);
        cases.push(p);
    };
    edit(&|p| p["metadata"]["labels"]["app"] = json!("b"));
    edit(&|p| p["spec"]["containers"][0]["image"] = json!("app:2"));
    edit(&|p| p["spec"]["containers"][0]["ports"][0]["containerPort"] = json!("eighty"));
    edit(&|p| p["spec"]["containers"][0]["ports"][0]["name"] = json!(""));
    edit(&|p| p["spec"]["containers"][0]["env"] = json!([{"name": "X", "value": 5}]));
    edit(&|p| p["spec"]["containers"][0]["Image"] = json!("folded"));
    edit(&|p| p["spec"]["containers"][0]["unknown"] = json!({"k": null}));
    edit(&|p| p["spec"]["containers"][0]["readinessProbe"] = json!(null));
    edit(&|p| p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "0.5"}}));
    edit(&|p| p["spec"]["initContainers"][0]["resources"]["limits"]["cpu"] = json!("2"));
    edit(&|p| p["spec"]["initContainers"][0]["startupProbe"]["initialDelaySeconds"] = json!(3));
    edit(&|p| {
        let c = p["spec"]["containers"][0].as_object_mut().unwrap();
        let entries: Vec<_> = std::mem::take(c).into_iter().rev().collect();
        c.extend(entries);
    });
    edit(&|p| {
        let first = p["spec"]["containers"][0].clone();
        p["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .insert(0, first);
        p["spec"]["containers"][0]["name"] = json!("second");
    });
    edit(&|p| p["spec"]["containers"] = json!(null));
    edit(&|p| p["spec"]["volumes"] = json!([null, {"name": "w", "hostPath": {"path": "/"}}]));
    edit(&|p| p["spec"]["hostNetwork"] = json!(false));
    edit(&|p| p["spec"] = json!({}));
    cases
}

/// Normalising beside a tree in normal form gives what normalising alone gives (value and
/// error), whatever the two trees share: every pair of cases, each beside the normal form of
/// the other (and of itself).
#[test]
fn normalize_beside_a_normal_tree_is_normalize() {
    let cases = beside_cases();
    let normal: Vec<serde_json::Value> = cases
        .iter()
        .filter_map(|c| {
            let mut n = c.clone();
            normalize("corev1.Pod", &mut n).ok().map(|()| n)
        })
        .collect();
    assert!(normal.len() < cases.len(), "a case fails to decode");
    let mut skipped_some = false;
    for x in &cases {
        let mut want = x.clone();
        let want_result = normalize("corev1.Pod", &mut want).map_err(|e| e.to_string());
        for reference in &normal {
            let mut got = x.clone();
            let result = normalize_beside("corev1.Pod", &mut got, reference);
            assert_eq!(
                result.map_err(|e| e.to_string()),
                want_result,
                "{x} beside {reference}"
            );
            if want_result.is_ok() {
                assert!(
                    gojson::identical(&got, &want),
                    "{x} beside {reference}: {got} != {want}"
                );
                skipped_some |=
                    gojson::identical(&got["spec"]["containers"], &reference["spec"]["containers"]);
            }
        }
    }
    assert!(skipped_some);
}
