//! Tests of annotation validation, including the corpus error cases (skipped when absent).

use serde_json::{json, Map, Value};

use super::*;
use crate::testing::{corpus, yaml, yaml_docs};

fn errs(pairs: &[(&str, &str)]) -> Vec<String> {
    let m: Map<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    annotation_errors(&m)
}

fn one(name: &str, value: &str) -> String {
    let mut e = errs(&[(name, value)]);
    assert_eq!(e.len(), 1, "{name}={value:?}: {e:?}");
    let prefix = format!("invalid value '{value}' for annotation '{name}': ");
    e.remove(0)
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("missing prefix {prefix}"))
        .to_string()
}

#[test]
fn multierror_format() {
    assert_eq!(
        format_multierror(&["a".into()]),
        "1 error occurred:\n\t* a\n\n"
    );
    assert_eq!(
        format_multierror(&["a".into(), "b".into()]),
        "2 errors occurred:\n\t* a\n\t* b\n\n"
    );
}

#[test]
fn valid_annotations_pass() {
    let ok = [
        ("sidecar.istio.io/interceptionMode", "TPROXY"),
        ("status.sidecar.istio.io/port", " 15020 "),
        (
            "readiness.status.sidecar.istio.io/periodSeconds",
            "4294967295",
        ),
        ("traffic.sidecar.istio.io/includeOutboundIPRanges", "*"),
        (
            "traffic.sidecar.istio.io/excludeOutboundIPRanges",
            "10.0.0.0/8,fd00::/8",
        ),
        ("traffic.sidecar.istio.io/includeInboundPorts", "*"),
        (
            "traffic.sidecar.istio.io/excludeInboundPorts",
            " 80, 0 ,65535",
        ),
        ("traffic.sidecar.istio.io/excludeOutboundPorts", ""),
        ("traffic.sidecar.istio.io/excludeInterfaces", "eth0, net1.2"),
        ("prometheus.istio.io/merge-metrics", "False"),
        ("sidecar.istio.io/proxyCPU", "100m"),
        ("sidecar.istio.io/proxyMemoryLimit", "1Gi"),
        ("unrelated/annotation", "%%%"),
    ];
    assert_eq!(errs(&ok), Vec::<String>::new());
    assert!(validate_annotations(&Map::new()).is_ok());
}

#[test]
fn reasons_match_istio() {
    assert_eq!(
        one("sidecar.istio.io/interceptionMode", "redirect"),
        "interceptionMode invalid, use REDIRECT,TPROXY,NONE: redirect"
    );
    assert_eq!(
        one("status.sidecar.istio.io/port", "70000"),
        "excludeInboundPorts invalid: failed parsing port '70000': strconv.ParseUint: parsing \"70000\": value out of range"
    );
    assert_eq!(
        one(
            "readiness.status.sidecar.istio.io/initialDelaySeconds",
            "-1"
        ),
        "strconv.ParseUint: parsing \"-1\": invalid syntax"
    );
    assert_eq!(
        one(
            "readiness.status.sidecar.istio.io/failureThreshold",
            "4294967296"
        ),
        "strconv.ParseUint: parsing \"4294967296\": value out of range"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/includeOutboundIPRanges", "10.0.0.0"),
        "includeIPRanges invalid: failed parsing cidr '10.0.0.0': netip.ParsePrefix(\"10.0.0.0\"): no '/'"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/excludeOutboundIPRanges", "*"),
        "excludeIPRanges invalid: failed parsing cidr '*': netip.ParsePrefix(\"*\"): no '/'"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/excludeOutboundIPRanges", "1.2.3.4/33"),
        "excludeIPRanges invalid: failed parsing cidr '1.2.3.4/33': netip.ParsePrefix(\"1.2.3.4/33\"): prefix length out of range"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/excludeOutboundIPRanges", "10.0.0.0/8, 1.2.3.0/24"),
        "excludeIPRanges invalid: failed parsing cidr ' 1.2.3.0/24': netip.ParsePrefix(\" 1.2.3.0/24\"): ParseAddr(\" 1.2.3.0\"): unexpected character (at \" 1.2.3.0\")"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/includeInboundPorts", "80, x"),
        "includeInboundPorts invalid: failed parsing port ' x': failed parsing port ' x': strconv.ParseUint: parsing \"x\": invalid syntax"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/excludeOutboundPorts", "80,,90"),
        "excludeOutboundPorts invalid: failed parsing port '': failed parsing port '': strconv.ParseUint: parsing \"\": invalid syntax"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/kubevirtInterfaces", "eth0,"),
        "empty interface name"
    );
    assert_eq!(
        one(
            "istio.io/reroute-virtual-interfaces",
            "averyveryverylongname"
        ),
        "interface name \"averyveryverylongname\" too long (max 15 chars)"
    );
    assert_eq!(
        one("traffic.sidecar.istio.io/excludeInterfaces", "0eth"),
        "interface name \"0eth\" contains invalid characters"
    );
    assert_eq!(
        one("prometheus.istio.io/merge-metrics", "yes"),
        "strconv.ParseBool: parsing \"yes\": invalid syntax"
    );
    assert_eq!(
        one("sidecar.istio.io/proxyCPU", "1\n"),
        "value contains control characters"
    );
    assert_eq!(
        one("sidecar.istio.io/proxyMemory", "abc"),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        one("sidecar.istio.io/proxyCPULimit", "1Qi"),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        one("sidecar.istio.io/proxyCPULimit", "1Ki5"),
        "unable to parse quantity's suffix"
    );
}

