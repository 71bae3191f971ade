//! `outrigger webhook-config`: the MutatingWebhookConfiguration Istio's chart installs (spec §2.3).
//!
//! The object is built as a JSON tree by [`build`] from [`WebhookOptions`]; [`entries`] gives the
//! webhook entries alone so `outrigger check` evaluates exactly the selectors that are installed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use base64::Engine;
use serde_json::{json, Map, Value};

/// Suffix shared by every injection webhook entry name (and what the CA patcher looks for).
pub const ENTRY_SUFFIX: &str = "sidecar-injector.istio.io";
/// The Istio namespace that the chart's naming treats as the default release namespace.
pub const ISTIO_SYSTEM: &str = "istio-system";
/// Namespaces the `auto.` entry never selects (the injector's ignored namespaces, spec §0.4).
pub const AUTO_EXCLUDED: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

/// Output format of generated objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// YAML (keys in Kubernetes' conventional order).
    Yaml,
    /// Indented JSON.
    Json,
}

/// `failurePolicy` of the webhook entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailurePolicy {
    /// Reject the pod when the injector cannot be reached (the chart's choice).
    #[value(name = "Fail")]
    Fail,
    /// Admit the pod uninjected when the injector cannot be reached.
    #[value(name = "Ignore")]
    Ignore,
}

impl FailurePolicy {
    fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// `reinvocationPolicy` of the webhook entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReinvocationPolicy {
    /// Call the injector once (the chart's default).
    #[value(name = "Never")]
    Never,
    /// Call the injector again when a later webhook changed the pod.
    #[value(name = "IfNeeded")]
    IfNeeded,
}

impl ReinvocationPolicy {
    fn as_str(self) -> &'static str {
        match self {
            ReinvocationPolicy::Never => "Never",
            ReinvocationPolicy::IfNeeded => "IfNeeded",
        }
    }
}

/// Flags of `outrigger webhook-config`.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookConfigArgs {
    /// Control plane revision served by this injector (empty or `default`: the default revision).
    #[arg(long = "revision", default_value = "")]
    pub revision: String,
    /// Service in front of the injector, as NAMESPACE/NAME (default istio-system/istiod[-REVISION]).
    #[arg(long = "service")]
    pub service: Option<String>,
    /// Service port the API server calls.
    #[arg(long = "port", default_value_t = 443)]
    pub port: u16,
    /// HTTP path of the injection endpoint.
    #[arg(long = "path", default_value = "/inject")]
    pub path: String,
    /// Name of the MutatingWebhookConfiguration (default: the chart's naming).
    #[arg(long = "name")]
    pub name: Option<String>,
    /// PEM file whose certificates become the `caBundle` of every entry.
    #[arg(long = "ca-bundle-file", visible_alias = "caBundleFile")]
    pub ca_bundle_file: Option<PathBuf>,
    /// failurePolicy of every entry.
    #[arg(
        long = "failure-policy",
        visible_alias = "failurePolicy",
        value_enum,
        default_value = "Fail"
    )]
    pub failure_policy: FailurePolicy,
    /// timeoutSeconds of every entry (1-30; unset: the API server's default of 10).
    #[arg(long = "timeout", value_parser = clap::value_parser!(u8).range(1..=30))]
    pub timeout: Option<u8>,
    /// reinvocationPolicy of every entry.
    #[arg(
        long = "reinvocation-policy",
        visible_alias = "reinvocationPolicy",
        value_enum,
        default_value = "Never"
    )]
    pub reinvocation_policy: ReinvocationPolicy,
    /// Also inject every pod of unlabelled namespaces (the chart's `auto.` entry; default revision only).
    #[arg(
        long = "enable-namespaces-by-default",
        visible_alias = "enableNamespacesByDefault"
    )]
    pub enable_namespaces_by_default: bool,
    /// Namespaces never sent to the injector (added to every entry's namespaceSelector), comma-separated.
    #[arg(
        long = "exclude-namespaces",
        visible_alias = "excludeNamespaces",
        value_delimiter = ','
    )]
    pub exclude_namespaces: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: OutputFormat,
}

