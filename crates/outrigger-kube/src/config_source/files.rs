//! The injector configuration from files (istioctl's `--injectConfigFile`, `--valuesFile`,
//! `--meshConfigFile`) or from text read elsewhere (a ConfigMap's key), else the embedded
//! default: read the way `istioctl kube-inject` reads them ([`manifests_snapshot`]) or the way the
//! webhook reads its mounted ConfigMaps ([`webhook_snapshot`]).

use std::path::Path;

use anyhow::{Context, Result};

use outrigger_inject::config::defaults;
use outrigger_inject::config::inject_file::{self, InjectConfigShape};
use outrigger_inject::config::input_kind::{self, InputKind};
use outrigger_inject::config::{self, InjectorConfig, Snapshot};

use super::ConfigPaths;

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Where one input of `outrigger inject` comes from: a file (read when needed), or text read
/// elsewhere (a ConfigMap key) with the name messages use for it.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// A file given with a flag.
    File(&'a Path),
    /// Text and its name (`ConfigMap istio-system/istio key "mesh"`).
    Text {
        /// Name in messages.
        name: &'a str,
        /// The document.
        text: &'a str,
    },
}

impl Input<'_> {
    fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Text { name, .. } => name.to_string(),
        }
    }

    fn text(&self) -> Result<String> {
        match self {
            Input::File(p) => read(p),
            Input::Text { text, .. } => Ok(text.to_string()),
        }
    }
}

/// Refuse `text` read as `kind` when it looks like another of Istio's inputs
/// ([`input_kind::expect`]); text that does not parse is left to the input's own reader.
fn expect_input(text: &str, kind: InputKind) -> Result<()> {
    let doc = serde_json::from_str(text)
        .ok()
        .or_else(|| outrigger_go::yaml::from_str(text).ok());
    match doc {
        Some(doc) => Ok(input_kind::expect(&doc, kind)?),
        None => Ok(()),
    }
}

/// The key of Istio's ConfigMaps that holds `kind`'s input.
fn configmap_key(kind: InputKind) -> &'static str {
    match kind {
        InputKind::InjectorConfig | InputKind::ConfigMap => "config",
        InputKind::Values => "values",
        InputKind::MeshConfig => "mesh",
    }
}

/// `text` read as a whole ConfigMap (`kind: ConfigMap`, as `kubectl get cm -o yaml` prints it):
/// its `data`, or `None` when it is not one.
fn configmap_data(text: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    if !text.contains("ConfigMap") {
        return None;
    }
    let doc = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .or_else(|| outrigger_go::yaml::from_str(text).ok())?;
    if doc.get("kind").and_then(serde_json::Value::as_str) != Some("ConfigMap") {
        return None;
    }
    Some(
        doc.get("data")
            .and_then(|d| d.as_object())
            .cloned()
            .unwrap_or_default(),
    )
}

/// `text` of the input `name` given for `kind`, or when it is a whole ConfigMap, its key for
/// `kind` (`values`, `mesh`), said in a note on stderr; a ConfigMap without that key is refused,
/// naming the keys it has.
fn unwrap_configmap(text: String, kind: InputKind, name: &str) -> Result<String> {
    let (text, note) = unwrap_configmap_noted(text, kind, name)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    Ok(text)
}

/// [`unwrap_configmap`] returning its note (`note: NAME is a whole ConfigMap; using its
/// data.KEY key`) instead of printing it.
fn unwrap_configmap_noted(
    text: String,
    kind: InputKind,
    name: &str,
) -> Result<(String, Option<String>)> {
    let Some(data) = configmap_data(&text) else {
        return Ok((text, None));
    };
    let key = configmap_key(kind);
    match data.get(key).and_then(serde_json::Value::as_str) {
        Some(value) => Ok((
            value.to_string(),
            Some(format!(
                "note: {name} is a whole ConfigMap; using its data.{key} key"
            )),
        )),
        None => {
            let keys: Vec<&str> = data.keys().map(String::as_str).collect();
            anyhow::bail!(
                "{name} is a ConfigMap without the key {key:?} (its keys: {})",
                if keys.is_empty() {
                    "none".to_string()
                } else {
                    keys.join(", ")
                }
            )
        }
    }
}