#[test]
fn errors_are_sorted_and_rendered_as_multierror() {
    let m: Map<String, Value> = serde_json::from_value(json!({
        "traffic.sidecar.istio.io/excludeOutboundPorts": "bad",
        "sidecar.istio.io/interceptionMode": "X",
    }))
    .expect("map");
    let err = validate_annotations(&m).unwrap_err().to_string();
    assert_eq!(
        err,
        "2 errors occurred:\n\t* invalid value 'X' for annotation 'sidecar.istio.io/interceptionMode': interceptionMode invalid, use REDIRECT,TPROXY,NONE: X\n\t* invalid value 'bad' for annotation 'traffic.sidecar.istio.io/excludeOutboundPorts': excludeOutboundPorts invalid: failed parsing port 'bad': failed parsing port 'bad': strconv.ParseUint: parsing \"bad\": invalid syntax\n\n"
    );
    assert!(matches!(
        validate_annotations(&m),
        Err(InvalidAnnotations(_))
    ));
}

#[test]
fn proxy_config_annotation_through_yaml() {
    assert_eq!(
        one("proxy.istio.io/config", "drainDuration: 1500ms"),
        "1 error occurred:\n\t* drain time only supports durations to seconds precision\n\n"
    );
    assert!(one("proxy.istio.io/config", "[1, 2")
        .starts_with("failed to convert to apply proxy config: "));
    assert_eq!(
        errs(&[(
            "proxy.istio.io/config",
            "holdApplicationUntilProxyStarts: yes"
        )]),
        Vec::<String>::new()
    );
    assert_eq!(errs(&[("proxy.istio.io/config", "")]), Vec::<String>::new());
}

#[test]
fn proxy_config_annotation_checks() {
    let check = |text: &str| check_proxy_config_tree(Ok(yaml(text)));
    assert_eq!(
        check("{ \"holdApplicationUntilProxyStarts\": true }"),
        Ok(())
    );
    assert_eq!(
        check("concurrency: 2\nunknownField: 1"),
        Ok(()),
        "unknown fields ignored"
    );
    assert_eq!(
        check("discoveryAddress: nope"),
        Err("1 error occurred:\n\t* invalid discovery address: unable to split \"nope\": address nope: missing port in address\n\n".into())
    );
    assert_eq!(
        check("configPath: ''\nstatusPort: 70000"),
        Err("2 errors occurred:\n\t* config path must be set\n\t* invalid status port: port number 70000 must be in the range 1..65535\n\n".into())
    );
    let e = check("statusPort: abc").unwrap_err();
    assert!(
        e.starts_with("failed to convert to apply proxy config: statusPort"),
        "{e}"
    );
    let e = check_proxy_config_tree(Err(MeshError::from(crate::yaml::YamlError::Syntax {
        line: Some(1),
        problem: "bad".into(),
    })))
    .unwrap_err();
    assert_eq!(
        e,
        "failed to convert to apply proxy config: yaml: line 1: bad"
    );
}

/// Pod-template annotation maps of a workload document.
fn pod_annotations(doc: &Value, out: &mut Vec<Map<String, Value>>) {
    if doc["kind"] == "Pod" {
        if let Some(a) = doc
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        {
            out.push(a.clone());
        }
    }
    for ptr in ["/spec/template", "/spec/jobTemplate/spec/template"] {
        if let Some(a) = doc
            .pointer(ptr)
            .and_then(|t| t.pointer("/metadata/annotations"))
            .and_then(Value::as_object)
        {
            out.push(a.clone());
        }
    }
    if let Some(items) = doc["items"].as_array() {
        items.iter().for_each(|i| pod_annotations(i, out));
    }
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_annotation_validation() {
    let Some(root) = corpus() else { return };
    let text = std::fs::read_to_string(root.join("cases.json")).expect("cases.json");
    let cases: Value = serde_json::from_str(&text).expect("cases.json parses");
    let (mut failed, mut passed) = (0, 0);
    for case in cases.as_array().expect("array") {
        let input = std::fs::read_to_string(root.join(case["input"].as_str().expect("input")))
            .expect("input");
        let mut maps = Vec::new();
        yaml_docs(&input)
            .iter()
            .for_each(|d| pod_annotations(d, &mut maps));
        let results: Vec<_> = maps.iter().map(validate_annotations).collect();
        match case["expected_error"].as_str() {
            Some(want) => {
                let msg = results
                    .iter()
                    .find_map(|r| r.as_ref().err())
                    .unwrap_or_else(|| panic!("{}: no validation error", case["name"]))
                    .to_string();
                assert!(msg.to_lowercase().contains(want), "{}: {msg}", case["name"]);
                failed += 1;
            }
            None => {
                for r in &results {
                    assert!(r.is_ok(), "{}: {:?}", case["name"], r);
                }
                passed += 1;
            }
        }
    }
    assert_eq!(failed, 4);
    assert!(passed >= 100);
}

#[test]
fn no_panics_on_random_annotation_values() {
    const ALPHABET: &[char] = &[
        '0', '1', '9', '.', ':', '/', '%', ',', '*', ' ', 'a', 'f', 'é', '-', '_', '[', ']', '\n',
        'K', 'i', 'e', '+',
    ];
    let mut state: u64 = 11;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    for _ in 0..5000 {
        let len = next() % 24;
        let value: String = (0..len)
            .map(|_| ALPHABET[next() % ALPHABET.len()])
            .collect();
        for (name, check) in checks() {
            if name != "proxy.istio.io/config" {
                let _ = check(&value);
            }
        }
        let _ = parse_prefix(&value);
        let _ = crate::mesh::validate_proxy_address(&value);
    }
}