/// Everything that shapes the generated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// Revision (`""` and `default` are the default revision).
    pub revision: String,
    /// Namespace of the injector's Service.
    pub service_namespace: String,
    /// Name of the injector's Service.
    pub service_name: String,
    /// Service port.
    pub port: u16,
    /// Injection path.
    pub path: String,
    /// Object name override.
    pub name: Option<String>,
    /// PEM CA bundle (raw text, base64-encoded into the object).
    pub ca_bundle: Option<Vec<u8>>,
    /// `Fail` or `Ignore`.
    pub failure_policy: FailurePolicy,
    /// timeoutSeconds.
    pub timeout: Option<u8>,
    /// `Never` or `IfNeeded`.
    pub reinvocation_policy: ReinvocationPolicy,
    /// Render the `auto.` entry (default revision only).
    pub enable_namespaces_by_default: bool,
    /// Namespaces excluded from every entry.
    pub exclude_namespaces: Vec<String>,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        WebhookOptions {
            revision: String::new(),
            service_namespace: ISTIO_SYSTEM.into(),
            service_name: "istiod".into(),
            port: 443,
            path: "/inject".into(),
            name: None,
            ca_bundle: None,
            failure_policy: FailurePolicy::Fail,
            timeout: None,
            reinvocation_policy: ReinvocationPolicy::Never,
            enable_namespaces_by_default: false,
            exclude_namespaces: Vec::new(),
        }
    }
}

impl WebhookOptions {
    /// Options from the command-line flags (reads the CA bundle file).
    pub fn from_args(args: &WebhookConfigArgs) -> Result<WebhookOptions> {
        let revision = args.revision.clone();
        let (service_namespace, service_name) = match &args.service {
            Some(s) => parse_namespaced(s).with_context(|| format!("--service {s:?}"))?,
            None => (ISTIO_SYSTEM.to_string(), with_revision("istiod", &revision)),
        };
        if !args.path.starts_with('/') {
            bail!("--path {:?} must start with '/'", args.path);
        }
        let ca_bundle = match &args.ca_bundle_file {
            Some(p) => Some(read_ca_bundle(p)?),
            None => None,
        };
        Ok(WebhookOptions {
            revision,
            service_namespace,
            service_name,
            port: args.port,
            path: args.path.clone(),
            name: args.name.clone(),
            ca_bundle,
            failure_policy: args.failure_policy,
            timeout: args.timeout,
            reinvocation_policy: args.reinvocation_policy,
            enable_namespaces_by_default: args.enable_namespaces_by_default,
            exclude_namespaces: args
                .exclude_namespaces
                .iter()
                .filter(|n| !n.is_empty())
                .cloned()
                .collect(),
        })
    }

    /// The revision as selectors see it: `default` when empty.
    pub fn revision_label(&self) -> &str {
        if self.revision.is_empty() {
            "default"
        } else {
            &self.revision
        }
    }

    /// Whether this is the default revision (renders `namespace.`, `object.` and `auto.`).
    pub fn is_default_revision(&self) -> bool {
        self.revision_label() == "default"
    }

    /// Object name: `istio-sidecar-injector[-REV][-NS]` as the chart names it, or the override.
    pub fn object_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        let rev = if self.is_default_revision() {
            ""
        } else {
            self.revision.as_str()
        };
        let mut name = with_revision("istio-sidecar-injector", rev);
        if self.service_namespace != ISTIO_SYSTEM {
            name.push('-');
            name.push_str(&self.service_namespace);
        }
        name
    }
}

fn with_revision(base: &str, revision: &str) -> String {
    if revision.is_empty() || revision == "default" {
        base.to_string()
    } else {
        format!("{base}-{revision}")
    }
}

/// Split `NAMESPACE/NAME`, both parts non-empty.
pub fn parse_namespaced(s: &str) -> Result<(String, String)> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => bail!("expected NAMESPACE/NAME"),
    }
}

