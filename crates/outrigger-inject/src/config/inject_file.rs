//! Reading `outrigger inject --injectConfigFile` as istioctl does, refusing a file that cannot
//! add a sidecar instead of injecting nothing.

use serde_json::Value;

use crate::config::input_kind::{classify, InputKind};
use crate::config::{ConfigError, InjectorConfig};
use crate::json::short;
use crate::yaml;

/// How kube-inject read its `--injectConfigFile` ([`load_inject_config`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectConfigShape {
    /// An injector config (`templates:` with at least one template), the ConfigMap's `config` key.
    Templates,
    /// No `templates`: the whole file is the single template `sidecar` (istioctl's fallback).
    BareTemplate,
    /// A whole `istio-sidecar-injector` ConfigMap: its `data.config` was used.
    ConfigMap,
}

/// An injector config for kube-inject, and how the file was read.
#[derive(Debug, Clone)]
pub struct LoadedInjectConfig {
    /// The configuration (templates only; kube-inject ignores the other fields).
    pub config: InjectorConfig,
    /// How the text was read.
    pub shape: InjectConfigShape,
    /// A whole ConfigMap's `data.values`, when it has one (the values its templates expect).
    pub values: Option<String>,
}

/// Read an `--injectConfigFile` as istioctl does (an injector config with `templates`, else the
/// whole text as the template `sidecar`), refusing what cannot be a sidecar template instead of
/// injecting nothing:
///
/// * a whole ConfigMap (`kind: ConfigMap`) is read through its `data.config` key (shape
///   [`InjectConfigShape::ConfigMap`], with its `data.values` when present); one without that
///   key is an error saying how to get it;
/// * a text without template actions that is empty, not a mapping, or a mapping without `spec`
///   cannot add a container: an error saying what was expected, and what the file looks like
///   (the `values` key, a mesh config, an empty `templates`).
pub fn load_inject_config(text: &str) -> Result<LoadedInjectConfig, ConfigError> {
    let parsed = yaml::from_str(text).ok();
    if let Some(Value::Object(m)) = &parsed {
        if m.get("kind").and_then(Value::as_str) == Some("ConfigMap") {
            let Some(config) = m
                .get("data")
                .and_then(|d| d.get("config"))
                .and_then(Value::as_str)
            else {
                return Err(ConfigError::ConfigMapWithoutConfig);
            };
            let loaded =
                load_inject_config(config).map_err(|e| e.context("the ConfigMap's data.config"))?;
            let values = m
                .get("data")
                .and_then(|d| d.get("values"))
                .and_then(Value::as_str)
                .map(str::to_string);
            return Ok(LoadedInjectConfig {
                config: loaded.config,
                shape: InjectConfigShape::ConfigMap,
                values,
            });
        }
    }
    let config = InjectorConfig::parse_for_kube_inject(text)?;
    let bare = config.templates.len() == 1
        && config
            .templates
            .contains_key(crate::config::DEFAULT_TEMPLATE)
        && !has_templates(parsed.as_ref());
    if bare && !text.contains("{{") {
        if let Some(problem) = not_a_template(parsed.as_ref()) {
            return Err(ConfigError::NotAnInjectorConfig { problem });
        }
    }
    Ok(LoadedInjectConfig {
        config,
        shape: if bare {
            InjectConfigShape::BareTemplate
        } else {
            InjectConfigShape::Templates
        },
        values: None,
    })
}

/// The command that prints the `config` key of Istio's injector ConfigMap.
pub const KUBECTL_CONFIG_HINT: &str =
    "`kubectl get cm istio-sidecar-injector -n istio-system -o jsonpath='{.data.config}'`";

/// Whether the parsed text has a non-empty `templates` mapping of strings.
fn has_templates(parsed: Option<&Value>) -> bool {
    parsed
        .and_then(|v| v.get("templates"))
        .and_then(Value::as_object)
        .is_some_and(|t| !t.is_empty() && t.values().all(Value::is_string))
}

/// Why a static text (no template action) cannot be a sidecar template, if it cannot.
fn not_a_template(parsed: Option<&Value>) -> Option<String> {
    let m = match parsed {
        None => return None,
        Some(Value::Null) => return Some("the file is empty".into()),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Some(format!(
                "the file holds {} instead of a mapping",
                short(other)
            ))
        }
    };
    if m.contains_key("spec") {
        return None;
    }
    if m.is_empty() {
        return Some("the file is an empty mapping".into());
    }
    let keys: Vec<&str> = m.keys().map(String::as_str).take(6).collect();
    let looks_like = if m.contains_key("templates") {
        " (its `templates` is empty)"
    } else {
        match classify(parsed.unwrap_or(&Value::Null)) {
            Some((InputKind::Values, _)) => {
                " (this looks like the `values` key: pass it with --valuesFile)"
            }
            Some((InputKind::MeshConfig, _)) => {
                " (this looks like a mesh config: pass it with --meshConfigFile)"
            }
            _ => "",
        }
    };
    Some(format!(
        "found a mapping with keys {}{}, which adds no container{looks_like}",
        keys.join(", "),
        if m.len() > keys.len() { ", ..." } else { "" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inject_config_shapes() {
        let shape = |t: &str| load_inject_config(t).map(|l| (l.shape, l.values));
        let templates = "templates:\n  sidecar: |\n    spec: {}\n";
        assert_eq!(
            shape(templates).ok(),
            Some((InjectConfigShape::Templates, None))
        );
        let bare = "spec:\n  containers:\n  - name: istio-proxy\n";
        assert_eq!(
            shape(bare).ok(),
            Some((InjectConfigShape::BareTemplate, None))
        );
        // Template actions: istioctl's fallback, judged when rendered.
        let dynamic = "metadata:\n  labels: {a: \"{{ .Revision }}\"}\n";
        assert_eq!(
            shape(dynamic).ok(),
            Some((InjectConfigShape::BareTemplate, None))
        );
        let cm = "kind: ConfigMap\ndata:\n  config: |\n    templates:\n      sidecar: 'spec: {}'\n  values: '{}'\n";
        assert_eq!(
            shape(cm).ok(),
            Some((InjectConfigShape::ConfigMap, Some("{}".to_string())))
        );
        for (text, why) in [
            ("{}", "empty mapping"),
            ("", "empty"),
            ("templates: {}\n", "`templates` is empty"),
            ("global: {hub: x}\n", "--valuesFile"),
            ("defaultConfig: {}\n", "--meshConfigFile"),
            ("- a\n", "instead of a mapping"),
            (
                "kind: ConfigMap\ndata: {values: x}\n",
                "jsonpath='{.data.config}'",
            ),
        ] {
            let e = shape(text).map(|_| ()).expect_err(text).to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
