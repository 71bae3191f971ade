//! Injector configuration: Istio's `istio-sidecar-injector` ConfigMap (`config`, `values`) and the
//! `istio` mesh ConfigMap (`mesh`), parsed once into an immutable [`Snapshot`].
//!
//! Templates are parsed when the snapshot is built, never per request.

pub mod defaults;
pub mod inject_file;
pub mod input_kind;
pub mod render_memo;
pub mod values;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::kube::selector::LabelSelector;
use crate::mesh::{self, MeshError};
use crate::template::Template;
use crate::template::TemplateError;
use crate::yaml::{self, YamlError};

/// Results of loading the configuration: [`ConfigError`] unless said otherwise.
type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// The injector config's `policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// `enabled`: inject unless the pod opts out.
    Enabled,
    /// `disabled`: inject only when the pod opts in.
    Disabled,
    /// Any other value (including empty): never inject; carries the raw value.
    Invalid(String),
}

impl Policy {
    /// Parse the config value (case-sensitive).
    pub fn parse(s: &str) -> Policy {
        match s {
            "enabled" => Policy::Enabled,
            "disabled" => Policy::Disabled,
            other => Policy::Invalid(other.to_string()),
        }
    }

    /// The config spelling of the policy.
    pub fn as_str(&self) -> &str {
        match self {
            Policy::Enabled => "enabled",
            Policy::Disabled => "disabled",
            Policy::Invalid(s) => s,
        }
    }
}

/// Why the injector configuration could not be loaded. Messages are istiod's.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The `config` document is not YAML.
    #[error("failed to unmarshal injection template: {0}")]
    Unmarshal(#[source] Box<YamlError>),
    /// A field of the `config` document has the wrong shape (`path` empty for the document).
    #[error("failed to unmarshal injection template: {}expected {expected}, got {got}", field_prefix(.path))]
    Shape {
        /// Field path (`templates`, `aliases.x`, `templates.sidecar`); empty for the document.
        path: String,
        /// What the field must be (`a map`, `a list`, `a string`).
        expected: &'static str,
        /// What it is (a kind such as `a number`, or a JSON value).
        got: String,
    },
    /// A template does not parse.
    #[error("failed to parse template {name:?}: {source}")]
    Template {
        /// The template's name.
        name: String,
        /// The parse error (`template: NAME:LINE: ...`).
        source: Box<TemplateError>,
    },
    /// The `values` document is neither JSON nor YAML.
    #[error("could not parse configuration values: {yaml} (as JSON: {json})")]
    ValuesSyntax {
        /// The YAML reader's error.
        yaml: Box<YamlError>,
        /// The JSON reader's error.
        json: String,
    },
    /// The `values` document is not a map.
    #[error("could not parse configuration values: expected a map, got {0}")]
    ValuesNotMap(&'static str),
    /// A field of the `values` document does not fit Istio's typed values.
    #[error("could not parse configuration values: {0}")]
    Values(#[from] values::ValuesError),
    /// The mesh config could not be read or applied.
    #[error("failed to read mesh config: {0}")]
    Mesh(#[source] Box<MeshError>),
    /// `--injectConfigFile` is a whole ConfigMap without a `data.config` key.
    #[error(
        "this is a whole ConfigMap without a `data.config` key; pass the `config` key of the \
         istio-sidecar-injector ConfigMap, e.g. {}",
        inject_file::KUBECTL_CONFIG_HINT
    )]
    ConfigMapWithoutConfig,
    /// `--injectConfigFile` holds a static text that cannot add a container.
    #[error(
        "not an injector config: expected the `config` key of the istio-sidecar-injector \
         ConfigMap (a mapping with `templates:`, e.g. {}) or a single sidecar template (a pod \
         fragment with `spec.containers`); {problem}",
        inject_file::KUBECTL_CONFIG_HINT
    )]
    NotAnInjectorConfig {
        /// What the file is instead (`the file is empty`, `found a mapping with keys ...`).
        problem: String,
    },
    /// An input given for another one (`--meshConfigFile values.json`), see
    /// [`input_kind::expect`].
    #[error("expected {expected}, but it looks like {found} by its top-level keys {keys}: {fix}")]
    WrongInput {
        /// What the flag takes.
        expected: &'static str,
        /// What the document looks like.
        found: &'static str,
        /// The keys that say so.
        keys: String,
        /// The flag that takes it, or how to extract the key.
        fix: String,
    },
    /// An error of an inner step, with the step in front (`the ConfigMap's data.config: ...`).
    /// It converts into the crate-wide sum as that sum's context wrapper (`Error::Context`)
    /// around the inner error's own conversion.
    #[error("{context}: {source}")]
    Context {
        /// The outer step.
        context: String,
        /// The inner error.
        #[source]
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    /// Put the step that failed in front of the message (as the crate-wide sum's
    /// `Error::context` does, which this becomes).
    pub fn context(self, prefix: &str) -> ConfigError {
        ConfigError::Context {
            context: prefix.to_string(),
            source: Box::new(self),
        }
    }
}