/// Read a PEM bundle and check that it holds at least one certificate.
pub fn read_ca_bundle(path: &std::path::Path) -> Result<Vec<u8>> {
    let bytes =
        std::fs::read(path).with_context(|| format!("reading CA bundle {}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    if !text.contains("-----BEGIN CERTIFICATE-----") {
        bail!(
            "CA bundle {} holds no PEM CERTIFICATE block",
            path.display()
        );
    }
    Ok(bytes)
}

/// A selector requirement `{key, operator, values}` (values omitted for the existence operators).
fn req(key: &str, operator: &str, values: &[&str]) -> Value {
    let mut m = Map::new();
    m.insert("key".into(), json!(key));
    m.insert("operator".into(), json!(operator));
    if !values.is_empty() {
        m.insert("values".into(), json!(values));
    }
    Value::Object(m)
}

fn selector(reqs: Vec<Value>) -> Value {
    json!({ "matchExpressions": reqs })
}

/// The (prefix, namespaceSelector requirements, objectSelector requirements) of every rendered entry.
fn selector_table(o: &WebhookOptions) -> Vec<(&'static str, Vec<Value>, Vec<Value>)> {
    let rev = o.revision_label();
    let mut out = vec![
        (
            "rev.namespace.",
            vec![
                req("istio.io/rev", "In", &[rev]),
                req("istio-injection", "DoesNotExist", &[]),
            ],
            vec![req("sidecar.istio.io/inject", "NotIn", &["false"])],
        ),
        (
            "rev.object.",
            vec![
                req("istio.io/rev", "DoesNotExist", &[]),
                req("istio-injection", "DoesNotExist", &[]),
            ],
            vec![
                req("sidecar.istio.io/inject", "NotIn", &["false"]),
                req("istio.io/rev", "In", &[rev]),
            ],
        ),
    ];
    if !o.is_default_revision() {
        return out;
    }
    out.push((
        "namespace.",
        vec![req("istio-injection", "In", &["enabled"])],
        vec![req("sidecar.istio.io/inject", "NotIn", &["false"])],
    ));
    out.push((
        "object.",
        vec![
            req("istio-injection", "DoesNotExist", &[]),
            req("istio.io/rev", "DoesNotExist", &[]),
        ],
        vec![
            req("sidecar.istio.io/inject", "In", &["true"]),
            req("istio.io/rev", "DoesNotExist", &[]),
        ],
    ));
    if o.enable_namespaces_by_default {
        out.push((
            "auto.",
            vec![
                req("istio-injection", "DoesNotExist", &[]),
                req("istio.io/rev", "DoesNotExist", &[]),
                req("kubernetes.io/metadata.name", "NotIn", &AUTO_EXCLUDED),
            ],
            vec![
                req("sidecar.istio.io/inject", "DoesNotExist", &[]),
                req("istio.io/rev", "DoesNotExist", &[]),
            ],
        ));
    }
    out
}

fn client_config(o: &WebhookOptions) -> Value {
    let mut cc = Map::new();
    cc.insert(
        "service".into(),
        json!({"name": o.service_name, "namespace": o.service_namespace, "path": o.path, "port": o.port}),
    );
    if let Some(ca) = &o.ca_bundle {
        cc.insert(
            "caBundle".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(ca)),
        );
    }
    Value::Object(cc)
}

/// The webhook entries (spec §2.3 table), in the chart's order.
pub fn entries(o: &WebhookOptions) -> Vec<Value> {
    let excluded: Vec<&str> = o.exclude_namespaces.iter().map(String::as_str).collect();
    selector_table(o)
        .into_iter()
        .map(|(prefix, mut ns_reqs, obj_reqs)| {
            if !excluded.is_empty() {
                ns_reqs.push(req("kubernetes.io/metadata.name", "NotIn", &excluded));
            }
            let mut w = Map::new();
            w.insert("name".into(), json!(format!("{prefix}{ENTRY_SUFFIX}")));
            w.insert("admissionReviewVersions".into(), json!(["v1", "v1beta1"]));
            w.insert("clientConfig".into(), client_config(o));
            w.insert("failurePolicy".into(), json!(o.failure_policy.as_str()));
            w.insert("namespaceSelector".into(), selector(ns_reqs));
            w.insert("objectSelector".into(), selector(obj_reqs));
            w.insert("reinvocationPolicy".into(), json!(o.reinvocation_policy.as_str()));
            w.insert(
                "rules".into(),
                json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]),
            );
            w.insert("sideEffects".into(), json!("None"));
            if let Some(t) = o.timeout {
                w.insert("timeoutSeconds".into(), json!(t));
            }
            Value::Object(w)
        })
        .collect()
}

