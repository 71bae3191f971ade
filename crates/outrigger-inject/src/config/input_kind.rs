//! Which of Istio's three configuration inputs a document looks like (the injector `config`,
//! the `values`, the `mesh` config), so that a file passed to the wrong flag is refused with a
//! message naming what it is and which flag takes it, instead of being read as nothing.
//!
//! Each input has top-level keys that only it uses; a document is classified by those keys
//! alone. A document with none of them (or keys of its own kind too) is not judged.

use serde_json::Value;

use crate::config::ConfigError;

/// One of Istio's configuration inputs, or a whole ConfigMap holding them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// The `config` key of the `istio-sidecar-injector` ConfigMap (`--injectConfigFile`).
    InjectorConfig,
    /// The `values` key of the same ConfigMap (`--valuesFile`).
    Values,
    /// The `mesh` key of the `istio` ConfigMap (`--meshConfigFile`).
    MeshConfig,
    /// A whole ConfigMap (`kind: ConfigMap`).
    ConfigMap,
}

/// Top-level keys only an injector config has.
const INJECTOR_KEYS: [&str; 7] = [
    "templates",
    "template",
    "policy",
    "defaultTemplates",
    "neverInjectSelector",
    "alwaysInjectSelector",
    "injectedAnnotations",
];

/// Top-level keys only the values have.
const VALUES_KEYS: [&str; 6] = [
    "global",
    "sidecarInjectorWebhook",
    "pilot",
    "istio_cni",
    "gateways",
    "meshConfig",
];

/// Top-level keys only a mesh config has.
const MESH_KEYS: [&str; 12] = [
    "defaultConfig",
    "meshNetworks",
    "trustDomain",
    "rootNamespace",
    "defaultProviders",
    "extensionProviders",
    "enablePrometheusMerge",
    "accessLogFile",
    "outboundTrafficPolicy",
    "enableTracing",
    "ingressClass",
    "trustDomainAliases",
];

impl InputKind {
    /// What the input is, in messages.
    pub fn describe(self) -> &'static str {
        match self {
            InputKind::InjectorConfig => {
                "an injector config (the `config` key of the istio-sidecar-injector ConfigMap)"
            }
            InputKind::Values => {
                "values (the `values` key of the istio-sidecar-injector ConfigMap)"
            }
            InputKind::MeshConfig => "a mesh config (the `mesh` key of the istio ConfigMap)",
            InputKind::ConfigMap => "a whole ConfigMap",
        }
    }

    /// The flag of `outrigger inject` that takes it.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            InputKind::InjectorConfig => Some("--injectConfigFile"),
            InputKind::Values => Some("--valuesFile"),
            InputKind::MeshConfig => Some("--meshConfigFile"),
            InputKind::ConfigMap => None,
        }
    }

    /// The kubectl command that extracts this input from its ConfigMap.
    fn kubectl(self) -> &'static str {
        match self {
            InputKind::InjectorConfig | InputKind::ConfigMap => {
                "kubectl get cm istio-sidecar-injector -n istio-system -o jsonpath='{.data.config}'"
            }
            InputKind::Values => {
                "kubectl get cm istio-sidecar-injector -n istio-system -o jsonpath='{.data.values}'"
            }
            InputKind::MeshConfig => {
                "kubectl get cm istio -n istio-system -o jsonpath='{.data.mesh}'"
            }
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            InputKind::InjectorConfig => &INJECTOR_KEYS,
            InputKind::Values => &VALUES_KEYS,
            InputKind::MeshConfig => &MESH_KEYS,
            InputKind::ConfigMap => &[],
        }
    }
}

/// What `doc` looks like, and the top-level keys that say so; `None` when it has no key
/// particular to one input, or keys of several.
pub fn classify(doc: &Value) -> Option<(InputKind, Vec<String>)> {
    let m = doc.as_object()?;
    if m.get("kind").and_then(Value::as_str) == Some("ConfigMap") {
        return Some((InputKind::ConfigMap, vec!["kind".to_string()]));
    }
    let mut found = [
        InputKind::InjectorConfig,
        InputKind::Values,
        InputKind::MeshConfig,
    ]
    .into_iter()
    .filter_map(|kind| {
        let keys: Vec<String> = m
            .keys()
            .filter(|k| kind.keys().contains(&k.as_str()))
            .cloned()
            .collect();
        (!keys.is_empty()).then_some((kind, keys))
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// Refuse `doc`, read as `expected`, when it looks like another input: the error says what it
/// looks like, which keys say so, and which flag takes it (or how to extract the key from a
/// whole ConfigMap).
pub fn expect(doc: &Value, expected: InputKind) -> Result<(), ConfigError> {
    let Some((found, keys)) = classify(doc) else {
        return Ok(());
    };
    if found == expected {
        return Ok(());
    }
    let fix = match found.flag() {
        Some(flag) => format!("pass it with {flag}"),
        None => format!("extract the key with `{}`", expected.kubectl()),
    };
    Err(ConfigError::WrongInput {
        expected: expected.describe(),
        found: found.describe(),
        keys: keys.join(", "),
        fix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::defaults;
    use crate::yaml;

    fn doc(text: &str) -> Value {
        yaml::from_str(text).expect("valid YAML")
    }

    #[test]
    fn the_embedded_inputs_are_what_they_are() {
        assert_eq!(
            classify(&doc(defaults::CONFIG)).map(|c| c.0),
            Some(InputKind::InjectorConfig)
        );
        assert_eq!(
            classify(&doc(defaults::VALUES)).map(|c| c.0),
            Some(InputKind::Values)
        );
        assert_eq!(
            classify(&doc(defaults::MESH)).map(|c| c.0),
            Some(InputKind::MeshConfig)
        );
        for kind in [
            InputKind::InjectorConfig,
            InputKind::Values,
            InputKind::MeshConfig,
        ] {
            let text = match kind {
                InputKind::InjectorConfig => defaults::CONFIG,
                InputKind::Values => defaults::VALUES,
                _ => defaults::MESH,
            };
            assert!(expect(&doc(text), kind).is_ok(), "{kind:?}");
        }
    }

    #[test]
    fn a_mix_up_names_what_was_expected_found_and_the_flag() {
        let err = expect(&doc(defaults::VALUES), InputKind::MeshConfig)
            .expect_err("values as mesh")
            .to_string();
        assert!(
            err.starts_with("expected a mesh config (the `mesh` key of the istio ConfigMap)")
                && err.contains("looks like values (the `values` key")
                && err.contains("pass it with --valuesFile"),
            "{err}"
        );
        let err = expect(&doc(defaults::CONFIG), InputKind::Values)
            .expect_err("config as values")
            .to_string();
        assert!(err.contains("pass it with --injectConfigFile"), "{err}");
        let err = expect(
            &doc("kind: ConfigMap\ndata:\n  mesh: 'trustDomain: x'\n"),
            InputKind::MeshConfig,
        )
        .expect_err("a ConfigMap")
        .to_string();
        assert!(err.contains("jsonpath='{.data.mesh}'"), "{err}");
    }

    #[test]
    fn documents_without_telling_keys_are_not_judged() {
        for text in ["{}", "foo: 1", "[1, 2]", "42", "global: {}\ntrustDomain: x"] {
            assert_eq!(classify(&doc(text)), None, "{text}");
            assert!(expect(&doc(text), InputKind::Values).is_ok());
        }
    }
}