/// Read the file given for `kind`'s flag, if any, refusing one that looks like another of
/// Istio's inputs; errors name the file. A whole ConfigMap is read through its key for `kind`.
/// Shared by `inject` and `check`.
pub fn read_input(path: &Option<std::path::PathBuf>, kind: InputKind) -> Result<Option<String>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = unwrap_configmap(read(path)?, kind, &path.display().to_string())?;
    let what = match kind {
        InputKind::InjectorConfig => "injector config",
        InputKind::Values => "values",
        InputKind::MeshConfig | InputKind::ConfigMap => "mesh config",
    };
    expect_input(&text, kind).with_context(|| format!("loading {what} {}", path.display()))?;
    Ok(Some(text))
}

/// The fields of a values tree that hold a Kubernetes quantity and cannot be one: every
/// `resources.requests.*` and `resources.limits.*` (at any depth: `global.proxy.resources`,
/// `global.proxy_init.resources`), as `path: "value" is not ...`. istiod loads such values
/// (the proto field is a string map) and every injection then fails with Kubernetes' quantity
/// error, which names no field; these name it.
pub fn quantity_problems(values: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        let Some(map) = v.as_object() else {
            return;
        };
        for (key, child) in map {
            let here = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if key == "resources" {
                for part in ["requests", "limits"] {
                    let entries = child.get(part).and_then(serde_json::Value::as_object);
                    for (name, q) in entries.into_iter().flatten() {
                        let Some(text) = q.as_str() else { continue };
                        if outrigger_go::kube::quantity::parse(text.trim()).is_err() {
                            out.push(format!(
                                "{here}.{part}.{name}: {text:?} is not a Kubernetes quantity \
                                 (such as 100m or 128Mi)"
                            ));
                        }
                    }
                }
            }
            walk(child, &here, out);
        }
    }
    let mut out = Vec::new();
    walk(values, "", &mut out);
    out
}

/// Warn, naming the values input and the field, of each of [`quantity_problems`].
fn warn_quantities(values: &serde_json::Value, name: &str) {
    for problem in quantity_problems(values) {
        eprintln!(
            "warning: values {name}: {problem}; every injection fails on it, as istiod's does"
        );
    }
}

/// Display name of an optional input (`(embedded)` when absent).
fn shown(p: Option<Input<'_>>) -> String {
    p.map_or("(embedded)".into(), |p| p.name())
}

/// Build the snapshot for `outrigger inject` from istioctl-style flags. An injector config that
/// cannot add a sidecar is refused ([`inject_file::load_inject_config`]); a whole ConfigMap is read
/// through its `config` key (and its `values` key when no values file is given), with a note on
/// stderr. Templates without values (`--injectConfigFile` alone) get a warning: Istio's templates
/// then fail in ways that do not point at the missing file.
pub fn manifests_snapshot(
    inject_config: Option<&Path>,
    values: Option<&Path>,
    mesh: Option<&Path>,
    revision: &str,
) -> Result<Snapshot> {
    manifests_snapshot_from(
        inject_config.map(Input::File),
        values.map(Input::File),
        mesh.map(Input::File),
        revision,
    )
}

/// The embedded values for `revision` (`""`: none): its `revision` set, as Istio's chart
/// renders the values of a revision (the templates derive `istiod-REV` from it).
fn embedded_values(revision: &str) -> Result<String> {
    if revision.is_empty() {
        return Ok(defaults::VALUES.to_string());
    }
    let mut v: serde_json::Value =
        serde_json::from_str(defaults::VALUES).context("reading the embedded values")?;
    v["revision"] = serde_json::Value::String(revision.to_string());
    Ok(v.to_string())
}

/// The embedded mesh config for `revision` (`""`: none): `defaultConfig.discoveryAddress` is the
/// revision's istiod (`istiod-REV.istio-system.svc:15012`), as Istio's chart writes it.
fn embedded_mesh(revision: &str) -> Result<String> {
    if revision.is_empty() {
        return Ok(defaults::MESH.to_string());
    }
    let mut mesh =
        outrigger_go::yaml::from_str(defaults::MESH).context("reading the embedded mesh config")?;
    let values: serde_json::Value =
        serde_json::from_str(defaults::VALUES).context("reading the embedded values")?;
    let namespace = values["global"]["istioNamespace"]
        .as_str()
        .unwrap_or("istio-system");
    mesh["defaultConfig"]["discoveryAddress"] =
        serde_json::Value::String(format!("istiod-{revision}.{namespace}.svc:15012"));
    Ok(mesh.to_string())
}