/// The whole MutatingWebhookConfiguration object.
pub fn build(o: &WebhookOptions) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": o.object_name(),
            "labels": {
                "app": "sidecar-injector",
                "app.kubernetes.io/name": "outrigger",
                "app.kubernetes.io/component": "sidecar-injector",
                "istio.io/rev": o.revision_label(),
            },
        },
        "webhooks": entries(o),
    })
}

/// Serialise in the requested format (both end with a newline).
pub fn render(v: &Value, format: OutputFormat) -> Result<String> {
    Ok(match format {
        OutputFormat::Json => serde_json::to_string_pretty(v).context("encoding JSON")? + "\n",
        OutputFormat::Yaml => to_yaml(v),
    })
}

/// Block-style YAML of a JSON tree, keys in their insertion order (Kubernetes' conventional
/// `apiVersion, kind, metadata, ...`). Strings that YAML 1.1 could read as anything but the same
/// string are double-quoted (JSON quoting is valid YAML).
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => yaml_map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => yaml_seq(&mut out, a, 0),
        other => {
            out.push_str(&yaml_scalar(other));
            out.push('\n');
        }
    }
    out
}

fn yaml_map(out: &mut String, m: &Map<String, Value>, indent: usize) {
    for (k, v) in m {
        out.push_str(&" ".repeat(indent));
        out.push_str(&yaml_string(k));
        out.push(':');
        yaml_value_after_key(out, v, indent);
    }
}

fn yaml_value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml_map(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml_seq(out, a, indent);
        }
        other => {
            out.push(' ');
            out.push_str(&yaml_scalar(other));
            out.push('\n');
        }
    }
}

fn yaml_seq(out: &mut String, a: &[Value], indent: usize) {
    for item in a {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => {
                // First key on the dash line, the rest aligned under it.
                let mut first = true;
                for (k, v) in m {
                    if !first {
                        out.push_str(&" ".repeat(indent + 2));
                    }
                    first = false;
                    out.push_str(&yaml_string(k));
                    out.push(':');
                    yaml_value_after_key(out, v, indent + 2);
                }
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                yaml_seq(out, inner, indent + 2);
            }
            other => {
                out.push_str(&yaml_scalar(other));
                out.push('\n');
            }
        }
    }
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// Plain when unambiguous, else a JSON (= YAML double-quoted) string.
fn yaml_string(s: &str) -> String {
    const SPECIAL: [&str; 12] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf",
    ];
    let plain_chars = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'));
    let first_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '_');
    if plain_chars && first_ok && !SPECIAL.contains(&s.to_ascii_lowercase().as_str()) {
        s.to_string()
    } else {
        serde_json::Value::String(s.to_string()).to_string()
    }
}

/// Why `--enable-namespaces-by-default` renders nothing with these options, if it does not: the
/// chart's `auto.` entry exists for the default revision only.
pub fn auto_entry_dropped(o: &WebhookOptions) -> Option<String> {
    (o.enable_namespaces_by_default && !o.is_default_revision()).then(|| {
        format!(
            "warning: --enable-namespaces-by-default has no effect with --revision {}: the `auto.` \
             entry exists for the default revision only (as in Istio's chart); label namespaces \
             istio.io/rev={} instead",
            o.revision, o.revision
        )
    })
}

