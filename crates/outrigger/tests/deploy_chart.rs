//! charts/outrigger, with real Helm (Helm's Go SDK, PyPI `helm-python-sdk`, driven by
//! `tools/chart.py`): `helm lint --strict` is clean; the default render is the install of
//! `kubectl kustomize deploy/base`; every render is schema-valid for Kubernetes 1.29–1.34
//! (`kubernetes-validate --strict`) and its custom resources valid against their CRDs' schemas
//! (`tests/fixtures/crd-schemas`); contradictory values are refused naming the values; the
//! alert rules pass `promtool test rules`; every metric the rules and the dashboard query is
//! exported by the server or listed as external with its source; every render is installed into
//! the fake API server and its server run behind kube-apiserver's admission chain
//! (`chart_install`: pods selected and not, the webhook's settings as applied, RBAC enforced).
//! Each test is reported ignored without its tools and fails under CI (tests/harness).

mod chart_install;
mod common;
mod harness;
mod support_validate;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::Need;
use serde_json::{json, Value};
use support_validate::{kubernetes_validate_at, kustomize};

fn main() {
    let helm: &'static [Need] = &[Need::Helm];
    let mut trials = trials![
        helm => [
            chart_lints_clean_in_strict_mode,
            contradictory_values_are_refused_naming_them,
            the_prometheus_rule_is_the_shipped_rules_file,
            every_render_installs_and_admits_through_the_admission_chain,
        ],
        &[Need::Helm, Need::Kubectl] => [default_render_is_the_kustomize_base],
        &[Need::Helm, Need::KubernetesValidate] => [renders_are_schema_valid_on_kubernetes_1_29_to_1_34],
        &[Need::Promtool] => [alert_rules_pass_promtool_unit_tests],
        &[] => [
            every_value_is_typed_described_and_closed,
            chart_versions_follow_the_crate,
            match_conditions_file_is_what_webhook_config_prints,
            every_queried_metric_is_exported_or_external,
        ],
    ];
    trials.sort_by(|a, b| a.name().cmp(b.name()));
    harness::run(trials);
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chart_dir() -> PathBuf {
    root().join("charts/outrigger")
}

/// `tools/chart.py ARGS`: (success, stdout, stderr).
fn chart_py(args: &[&str]) -> (bool, String, String) {
    let out = Command::new("python3")
        .arg(root().join("tools/chart.py"))
        .args(args)
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("UTF-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The chart rendered with `values` (release and namespace `outrigger`), as documents.
fn render(values: Value) -> Vec<Value> {
    render_as(values, "outrigger", "outrigger")
}

/// The chart rendered with `values` as release `release` in namespace `ns`, as documents.
fn render_as(values: Value, release: &str, ns: &str) -> Vec<Value> {
    let chart = chart_dir().display().to_string();
    let (ok, out, err) = chart_py(&["render", &chart, &values.to_string(), release, ns]);
    assert!(ok, "helm render with {values}: {err}");
    docs(&out)
}

/// The renders the tests make: (name, values, release, namespace). Every optional object, both
/// certificate modes (the chart's own issuer and a ClusterIssuer of the user's), the takeover,
/// the webhook's settings away from their defaults (failing open, a longer timeout,
/// matchConditions, excluded namespaces, a revision with outrigger's own selector, one replica
/// without a budget, the pod watch), the embedded configuration, and another release name in
/// another namespace.
fn renders() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    vec![
        ("default", json!({}), "outrigger", "outrigger"),
        ("everything", everything(), "outrigger", "outrigger"),
        (
            "takeover",
            json!({"takeover": {"enabled": true}}),
            "outrigger",
            "outrigger",
        ),
        (
            "podmonitor",
            json!({"metrics": {"podMonitor": {"enabled": true}}}),
            "outrigger",
            "outrigger",
        ),
        (
            "cluster-issuer",
            json!({"certificates": {"mode": "certManager", "certManager": {"issuerRef":
                {"name": "cluster-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}}}}),
            "outrigger",
            "outrigger",
        ),
        (
            "webhook-settings",
            json!({"revision": "canary", "selectorRevision": "canary-outrigger",
                   "webhook": {"failurePolicy": "Ignore", "timeoutSeconds": 10,
                               "matchConditions": true, "excludeNamespaces": ["legacy", "batch"],
                               "namespaceSelector": {"matchLabels": {"team": "payments"}},
                               "objectSelector": {"matchExpressions":
                                   [{"key": "mesh", "operator": "NotIn", "values": ["off"]}]}},
                   "replicaCount": 1, "podDisruptionBudget": {"enabled": false},
                   "podWatch": {"enabled": true}, "probe": {"interval": "2s"}}),
            "outrigger",
            "outrigger",
        ),
        (
            "embedded",
            json!({"istio": {"configMaps": false}}),
            "outrigger",
            "outrigger",
        ),
        ("other-release", everything(), "mesh", "mesh-system"),
    ]
}

fn docs(text: &str) -> Vec<Value> {
    outrigger_go::yaml::split_documents(text)
        .expect("a YAML stream")
        .iter()
        .map(|d| outrigger_go::yaml::from_str(d).expect("YAML"))
        .filter(|d: &Value| !d.is_null())
        .collect()
}

/// Objects by (kind, namespace, name).
fn by_key(objects: Vec<Value>) -> BTreeMap<(String, String, String), Value> {
    objects
        .into_iter()
        .map(|o| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            let m = &o["metadata"];
            ((s(&o["kind"]), s(&m["namespace"]), s(&m["name"])), o)
        })
        .collect()
}

/// Every optional object of the chart turned on.
fn everything() -> Value {
    json!({
        "metrics": {"serviceMonitor": {"enabled": true}, "prometheusRule": {"enabled": true},
                    "dashboard": {"enabled": true}},
        "certificates": {"mode": "certManager"},
        "networkPolicy": {"enabled": true},
        "probe": {"interval": "1m"},
        "webhook": {"matchConditions": true, "excludeNamespaces": ["legacy"]},
        "image": {"digest": format!("sha256:{}", "a".repeat(64))},
    })
}

fn chart_lints_clean_in_strict_mode() {
    let (ok, out, err) = chart_py(&["lint", &chart_dir().display().to_string()]);
    assert!(ok, "helm lint: {err}");
    let report: Value = serde_json::from_str(&out).expect("lint JSON");
    assert_eq!(report["errors"], json!([]), "{out}");
    // Helm's severities: 1 info, 2 warning, 3 error. Strict mode fails on warnings too.
    let loud: Vec<&Value> = report["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["severity"].as_i64().unwrap_or(3) >= 2)
        .collect();
    assert!(loud.is_empty(), "lint warnings or errors: {loud:?}");
}

fn default_render_is_the_kustomize_base() {
    // The default install, and the takeover: the chart's value and kustomize's overlay.
    for (values, overlay) in [
        (json!({}), "base"),
        (json!({"takeover": {"enabled": true}}), "overlays/takeover"),
    ] {
        let chart = by_key(render(values.clone()));
        let mut base = by_key(docs(&kustomize(overlay)));
        // Helm installs into a namespace it is given (`helm install -n outrigger --create-namespace`).
        base.remove(&("Namespace".into(), "".into(), "outrigger".into()));
        let chart_keys: BTreeSet<_> = chart.keys().collect();
        let base_keys: BTreeSet<_> = base.keys().collect();
        assert_eq!(
            chart_keys, base_keys,
            "{values} and {overlay}: the same objects"
        );
        for (key, object) in &base {
            let mut differences = Vec::new();
            differ("", &chart[key], object, &mut differences);
            assert!(
                differences.is_empty(),
                "{key:?}: the chart with {values} renders it otherwise than deploy/{overlay} has it \
                 (chart | kustomize):\n{}",
                differences.join("\n")
            );
        }
    }
}

/// The JSON Pointers at which `a` and `b` differ, with both values.
fn differ(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                differ(&format!("{at}/{k}"), va, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                differ(&format!("{at}/{i}"), va, vb, out);
            }
        }
        _ if a != b => out.push(format!("  {at}: {a} | {b}")),
        _ => {}
    }
}

fn renders_are_schema_valid_on_kubernetes_1_29_to_1_34() {
    let dir = common::scratch("chart-validate");
    let mut files = Vec::new();
    for (name, values, release, ns) in renders() {
        let objects = render_as(values, release, ns);
        let text: String = objects
            .iter()
            .map(|o| format!("---\n{}\n", serde_json::to_string(o).expect("JSON")))
            .collect();
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, text).expect("write render");
        let (ok, report, err) = chart_py(&[
            "validate",
            &root()
                .join("tests/fixtures/crd-schemas")
                .display()
                .to_string(),
            &path.display().to_string(),
        ]);
        assert!(ok, "{name}: custom resources: {report}{err}");
        files.push(path);
    }
    for minor in 29..=34 {
        let (ok, report) = kubernetes_validate_at(&format!("1.{minor}.0"), &files);
        assert!(ok, "Kubernetes 1.{minor}: {report}");
    }
}

/// Every render installed into the fake API server and run behind its admission chain
/// (`chart_install`), the renders side by side.
fn every_render_installs_and_admits_through_the_admission_chain() {
    let renders: Vec<_> = renders()
        .into_iter()
        .map(|(name, values, release, ns)| {
            let objects = render_as(values.clone(), release, ns);
            (name, values, ns, objects)
        })
        .collect();
    let root = root();
    std::thread::scope(|scope| {
        for (name, values, ns, objects) in &renders {
            let root = &root;
            scope.spawn(move || {
                chart_install::install_and_admit(name, values, ns, objects, root);
                eprintln!("{name}: installed, pods admitted as the values say");
            });
        }
    });
}

fn contradictory_values_are_refused_naming_them() {
    let chart = chart_dir().display().to_string();
    let cases = [
        (
            json!({"takeover": {"enabled": true}, "revision": "canary"}),
            "cannot serve revision \"canary\"",
        ),
        (
            json!({"selectorRevision": "default"}),
            "set takeover.enabled=true instead",
        ),
        (
            json!({"takeover": {"enabled": true}, "selectorRevision": "mine"}),
            "selectorRevision cannot be set with it",
        ),
        (
            json!({"replicaCount": 1, "podDisruptionBudget": {"enabled": false}}),
            "single replica and no PodDisruptionBudget",
        ),
        (
            json!({"webhook": {"timeoutSeconds": 31}}),
            "/webhook/timeoutSeconds",
        ),
        (
            json!({"replicas": 3}),
            "additional properties 'replicas' not allowed",
        ),
        (json!({"revision": "Not_A_Label"}), "/revision"),
        (
            json!({"webhook": {"failurePolicy": "Sometimes"}}),
            "/webhook/failurePolicy",
        ),
        (json!({"image": {"digest": "latest"}}), "/image/digest"),
        (
            json!({"webhook": {"namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}}}}),
            "webhook.namespaceSelector cannot name istio-injection",
        ),
        (
            json!({"webhook": {"objectSelector": {"matchExpressions":
                [{"key": "istio.io/rev", "operator": "Exists"}]}}}),
            "webhook.objectSelector cannot name istio.io/rev",
        ),
        (
            json!({"webhook": {"namespaceSelector": {"matchExpressions":
                [{"key": "team", "operator": "In"}]}}}),
            "missing property 'values'",
        ),
        (
            json!({"replicaCount": 1}),
            "the PodDisruptionBudget (maxUnavailable 1) still lets that replica be evicted",
        ),
        (
            json!({"metrics": {"port": 9443}}),
            "metrics.port 9443 is taken",
        ),
        (
            json!({"revision": "canary", "istio": {"configMaps": false}}),
            "istio.configMaps=false serves the embedded configuration",
        ),
        (
            json!({"probe": {"interval": "1m", "namespace": "legacy"},
                   "webhook": {"excludeNamespaces": ["legacy"]}}),
            "probe.namespace \"legacy\" is a namespace the webhook never selects",
        ),
        (
            json!({"probe": {"interval": "1m"},
                   "webhook": {"objectSelector": {"matchLabels": {"mesh": "on"}}}}),
            "requirement on mesh would leave it uninjected",
        ),
        (
            json!({"metrics": {"serviceMonitor": {"enabled": true}, "podMonitor": {"enabled": true}}}),
            "enable one",
        ),
    ];
    for (values, expected) in cases {
        let (ok, _, err) = chart_py(&["render", &chart, &values.to_string()]);
        assert!(!ok, "{values} was accepted");
        assert!(
            err.contains(expected),
            "{values}: {expected:?} not in:\n{err}"
        );
    }
}

fn the_prometheus_rule_is_the_shipped_rules_file() {
    let objects = by_key(render(
        json!({"metrics": {"prometheusRule": {"enabled": true}}}),
    ));
    let rule = &objects[&(
        "PrometheusRule".to_string(),
        "outrigger".to_string(),
        "outrigger".to_string(),
    )];
    let file = std::fs::read_to_string(chart_dir().join("files/outrigger-alerts.yaml"))
        .expect("rules file");
    let shipped: Value = outrigger_go::yaml::from_str(&file).expect("rules YAML");
    assert_eq!(
        rule["spec"], shipped,
        "release outrigger in namespace outrigger"
    );
    // Another release in another namespace: the rules read its names.
    let chart = chart_dir().display().to_string();
    let values = json!({"metrics": {"prometheusRule": {"enabled": true}}}).to_string();
    let (ok, out, err) = chart_py(&["render", &chart, &values, "mesh", "mesh-system"]);
    assert!(ok, "{err}");
    let text = serde_json::to_string(
        &by_key(docs(&out))[&(
            "PrometheusRule".to_string(),
            "mesh-system".to_string(),
            "mesh-outrigger".to_string(),
        )]["spec"],
    )
    .expect("JSON");
    assert!(text.contains(r#"job=\"mesh-outrigger\""#), "{text}");
    assert!(text.contains(r#"namespace=\"mesh-system\""#), "{text}");
    assert!(!text.contains(r#"job=\"outrigger\""#), "{text}");
}

fn alert_rules_pass_promtool_unit_tests() {
    let rules = chart_dir().join("files/outrigger-alerts.yaml");
    let check = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&rules)
        .output()
        .expect("promtool");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let test = Command::new("promtool")
        .args([
            "test",
            "rules",
            "tests/monitoring/outrigger-alerts.test.yaml",
        ])
        .current_dir(root())
        .output()
        .expect("promtool");
    assert!(
        test.status.success(),
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
}

/// `values.schema.json`: every value typed and described, every object closed to unknown keys
/// (`additionalProperties`) but the Kubernetes types passed through as they are (checked in the
/// renders by `kubernetes-validate`), and every key of `values.yaml` described by it.
fn every_value_is_typed_described_and_closed() {
    const PASSED_THROUGH: &[&str] = &[
        "/global",
        "/affinity",
        "/tolerations/items",
        "/topologySpreadConstraints/items",
    ];
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(chart_dir().join("values.schema.json")).expect("schema"),
    )
    .expect("schema JSON");
    fn walk(node: &Value, at: &str, faults: &mut Vec<String>) {
        if node["type"] == "object"
            && node.get("additionalProperties").is_none()
            && !PASSED_THROUGH.contains(&at)
        {
            faults.push(format!("{at}: open to unknown keys"));
        }
        for (key, value) in node["properties"].as_object().into_iter().flatten() {
            let here = format!("{at}/{key}");
            for field in ["type", "description"] {
                if value.get(field).is_none() {
                    faults.push(format!("{here}: no {field}"));
                }
            }
            walk(value, &here, faults);
        }
        if node["items"].is_object() {
            walk(&node["items"], &format!("{at}/items"), faults);
        }
    }
    let mut faults = Vec::new();
    walk(&schema, "", &mut faults);
    let text = std::fs::read_to_string(chart_dir().join("values.yaml")).expect("values.yaml");
    let values: Value = outrigger_go::yaml::from_str(&text).expect("YAML");
    fn described(values: &Value, schema: &Value, at: &str, faults: &mut Vec<String>) {
        for (key, value) in values.as_object().into_iter().flatten() {
            let Some(node) = schema["properties"].get(key) else {
                if schema["additionalProperties"] == false {
                    faults.push(format!("values.yaml {at}/{key}: not in the schema"));
                }
                continue;
            };
            described(value, node, &format!("{at}/{key}"), faults);
        }
    }
    described(&values, &schema, "", &mut faults);
    assert!(faults.is_empty(), "{faults:#?}");
}

fn chart_versions_follow_the_crate() {
    let text = std::fs::read_to_string(chart_dir().join("Chart.yaml")).expect("Chart.yaml");
    let chart: Value = outrigger_go::yaml::from_str(&text).expect("YAML");
    assert_eq!(chart["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(chart["appVersion"], env!("CARGO_PKG_VERSION"));
}

fn match_conditions_file_is_what_webhook_config_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["webhook-config", "--match-conditions"])
        .output()
        .expect("outrigger runs");
    assert!(out.status.success());
    let printed: Value =
        outrigger_go::yaml::from_str(&String::from_utf8(out.stdout).expect("UTF-8")).expect("YAML");
    let file = std::fs::read_to_string(chart_dir().join("files/match-conditions.yaml"))
        .expect("match-conditions.yaml");
    let shipped: Value = outrigger_go::yaml::from_str(&file).expect("YAML");
    for entry in printed["webhooks"].as_array().expect("entries") {
        assert_eq!(entry["matchConditions"], shipped, "{}", entry["name"]);
    }
}

/// Metrics the rules and the dashboard read that outrigger does not export, with their source.
const EXTERNAL: &[(&str, &str)] = &[
    ("up", "Prometheus, per scrape target"),
    (
        "apiserver_admission_webhook_rejection_count",
        "kube-apiserver",
    ),
    (
        "apiserver_admission_webhook_fail_open_count",
        "kube-apiserver",
    ),
    (
        "kube_deployment_status_replicas_available",
        "kube-state-metrics",
    ),
];

/// The metric names a PromQL expression reads: identifiers that are neither functions,
/// keywords, label names (inside `{}` or a `by`/`without`/`on`/`ignoring` list), durations,
/// numbers, Grafana variables nor strings.
fn metric_names(expr: &str) -> BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
        "sum",
        "min",
        "max",
        "avg",
        "count",
        "group",
        "stddev",
        "stdvar",
        "topk",
        "bottomk",
        "quantile",
        "count_values",
    ];
    const GROUPING: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let chars: Vec<char> = expr.chars().collect();
    let skip_to = |from: usize, end: char| {
        let mut j = from;
        while j < chars.len() && chars[j] != end {
            j += 1;
        }
        j
    };
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
        } else if c == '{' {
            i = skip_to(i, '}');
        } else if c == '[' {
            i = skip_to(i, ']');
        } else if c == '$' || c.is_ascii_digit() {
            while i + 1 < chars.len() && (ident(chars[i + 1]) || chars[i + 1] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i + 1 < chars.len() && ident(chars[i + 1]) {
                i += 1;
            }
            let word: String = chars[start..=i].iter().collect();
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace()).copied();
            if GROUPING.contains(&word.as_str()) {
                if next == Some('(') {
                    i = skip_to(i, ')');
                }
            } else if next != Some('(') && !KEYWORDS.contains(&word.to_ascii_lowercase().as_str()) {
                names.insert(word);
            }
        }
        i += 1;
    }
    names
}

/// The families a running server exports (`# TYPE` lines), with the sample names each gives.
fn exported() -> BTreeSet<String> {
    let (server, ca) = common::server::start_embedded("chart-metrics", &[]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let text = runtime.block_on(async {
        let client = common::H2::connect(server.addr, &ca)
            .await
            .expect("connect");
        common::metrics(&client).await
    });
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            match kind {
                // The text format names counters with `_total`; OpenMetrics' TYPE line without.
                "counter" if name.ends_with("_total") => {
                    names.insert(name.to_string());
                }
                "counter" => {
                    names.insert(format!("{name}_total"));
                }
                "histogram" => {
                    for suffix in ["_bucket", "_sum", "_count"] {
                        names.insert(format!("{name}{suffix}"));
                    }
                }
                _ => {
                    names.insert(name.to_string());
                }
            }
        }
    }
    names
}

fn every_queried_metric_is_exported_or_external() {
    let rules =
        std::fs::read_to_string(chart_dir().join("files/outrigger-alerts.yaml")).expect("rules");
    let rules: Value = outrigger_go::yaml::from_str(&rules).expect("YAML");
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(chart_dir().join("files/outrigger-dashboard.json"))
            .expect("dashboard"),
    )
    .expect("dashboard JSON");
    let mut exprs = Vec::new();
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            exprs.push(rule["expr"].as_str().expect("expr").to_string());
        }
    }
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            exprs.push(target["expr"].as_str().expect("expr").to_string());
        }
    }
    assert!(exprs.len() >= 20, "{} expressions", exprs.len());
    let exported = exported();
    let external: BTreeSet<&str> = EXTERNAL.iter().map(|(m, _)| *m).collect();
    let mut missing = Vec::new();
    let mut read = BTreeSet::new();
    for expr in &exprs {
        for name in metric_names(expr) {
            if !exported.contains(&name) && !external.contains(name.as_str()) {
                missing.push(format!("{name} (in {expr})"));
            }
            read.insert(name);
        }
    }
    assert!(
        missing.is_empty(),
        "not exported and not listed as external: {missing:#?}\nexported: {exported:?}"
    );
    for (name, source) in EXTERNAL {
        assert!(
            read.contains(*name),
            "{name} ({source}) is listed but never read"
        );
    }
}
