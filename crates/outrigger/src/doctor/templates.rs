//! The `templates` check: what the served injector configuration's templates use that outrigger
//! does not implement (a newer Istio's, or a custom template), found by the library's
//! [`outrigger_inject::unsupported::config_findings`], the same findings that keep `serve` not
//! ready and refuse a reload.

use outrigger_inject::unsupported;

use super::{Check, Verdict};
use crate::kube::config_watch::RawConfig;

/// Name of the check.
pub const TEMPLATES: &str = "templates";

/// Judge the templates of the configuration outrigger serves, as
/// [`super::probe::served_raw`] read it.
pub fn check(served: &Result<Option<RawConfig>, String>) -> Check {
    let raw =
        match served {
            Ok(raw) => raw,
            Err(e) => return Check::with(
                TEMPLATES,
                Verdict::Fail,
                format!("cannot read the configuration outrigger serves: {e}"),
                "install Istio first (its namespace and the ConfigMaps named above), and let the \
                 server read them (deploy/base's istio-rbac.yaml): until then it cannot either \
                 and stays not ready (see its /readyz)",
            ),
        };
    let Some(raw) = raw else {
        return Check::pass(
            TEMPLATES,
            "the server serves the embedded default configuration (no Istio ConfigMap named)",
        );
    };
    judge(&raw.config)
}

/// The verdict on an injector `config` document.
pub fn judge(config: &str) -> Check {
    let findings = unsupported::config_findings(config);
    if findings.is_empty() {
        return Check::pass(
            TEMPLATES,
            format!(
                "every template of the served configuration uses only what outrigger implements \
                 (verified Istio: {})",
                unsupported::VERIFIED_ISTIO.join(", ")
            ),
        );
    }
    let list: Vec<String> = findings.iter().map(ToString::to_string).collect();
    Check::with(
        TEMPLATES,
        Verdict::Fail,
        list.join("; "),
        "serve refuses this configuration (not ready at start-up, the last good one kept on a \
         reload): use an Istio version of the support matrix, or change the template",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_calling_an_unimplemented_function_fails_naming_it() {
        let bad =
            "templates:\n  sidecar: |\n    metadata:\n      labels:\n        id: {{ uuidv4 }}\n";
        let c = judge(bad);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(
            c.finding.contains("\"sidecar\"") && c.finding.contains("uuidv4"),
            "{}",
            c.finding
        );
        let good = "templates:\n  sidecar: |\n    metadata:\n      labels:\n        id: {{ .ObjectMeta.Name }}\n";
        assert_eq!(judge(good).verdict, Verdict::Pass);
    }
}