/// Run `outrigger webhook-config`.
pub fn run(args: &WebhookConfigArgs) -> Result<()> {
    let opts = WebhookOptions::from_args(args)?;
    if let Some(w) = auto_entry_dropped(&opts) {
        eprintln!("{w}");
    }
    let text = render(&build(&opts), args.output)?;
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing standard output")
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrigger_inject::decision::LabelSelector;

    fn names(o: &WebhookOptions) -> Vec<String> {
        entries(o)
            .iter()
            .map(|w| w["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn matches(sel: &Value, labels: Value) -> bool {
        let s = LabelSelector::from_json(sel).expect("generated selectors are valid");
        s.matches(labels.as_object().expect("labels object"))
    }

    fn entry(o: &WebhookOptions, prefix: &str) -> Value {
        entries(o)
            .into_iter()
            .find(|w| w["name"] == json!(format!("{prefix}{ENTRY_SUFFIX}")))
            .expect("entry rendered")
    }

    #[test]
    fn default_revision_renders_four_entries_in_chart_order() {
        let o = WebhookOptions::default();
        assert_eq!(
            names(&o),
            [
                "rev.namespace.sidecar-injector.istio.io",
                "rev.object.sidecar-injector.istio.io",
                "namespace.sidecar-injector.istio.io",
                "object.sidecar-injector.istio.io"
            ]
        );
    }

    #[test]
    fn auto_entry_only_with_flag_and_default_revision() {
        let mut o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..Default::default()
        };
        assert_eq!(names(&o).len(), 5);
        assert_eq!(names(&o)[4], "auto.sidecar-injector.istio.io");
        o.revision = "canary".into();
        assert_eq!(
            names(&o).len(),
            2,
            "a non-default revision renders only rev.* entries"
        );
    }

    #[test]
    fn default_spelled_out_is_the_default_revision() {
        let o = WebhookOptions {
            revision: "default".into(),
            ..Default::default()
        };
        assert_eq!(names(&o).len(), 4);
        assert_eq!(o.object_name(), "istio-sidecar-injector");
    }

    #[test]
    fn rev_namespace_selectors_exact() {
        let o = WebhookOptions {
            revision: "canary".into(),
            ..Default::default()
        };
        let w = entry(&o, "rev.namespace.");
        assert_eq!(
            w["namespaceSelector"],
            json!({"matchExpressions": [
                {"key": "istio.io/rev", "operator": "In", "values": ["canary"]},
                {"key": "istio-injection", "operator": "DoesNotExist"}]})
        );
        assert_eq!(
            w["objectSelector"],
            json!({"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}]})
        );
    }

    #[test]
    fn rev_object_selectors_exact() {
        let w = entry(&WebhookOptions::default(), "rev.object.");
        assert_eq!(
            w["namespaceSelector"],
            json!({"matchExpressions": [
                {"key": "istio.io/rev", "operator": "DoesNotExist"},
                {"key": "istio-injection", "operator": "DoesNotExist"}]})
        );
        assert_eq!(
            w["objectSelector"],
            json!({"matchExpressions": [
                {"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]},
                {"key": "istio.io/rev", "operator": "In", "values": ["default"]}]})
        );
    }

    #[test]
    fn namespace_object_and_auto_selectors_exact() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..Default::default()
        };
        let ns = entry(&o, "namespace.");
        assert_eq!(
            ns["namespaceSelector"],
            json!({"matchExpressions": [{"key": "istio-injection", "operator": "In", "values": ["enabled"]}]})
        );
        let obj = entry(&o, "object.");
        assert_eq!(
            obj["objectSelector"],
            json!({"matchExpressions": [
                {"key": "sidecar.istio.io/inject", "operator": "In", "values": ["true"]},
                {"key": "istio.io/rev", "operator": "DoesNotExist"}]})
        );
        let auto = entry(&o, "auto.");
        assert_eq!(
            auto["namespaceSelector"]["matchExpressions"][2],
            json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                   "values": ["kube-system", "kube-public", "kube-node-lease", "local-path-storage"]})
        );
        assert_eq!(
            auto["objectSelector"],
            json!({"matchExpressions": [
                {"key": "sidecar.istio.io/inject", "operator": "DoesNotExist"},
                {"key": "istio.io/rev", "operator": "DoesNotExist"}]})
        );
    }

    #[test]
    fn legacy_label_takes_precedence_over_revision_label() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..Default::default()
        };
        let ns_labels = json!({"istio-injection": "enabled", "istio.io/rev": "default"});
        let matching: Vec<String> = entries(&o)
            .iter()
            .filter(|w| matches(&w["namespaceSelector"], ns_labels.clone()))
            .map(|w| w["name"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(matching, ["namespace.sidecar-injector.istio.io"]);
        let disabled = json!({"istio-injection": "disabled", "istio.io/rev": "default"});
        assert!(entries(&o)
            .iter()
            .all(|w| !matches(&w["namespaceSelector"], disabled.clone())));
    }

    #[test]
    fn only_the_label_opt_out_is_visible_to_selectors() {
        let w = entry(&WebhookOptions::default(), "namespace.");
        assert!(!matches(
            &w["objectSelector"],
            json!({"sidecar.istio.io/inject": "false"})
        ));
        assert!(matches(&w["objectSelector"], json!({"app": "x"})));
        let obj = entry(&WebhookOptions::default(), "object.");
        assert!(matches(
            &obj["objectSelector"],
            json!({"sidecar.istio.io/inject": "true"})
        ));
        assert!(!matches(
            &obj["objectSelector"],
            json!({"sidecar.istio.io/inject": "true", "istio.io/rev": "x"})
        ));
    }

    #[test]
    fn auto_entry_skips_kube_system_by_name() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..Default::default()
        };
        let auto = entry(&o, "auto.");
        assert!(matches(
            &auto["namespaceSelector"],
            json!({"kubernetes.io/metadata.name": "apps"})
        ));
        assert!(!matches(
            &auto["namespaceSelector"],
            json!({"kubernetes.io/metadata.name": "kube-system"})
        ));
    }

    #[test]
    fn excluded_namespaces_are_added_to_every_entry() {
        let o = WebhookOptions {
            exclude_namespaces: vec!["outrigger".into(), "kube-system".into()],
            ..Default::default()
        };
        for w in entries(&o) {
            let exprs = w["namespaceSelector"]["matchExpressions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                exprs.last(),
                Some(
                    &json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                             "values": ["outrigger", "kube-system"]})
                )
            );
            let labels =
                json!({"kubernetes.io/metadata.name": "outrigger", "istio-injection": "enabled"});
            assert!(!matches(&w["namespaceSelector"], labels));
        }
    }

    #[test]
    fn common_fields_and_client_config() {
        let o = WebhookOptions {
            service_namespace: "mesh".into(),
            service_name: "outrigger".into(),
            port: 8443,
            path: "/inject/cluster/c1".into(),
            ca_bundle: Some(b"PEM".to_vec()),
            failure_policy: FailurePolicy::Ignore,
            timeout: Some(5),
            reinvocation_policy: ReinvocationPolicy::IfNeeded,
            ..Default::default()
        };
        for w in entries(&o) {
            assert_eq!(w["sideEffects"], "None");
            assert_eq!(w["admissionReviewVersions"], json!(["v1", "v1beta1"]));
            assert_eq!(w["rules"][0]["operations"], json!(["CREATE"]));
            assert_eq!(w["rules"][0]["resources"], json!(["pods"]));
            assert_eq!(w["failurePolicy"], "Ignore");
            assert_eq!(w["reinvocationPolicy"], "IfNeeded");
            assert_eq!(w["timeoutSeconds"], 5);
            assert_eq!(
                w["clientConfig"],
                json!({"service": {"name": "outrigger", "namespace": "mesh", "path": "/inject/cluster/c1", "port": 8443},
                       "caBundle": "UEVN"})
            );
        }
        assert_eq!(o.object_name(), "istio-sidecar-injector-mesh");
    }

    #[test]
    fn object_name_and_labels_follow_the_chart() {
        let o = WebhookOptions {
            revision: "1-24".into(),
            ..Default::default()
        };
        let v = build(&o);
        assert_eq!(v["metadata"]["name"], "istio-sidecar-injector-1-24");
        assert_eq!(v["metadata"]["labels"]["istio.io/rev"], "1-24");
        assert_eq!(
            build(&WebhookOptions::default())["metadata"]["labels"]["istio.io/rev"],
            "default"
        );
    }

    #[test]
    fn namespaced_names_parse() {
        assert_eq!(
            parse_namespaced("a/b").expect("valid"),
            ("a".to_string(), "b".to_string())
        );
        for bad in ["a", "/b", "a/", "a/b/c", ""] {
            assert!(parse_namespaced(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn yaml_quotes_ambiguous_strings_and_nests_blocks() {
        let v = json!({"a": "false", "b": "None", "c": ["x", {"k": "1", "l": []}], "d": {}, "e": 443, "f": "a b"});
        assert_eq!(
            to_yaml(&v),
            "a: \"false\"\nb: None\nc:\n- x\n- k: \"1\"\n  l: []\nd: {}\ne: 443\nf: \"a b\"\n"
        );
    }
}