fn field_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

fn shape(path: &str, expected: &'static str, got: String) -> ConfigError {
    ConfigError::Shape {
        path: path.to_string(),
        expected,
        got,
    }
}

/// Name of the default template.
pub const DEFAULT_TEMPLATE: &str = "sidecar";

/// The injector `Config` document (`policy`, `templates`, `defaultTemplates`, `aliases`,
/// selectors, `injectedAnnotations`), templates parsed.
#[derive(Debug, Clone)]
pub struct InjectorConfig {
    /// Injection policy (`enabled`, `disabled`, anything else disables injection).
    pub policy: Policy,
    /// Templates applied when the pod names none.
    pub default_templates: Vec<String>,
    /// Parsed templates by name.
    pub templates: BTreeMap<String, Arc<Template>>,
    /// One-level aliases: name → template names.
    pub aliases: BTreeMap<String, Vec<String>>,
    /// Pods matching one of these are never injected (unless explicitly asked).
    pub never_inject_selector: Vec<LabelSelector>,
    /// Pods matching one of these are always injected (unless explicitly refused).
    pub always_inject_selector: Vec<LabelSelector>,
    /// Annotations added to every injected pod.
    pub injected_annotations: BTreeMap<String, String>,
    /// Non-fatal problems found while loading (invalid selectors, empty templates).
    pub warnings: Vec<String>,
}

/// Facts istiod reads from the typed `Values` message rather than the generic tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValuesFacts {
    /// `global.hub`.
    pub hub: String,
    /// `global.tag` rendered as text (numbers with Go `%v`).
    pub tag: String,
    /// `global.variant`.
    pub variant: String,
    /// `global.proxy.image`.
    pub proxy_image: String,
    /// `global.proxy_init.image`.
    pub proxy_init_image: String,
    /// `global.multiCluster.clusterName`.
    pub cluster_name: String,
    /// `global.network`.
    pub network: String,
    /// `global.proxy.holdApplicationUntilProxyStarts`.
    pub hold_application_until_proxy_starts: bool,
    /// `sidecarInjectorWebhook.rewriteAppHTTPProbe` (unset → false).
    pub rewrite_app_http_probe: bool,
}

/// One immutable, fully parsed configuration: what a request needs to inject a pod.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The injector config with parsed templates.
    pub config: InjectorConfig,
    /// The generic values tree (`.Values`).
    pub values: Value,
    /// Typed facts from the values.
    pub values_facts: ValuesFacts,
    /// Mesh config (canonical proto-JSON, defaults applied).
    pub mesh: Value,
    /// The environment variables the template functions `env` and `expandenv` may read, by name
    /// (empty by default: the library reads no process environment; the binary passes the
    /// variables its allow-list names, see [`Snapshot::with_template_env`]).
    pub template_env: BTreeMap<String, String>,
    /// Renders of this snapshot's templates remembered by their inputs (see
    /// [`render_memo`]). A clone starts with an empty memo, so a clone may be changed; a
    /// snapshot that has injected must not be (build or clone another instead).
    pub render_memo: render_memo::RenderMemo,
}

