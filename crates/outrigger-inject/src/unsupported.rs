//! What an injector config's templates use that outrigger does not implement: the findings a
//! newer Istio's templates can produce, named so that an operator sees *which* feature, in
//! *which* template, instead of pods failing one by one.
//!
//! * [`config_findings`] reads an injector `config` document (the `config` key of
//!   `istio-sidecar-injector`) and reports, per template: a function no release outrigger knows
//!   defines ([`Missing::UnknownFunction`]: Go's parser refuses it, so the configuration does not
//!   load), any other parse failure ([`Missing::Syntax`]: e.g. a `text/template` construct newer
//!   than outrigger's parser), and calls of the Sprig functions outrigger accepts but does not
//!   implement ([`Missing::SprigFunction`]: the template fails wherever the call executes, which
//!   a probe render may never reach).
//! * [`template_findings`] reports the last kind for templates already parsed (a loaded
//!   [`crate::config::Snapshot`]); [`crate::guard::assess`] refuses a configuration with any.
//!
//! The templates of every Istio release in [`VERIFIED_ISTIO`] produce no finding (tested on the
//! releases' own rendered configs); so a finding means a newer Istio, or a custom template.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::template::{Template, TemplateError};

/// The Istio minors whose injector templates outrigger was verified against (their charts'
/// rendered `config`: every template parses, and none calls what outrigger lacks).
pub const VERIFIED_ISTIO: &[&str] = &["1.24", "1.26", "1.28"];

/// What a template uses that outrigger lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// A Sprig v3 function outrigger accepts but does not implement: rendering fails where the
    /// call executes (`error calling NAME: not implemented by outrigger`).
    SprigFunction(String),
    /// A function that is neither a Go builtin, a Sprig v3 function nor one of the Istio
    /// injector's functions outrigger knows: the template does not parse, as in Go.
    UnknownFunction(String),
    /// Any other parse failure, in Go's words (a newer `text/template` construct, or a template
    /// that is broken).
    Syntax(String),
}

/// One finding: a template, the line, and what it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The template's name (its key under `templates`).
    pub template: String,
    /// 1-based line in the template's text.
    pub line: usize,
    /// What outrigger lacks.
    pub missing: Missing,
}

impl Finding {
    /// A short label of the feature, for a metric or a table: `sprig:NAME`, `function:NAME` or
    /// `syntax`.
    pub fn feature(&self) -> String {
        match &self.missing {
            Missing::SprigFunction(f) => format!("sprig:{f}"),
            Missing::UnknownFunction(f) => format!("function:{f}"),
            Missing::Syntax(_) => "syntax".into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, line) = (&self.template, self.line);
        match &self.missing {
            Missing::SprigFunction(name) => write!(
                f,
                "template {t:?} line {line} calls Sprig function {name:?}, which outrigger does not implement"
            )?,
            Missing::UnknownFunction(name) => write!(
                f,
                "template {t:?} line {line} calls function {name:?}, which is not a Go, Sprig v3 or Istio injector function outrigger knows"
            )?,
            Missing::Syntax(msg) => write!(f, "template {t:?} does not parse: {msg}")?,
        }
        write!(
            f,
            " (the templates of Istio {} do not use it: a newer Istio's, or a custom template)",
            VERIFIED_ISTIO.join(", ")
        )
    }
}

/// The Sprig functions outrigger does not implement that `templates` call, one finding per
/// call, by template name then line.
pub fn template_findings(templates: &BTreeMap<String, Arc<Template>>) -> Vec<Finding> {
    templates
        .iter()
        .flat_map(|(name, t)| {
            t.unimplemented_calls()
                .into_iter()
                .map(move |(function, line)| Finding {
                    template: name.clone(),
                    line,
                    missing: Missing::SprigFunction(function),
                })
        })
        .collect()
}

/// Every finding of an injector `config` document, by template name then line. A document that
/// is not a map with a `templates` map of strings has no templates to judge: no finding.
pub fn config_findings(config: &str) -> Vec<Finding> {
    let Ok(Value::Object(doc)) = crate::yaml::from_str(config) else {
        return Vec::new();
    };
    let Some(Value::Object(raw)) = doc
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("templates"))
        .map(|(_, v)| v)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, text) in raw {
        let Some(text) = text.as_str() else { continue };
        match Template::parse(name, text) {
            Ok(t) => {
                let one = BTreeMap::from([(name.clone(), Arc::new(t))]);
                out.extend(template_findings(&one));
            }
            Err(e) => out.push(parse_finding(name, &e)),
        }
    }
    out
}

/// Classify a parse failure of template `name`.
fn parse_finding(name: &str, e: &TemplateError) -> Finding {
    let (line, msg) = match e {
        TemplateError::Parse { line, msg, .. } => (*line, msg.clone()),
        other => (0, other.to_string()),
    };
    let unknown = msg
        .strip_prefix("function \"")
        .and_then(|rest| rest.strip_suffix("\" not defined"));
    Finding {
        template: name.to_string(),
        line,
        missing: match unknown {
            Some(function) => Missing::UnknownFunction(function.to_string()),
            None => Missing::Syntax(msg),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::defaults;

    fn config(template: &str) -> String {
        let body: String = template.lines().map(|l| format!("    {l}\n")).collect();
        format!("templates:\n  sidecar: |\n{body}  other: |\n    spec: {{}}\n")
    }

    #[test]
    fn the_embedded_default_uses_nothing_outrigger_lacks() {
        assert_eq!(config_findings(defaults::CONFIG), Vec::new());
    }

    #[test]
    fn an_unimplemented_sprig_function_is_named_with_template_and_line() {
        let text = config("spec:\n  containers:\n  - name: x\n    image: {{ uuidv4 }}\n");
        let found = config_findings(&text);
        assert_eq!(
            found,
            [Finding {
                template: "sidecar".into(),
                line: 4,
                missing: Missing::SprigFunction("uuidv4".into())
            }]
        );
        assert_eq!(found[0].feature(), "sprig:uuidv4");
        assert!(found[0]
            .to_string()
            .starts_with("template \"sidecar\" line 4 calls Sprig function \"uuidv4\", which outrigger does not implement (the templates of Istio 1.24, 1.26, 1.28 do not use it"));
        // Inside a branch a probe pod never takes, and nested in a pipeline and a chain.
        let hidden = config(
            "{{ if .ObjectMeta.Annotations.never }}\n{{ (print (uuidv4 | upper)) }}{{ end }}\n",
        );
        assert_eq!(config_findings(&hidden)[0].line, 2);
        // Implemented Sprig functions are not findings.
        assert_eq!(config_findings(&config("{{ upper \"a\" }}\n")), Vec::new());
    }

    #[test]
    fn unknown_functions_and_other_parse_failures_are_named() {
        let found = config_findings(&config("a\n{{ istioNewHelper .Values }}\n"));
        assert_eq!(
            found,
            [Finding {
                template: "sidecar".into(),
                line: 2,
                missing: Missing::UnknownFunction("istioNewHelper".into())
            }]
        );
        assert_eq!(found[0].feature(), "function:istioNewHelper");
        let found = config_findings(&config("{{ if }}\n"));
        assert!(
            matches!(&found[..], [Finding { missing: Missing::Syntax(m), line: 1, .. }] if m.contains("missing value for if")),
            "{found:?}"
        );
        assert_eq!(found[0].feature(), "syntax");
    }

    #[test]
    fn documents_without_templates_have_no_findings() {
        for text in ["", "policy: enabled\n", "[1, 2]", "templates: 3\n", ": :"] {
            assert_eq!(config_findings(text), Vec::new(), "{text:?}");
        }
    }
}