/// [`manifests_snapshot`] from inputs that are files or text read from the cluster; an absent
/// input is the embedded default (values: the whole ConfigMap's, or none, when only the injector
/// config is given), made for `revision` as Istio's chart makes a revision's
/// ([`embedded_values`], [`embedded_mesh`]).
pub fn manifests_snapshot_from(
    inject_config: Option<Input<'_>>,
    values: Option<Input<'_>>,
    mesh: Option<Input<'_>>,
    revision: &str,
) -> Result<Snapshot> {
    let revision = outrigger_inject::decide::selection::revision_suffix(revision);
    let mut configmap_values = None;
    let config = match inject_config {
        Some(p) => {
            let loaded = inject_file::load_inject_config(&p.text()?)
                .with_context(|| format!("loading injector config {}", p.name()))?;
            match (loaded.shape, &loaded.values, values) {
                (InjectConfigShape::ConfigMap, Some(v), None) => {
                    eprintln!(
                        "note: {} is a whole ConfigMap; using its data.config and data.values keys",
                        p.name()
                    );
                    configmap_values = Some(v.clone());
                }
                (InjectConfigShape::ConfigMap, _, _) => eprintln!(
                    "note: {} is a whole ConfigMap; using its data.config key",
                    p.name()
                ),
                (InjectConfigShape::Templates, _, None) => eprintln!(
                    "warning: {} has templates but no --valuesFile was given: they render with \
                     empty .Values (pass the `values` key of the same ConfigMap with --valuesFile)",
                    p.name()
                ),
                _ => {}
            }
            loaded.config
        }
        None => InjectorConfig::parse_for_kube_inject(defaults::CONFIG)
            .context("loading the embedded default injector config")?,
    };
    let values_text = match values {
        Some(p) => unwrap_configmap(p.text()?, InputKind::Values, &p.name())?,
        None if inject_config.is_none() => embedded_values(revision)?,
        None => configmap_values.unwrap_or_default(),
    };
    // Parsed here first so that an error names the values file alone; a file that is another
    // input (the injector config, a mesh config) is refused before its keys are read as values.
    if let Some(p) = values {
        expect_input(&values_text, InputKind::Values)
            .with_context(|| format!("loading values {}", p.name()))?;
    }
    let parsed = config::parse_values(&values_text)
        .with_context(|| format!("loading values {}", shown(values)))?;
    if let Some(p) = values {
        warn_quantities(&parsed, &p.name());
    }
    let mesh_text = match mesh {
        Some(p) => {
            let text = unwrap_configmap(p.text()?, InputKind::MeshConfig, &p.name())?;
            expect_input(&text, InputKind::MeshConfig)
                .with_context(|| format!("loading mesh config {}", p.name()))?;
            Some(text)
        }
        None => Some(embedded_mesh(revision)?),
    };
    Snapshot::with_config(config, &values_text, mesh_text.as_deref())
        .map(|s| s.with_template_env(crate::template_env::current()))
        .with_context(|| format!("loading mesh config {}", shown(mesh)))
}

/// The three documents of the webhook's configuration, as read from their inputs: a whole
/// ConfigMap given for any of them is read through its key for that input (the injector's
/// ConfigMap given for the config also gives its `values` key when no values input is), and a
/// document given for another input is refused ([`input_kind::expect`]). Shared by `serve`
/// (start-up and every reload) and `check`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookDocuments {
    /// The injector config (the `config` key).
    pub config: String,
    /// The values (`None`: no values input and none in a whole ConfigMap).
    pub values: Option<String>,
    /// Whether the values are the `values` key of the ConfigMap given for the config.
    pub values_from_config: bool,
    /// The mesh config (`None`: no mesh input).
    pub mesh: Option<String>,
    /// What was read from whole ConfigMaps, as notes (`note: NAME is a whole ConfigMap; using
    /// its data.config key`).
    pub notes: Vec<String>,
}