impl Snapshot {
    /// Build a snapshot from the three documents. `mesh` is the `istio` ConfigMap's `mesh` text
    /// (applied over Istio's default mesh config); `None` uses the defaults.
    pub fn load(config: &str, values: &str, mesh_text: Option<&str>) -> Result<Snapshot> {
        let config = InjectorConfig::parse(config)?;
        Snapshot::with_config(config, values, mesh_text)
    }

    /// Build a snapshot around an already parsed injector config.
    pub fn with_config(
        config: InjectorConfig,
        values: &str,
        mesh_text: Option<&str>,
    ) -> Result<Snapshot> {
        let values = parse_values(values)?;
        let values_facts = ValuesFacts::from_values(&values);
        let base = mesh::default_mesh_config();
        let mesh = match mesh_text {
            Some(t) => {
                mesh::apply_mesh_config(t, &base).map_err(|e| ConfigError::Mesh(Box::new(e)))?
            }
            None => base,
        };
        Ok(Snapshot {
            config,
            values,
            values_facts,
            mesh,
            template_env: BTreeMap::new(),
            render_memo: Default::default(),
        })
    }

    /// The same snapshot with `env` as what the templates' `env` and `expandenv` functions
    /// see: a variable absent from the map reads as unset (`env` returns its default,
    /// `expandenv` the empty string).
    pub fn with_template_env(mut self, env: BTreeMap<String, String>) -> Snapshot {
        self.template_env = env;
        self.render_memo = Default::default();
        self
    }
}

/// Parse the `values` document (JSON or YAML) into the generic tree. Empty → empty map. The
/// document must fit Istio's typed values model ([`crate::config::values`]): a wrong type is an error
/// naming the field, as istiod's typed decoding refuses it.
pub fn parse_values(text: &str) -> Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let v = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(json_err) => yaml::from_str(text).map_err(|e| ConfigError::ValuesSyntax {
            yaml: Box::new(e),
            json: json_err.to_string(),
        })?,
    };
    match v {
        Value::Object(_) => {
            values::check(&v).map_err(ConfigError::Values)?;
            Ok(v)
        }
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(ConfigError::ValuesNotMap(kind_name(&other))),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Look up `path` in a JSON tree; `null` counts as absent.
pub fn lookup<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    (!cur.is_null()).then_some(cur)
}

fn lookup_str(v: &Value, path: &[&str]) -> String {
    match lookup(v, path) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn lookup_bool(v: &Value, path: &[&str]) -> bool {
    match lookup(v, path) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(m)) => m.get("value").and_then(Value::as_bool).unwrap_or(false),
        _ => false,
    }
}

impl ValuesFacts {
    /// Read the typed facts from the generic values tree (explicit `null` means absent).
    pub fn from_values(v: &Value) -> ValuesFacts {
        let tag = match lookup(v, &["global", "tag"]) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(crate::go::float::format_g64)
                .unwrap_or_else(|| n.to_string()),
            Some(Value::Bool(b)) => b.to_string(),
            Some(other) => other.to_string(),
            None => match v.get("global").and_then(|g| g.get("tag")) {
                Some(Value::Null) => "<nil>".to_string(),
                _ => String::new(),
            },
        };
        ValuesFacts {
            hub: lookup_str(v, &["global", "hub"]),
            tag,
            variant: lookup_str(v, &["global", "variant"]),
            proxy_image: lookup_str(v, &["global", "proxy", "image"]),
            proxy_init_image: lookup_str(v, &["global", "proxy_init", "image"]),
            cluster_name: lookup_str(v, &["global", "multiCluster", "clusterName"]),
            network: lookup_str(v, &["global", "network"]),
            hold_application_until_proxy_starts: lookup_bool(
                v,
                &["global", "proxy", "holdApplicationUntilProxyStarts"],
            ),
            rewrite_app_http_probe: lookup_bool(
                v,
                &["sidecarInjectorWebhook", "rewriteAppHTTPProbe"],
            ),
        }
    }
}

fn get_ci<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn string_list(v: Option<&Value>, what: &str) -> Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                other => Err(shape(what, "a string", other.to_string())),
            })
            .collect(),
        Some(other) => Err(shape(what, "a list", kind_name(other).to_string())),
    }
}

fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, x)| match x {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Null => Ok((k.clone(), String::new())),
                Value::Bool(_) | Value::Number(_) => Ok((k.clone(), x.to_string())),
                other => Err(shape(
                    &format!("{what}.{k}"),
                    "a string",
                    kind_name(other).to_string(),
                )),
            })
            .collect(),
        Some(other) => Err(shape(what, "a map", kind_name(other).to_string())),
    }
}

fn selectors(
    v: Option<&Value>,
    what: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<LabelSelector>> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(shape(what, "a list", kind_name(other).to_string())),
    };
    let mut out = Vec::new();
    for item in items {
        match LabelSelector::from_json(item) {
            Ok(s) => out.push(s),
            Err(e) => warnings.push(format!("Invalid selector for {what}: {item} ({e})")),
        }
    }
    Ok(out)
}

impl InjectorConfig {
    /// Parse an injector `config` document (YAML or JSON) and all of its templates.
    pub fn parse(text: &str) -> Result<InjectorConfig> {
        let doc = yaml::from_str(text).map_err(|e| ConfigError::Unmarshal(Box::new(e)))?;
        let m = match doc {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => return Err(shape("", "a map", kind_name(&other).to_string())),
        };
        let mut warnings = Vec::new();
        let policy = match get_ci(&m, "policy") {
            Some(Value::String(s)) => Policy::parse(s),
            None | Some(Value::Null) => Policy::parse(""),
            Some(other) => Policy::parse(&other.to_string()),
        };
        let mut default_templates =
            string_list(get_ci(&m, "defaultTemplates"), "defaultTemplates")?;
        if default_templates.is_empty() {
            default_templates.push(DEFAULT_TEMPLATE.to_string());
        }
        let raw_templates = string_map(get_ci(&m, "templates"), "templates")?;
        if raw_templates.is_empty() {
            warnings.push("injection templates are empty. This may be caused by using an injection template from an older version of Istio. Please ensure the template is correct; mismatch template versions can lead to unexpected results, including pods not being injected.".to_string());
        }
        let templates = parse_templates(&raw_templates)?;
        let mut aliases = BTreeMap::new();
        match get_ci(&m, "aliases") {
            None | Some(Value::Null) => {}
            Some(Value::Object(a)) => {
                for (k, v) in a {
                    aliases.insert(k.clone(), string_list(Some(v), &format!("aliases.{k}"))?);
                }
            }
            Some(other) => return Err(shape("aliases", "a map", kind_name(other).to_string())),
        }
        let never_inject_selector = selectors(
            get_ci(&m, "neverInjectSelector"),
            "NeverInjectSelector",
            &mut warnings,
        )?;
        let always_inject_selector = selectors(
            get_ci(&m, "alwaysInjectSelector"),
            "AlwaysInjectSelector",
            &mut warnings,
        )?;
        let injected_annotations =
            string_map(get_ci(&m, "injectedAnnotations"), "injectedAnnotations")?;
        Ok(InjectorConfig {
            policy,
            default_templates,
            templates,
            aliases,
            never_inject_selector,
            always_inject_selector,
            injected_annotations,
            warnings,
        })
    }

    /// The configuration `istioctl kube-inject --injectConfigFile` uses: when the
    /// file decodes as an injector config with templates, those templates (a template that fails
    /// to parse is an error naming it); otherwise the whole file is the single template `sidecar`.
    /// Policy enabled, no selectors, no aliases, default `sidecar`.
    pub fn parse_for_kube_inject(text: &str) -> Result<InjectorConfig> {
        let templates = match config_templates(text) {
            Some(raw) => parse_templates(&raw)?,
            None => {
                let mut raw = BTreeMap::new();
                raw.insert(DEFAULT_TEMPLATE.to_string(), text.to_string());
                parse_templates(&raw)?
            }
        };
        Ok(InjectorConfig::kube_inject(templates))
    }