/// Read the webhook's documents ([`WebhookDocuments`]) from `config`, `values` and `mesh`
/// (each `None` when not given). Errors name the input and what it was read as.
pub fn webhook_documents(
    config: Input<'_>,
    values: Option<Input<'_>>,
    mesh: Option<Input<'_>>,
) -> Result<WebhookDocuments> {
    let mut notes = Vec::new();
    let raw = config.text()?;
    // A whole ConfigMap gives its `config` key, and its `values` key unless a values input is
    // given (as `inject` reads it).
    let configmap_values = match (configmap_data(&raw), values) {
        (Some(data), None) => data
            .get("values")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        _ => None,
    };
    let (config_text, note) =
        unwrap_configmap_noted(raw, InputKind::InjectorConfig, &config.name())?;
    notes.extend(note);
    expect_input(&config_text, InputKind::InjectorConfig)
        .with_context(|| format!("loading injector config {}", config.name()))?;
    let values_from_config = configmap_values.is_some();
    if values_from_config {
        notes = vec![format!(
            "note: {} is a whole ConfigMap; using its data.config and data.values keys",
            config.name()
        )];
    }
    let values_text = match (configmap_values, values) {
        (Some(v), _) => Some(v),
        (None, Some(p)) => {
            let (text, note) = webhook_document(p, InputKind::Values)?;
            notes.extend(note);
            Some(text)
        }
        (None, None) => None,
    };
    let mesh_text = match mesh {
        Some(p) => {
            let (text, note) = webhook_document(p, InputKind::MeshConfig)?;
            notes.extend(note);
            Some(text)
        }
        None => None,
    };
    Ok(WebhookDocuments {
        config: config_text,
        values: values_text,
        values_from_config,
        mesh: mesh_text,
        notes,
    })
}

/// One document of the webhook's configuration read from `input` as `kind` (the values or the
/// mesh config): a whole ConfigMap through its key (with the note saying so), a document of
/// another kind refused. Errors name the input.
pub fn webhook_document(input: Input<'_>, kind: InputKind) -> Result<(String, Option<String>)> {
    let (text, note) = unwrap_configmap_noted(input.text()?, kind, &input.name())?;
    let what = match kind {
        InputKind::InjectorConfig => "injector config",
        InputKind::Values => "values",
        InputKind::MeshConfig | InputKind::ConfigMap => "mesh config",
    };
    expect_input(&text, kind).with_context(|| format!("loading {what} {}", input.name()))?;
    Ok((text, note))
}

/// The injector configuration as the webhook uses it: the files when given (read and checked as
/// `inject` reads them: a file given for another input is refused, a whole ConfigMap is read
/// through its key), else the embedded default.
pub fn webhook_snapshot(files: &ConfigPaths) -> Result<Snapshot> {
    let files = &files.resolved()?;
    let Some(cfg) = &files.inject_config_file else {
        return outrigger_inject::config::defaults::snapshot()
            .context("loading the embedded default configuration");
    };
    let docs = webhook_documents(
        Input::File(cfg),
        files.values_file.as_deref().map(Input::File),
        files.mesh_config_file.as_deref().map(Input::File),
    )?;
    for note in &docs.notes {
        eprintln!("{note}");
    }
    let values = docs.values.unwrap_or_default();
    if let Some(p) = &files.values_file {
        // Named alone, as `inject` and `serve` name it.
        let parsed = outrigger_inject::config::parse_values(&values)
            .with_context(|| format!("loading values {}", p.display()))?;
        warn_quantities(&parsed, &p.display().to_string());
    }
    Snapshot::load(&docs.config, &values, docs.mesh.as_deref())
        .map(|s| s.with_template_env(crate::template_env::current()))
        .with_context(|| format!("loading injector config {}", cfg.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_is_no_quantity_is_named_by_its_path() {
        let values = serde_json::json!({
            "global": {
                "proxy": {"resources": {"requests": {"cpu": "lots", "memory": "128Mi"}}},
                "proxy_init": {"resources": {"limits": {"memory": "1 GB"}}}
            }
        });
        assert_eq!(
            quantity_problems(&values),
            [
                "global.proxy.resources.requests.cpu: \"lots\" is not a Kubernetes quantity \
                 (such as 100m or 128Mi)",
                "global.proxy_init.resources.limits.memory: \"1 GB\" is not a Kubernetes \
                 quantity (such as 100m or 128Mi)",
            ]
        );
        let embedded: serde_json::Value =
            serde_json::from_str(defaults::VALUES).expect("embedded values");
        assert!(quantity_problems(&embedded).is_empty());
    }

    #[test]
    fn broken_template_in_a_config_is_named() {
        let text = "templates:\n  sidecar: 'ok'\n  gateway: |\n    a\n    {{ nosuchfunc }}\n";
        let err = format!(
            "{:#}",
            InjectorConfig::parse_for_kube_inject(text).expect_err("broken template")
        );
        assert!(
            err.contains("\"gateway\"") && err.contains("gateway:2"),
            "{err}"
        );
    }
}