    /// A kube-inject configuration around already parsed templates.
    pub fn kube_inject(templates: BTreeMap<String, Arc<Template>>) -> InjectorConfig {
        InjectorConfig {
            policy: Policy::Enabled,
            default_templates: vec![DEFAULT_TEMPLATE.to_string()],
            templates,
            aliases: BTreeMap::new(),
            never_inject_selector: Vec::new(),
            always_inject_selector: Vec::new(),
            injected_annotations: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

/// The `templates` map of `text` if it decodes as an injector config with at least one template.
fn config_templates(text: &str) -> Option<BTreeMap<String, String>> {
    let Ok(Value::Object(doc)) = yaml::from_str(text) else {
        return None;
    };
    let templates = get_ci(&doc, "templates")?.as_object()?;
    let raw: Option<BTreeMap<_, _>> = templates
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    raw.filter(|r| !r.is_empty())
}

/// Parse every template; any failure fails the whole load and names the template.
pub fn parse_templates(raw: &BTreeMap<String, String>) -> Result<BTreeMap<String, Arc<Template>>> {
    raw.iter()
        .map(|(name, text)| {
            Template::parse(name, text)
                .map(|t| (name.clone(), Arc::new(t)))
                .map_err(|e| ConfigError::Template {
                    name: name.clone(),
                    source: Box::new(e),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_facts_follow_go_types() {
        let v = json!({"global": {"hub": "h", "tag": 1.2, "proxy": {"image": "p", "holdApplicationUntilProxyStarts": true},
                       "multiCluster": {"clusterName": null}}, "sidecarInjectorWebhook": {"rewriteAppHTTPProbe": true}});
        let f = ValuesFacts::from_values(&v);
        assert_eq!(f.hub, "h");
        assert_eq!(f.tag, "1.2");
        assert_eq!(f.proxy_image, "p");
        assert_eq!(f.cluster_name, "");
        assert!(f.hold_application_until_proxy_starts);
        assert!(f.rewrite_app_http_probe);
        let f = ValuesFacts::from_values(&json!({"global": {"tag": null}}));
        assert_eq!(f.tag, "<nil>");
        let f = ValuesFacts::from_values(&json!({"global": {"tag": 11}}));
        assert_eq!(f.tag, "11");
    }

    #[test]
    fn tag_numbers_print_as_go_float64() {
        let go_float_v = |f: f64| crate::go::float::format_g64(f);
        assert_eq!(go_float_v(15020.0), "15020");
        assert_eq!(go_float_v(123456.0), "123456");
        assert_eq!(go_float_v(1e6), "1e+06");
        assert_eq!(go_float_v(1234567.0), "1.234567e+06");
        assert_eq!(go_float_v(0.00001), "1e-05");
        assert_eq!(go_float_v(1.2), "1.2");
        assert_eq!(go_float_v(0.0), "0");
    }

    #[test]
    fn config_templates_only_for_configs_with_templates() {
        let t = config_templates("templates:\n  sidecar: 'a'\n  gw: b\n").expect("templates");
        assert_eq!(t.len(), 2);
        assert_eq!(t["sidecar"], "a");
        assert!(
            config_templates("Templates: {x: z}").is_some(),
            "keys match case-insensitively"
        );
        assert!(config_templates("templates: {}").is_none());
        assert!(config_templates("spec:\n  containers: []\n").is_none());
        assert!(config_templates("templates: {a: [1]}").is_none());
        assert!(config_templates("{{ if }}").is_none());
    }

    #[test]
    fn kube_inject_names_the_broken_template_of_a_config() {
        let text = "templates:\n  sidecar: 'ok'\n  gateway: |\n    a\n    {{ nosuchfunc }}\n";
        let err = InjectorConfig::parse_for_kube_inject(text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"gateway\"") && err.contains("nosuchfunc"),
            "{err}"
        );
        let bare = InjectorConfig::parse_for_kube_inject("spec:\n  containers: []\n").unwrap();
        assert_eq!(bare.templates.keys().collect::<Vec<_>>(), ["sidecar"]);
    }

    #[test]
    fn values_must_be_a_map() {
        assert!(parse_values("").unwrap().as_object().unwrap().is_empty());
        let e = parse_values("[1]").unwrap_err().to_string();
        assert!(e.contains("expected a map"), "{e}");
        let e = parse_values("global: 42\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "could not parse configuration values: global: expected a map, got 42"
        );
        let e = parse_values("{\"global\": {\"proxy\": {\"resources\": \"x\"}}}")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "could not parse configuration values: global.proxy.resources: expected a map, got \"x\""
        );
    }
}
