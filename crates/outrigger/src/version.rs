//! `outrigger version`: what was built (version, git commit, the Rust compiler and target of the
//! build, captured by build.rs) and what it was verified against (Istio's corpus and releases,
//! the Kubernetes versions of the support matrix in docs/kubernetes.md). `-o json` or `-o yaml`
//! print it as an object, as `kubectl version -o json`; the default text is three lines.

use anyhow::Result;
use serde_json::{json, Value};

/// Output format of `outrigger version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VersionFormat {
    /// Three lines: version, git commit, what it was verified against.
    Text,
    /// Indented JSON.
    Json,
    /// YAML.
    Yaml,
}

/// Flags of `outrigger version`.
#[derive(Debug, Clone, clap::Args)]
pub struct VersionArgs {
    /// Output format (kubectl's `-o`).
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: VersionFormat,
}

/// What the text says the injector was verified against.
const VERIFIED_AGAINST: &str = "Istio's golden injection cases (pkg/kube/inject/testdata) of \
istio/istio commit 86c9f01fd735 (2026-08-22): 104 of 104 kube-inject cases; the embedded default \
config names proxy image tag 1.28.0";

/// Istio releases whose charts' configurations are verified (the `RELEASES` of
/// crates/outrigger-inject/tests/verified_istio.rs and docs/kubernetes.md's support matrix).
pub const ISTIO_RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

/// Kubernetes minor versions whose schemas accept deploy/ (docs/kubernetes.md's support
/// matrix; `the_support_matrix_versions_accept_the_manifests` in tests/deploy_manifests.rs).
pub const KUBERNETES_VALIDATED: [&str; 5] = ["1.26", "1.28", "1.30", "1.33", "1.37"];

/// The oldest Kubernetes supported (1.25's PodDisruptionBudget lacks
/// `unhealthyPodEvictionPolicy`).
pub const KUBERNETES_MINIMUM: &str = "1.26";

/// The Kubernetes API version of the client's types (k8s-openapi's `v1_33` feature).
const KUBERNETES_CLIENT_API: &str = "1.33";

/// A value build.rs captured, or `unknown`.
fn captured(value: Option<&'static str>) -> &'static str {
    value.filter(|v| !v.is_empty()).unwrap_or("unknown")
}

fn git_commit() -> &'static str {
    captured(option_env!("OUTRIGGER_GIT_COMMIT"))
}

/// The text of `outrigger version`.
pub fn text() -> String {
    format!(
        "outrigger {}\ngit commit: {}\nverified against: {VERIFIED_AGAINST}\n",
        env!("CARGO_PKG_VERSION"),
        git_commit(),
    )
}

/// The object of `outrigger version -o json|yaml`.
pub fn object() -> Value {
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "gitCommit": git_commit(),
        "rustVersion": captured(option_env!("OUTRIGGER_RUSTC_VERSION")),
        "target": captured(option_env!("OUTRIGGER_TARGET")),
        "istio": {
            "verifiedReleases": ISTIO_RELEASES,
            "conformance": "Istio's golden injection cases (pkg/kube/inject/testdata) of istio/istio \
                            commit 86c9f01fd735 (2026-08-22): 104 of 104 kube-inject cases",
            "embeddedDefaultProxyTag": "1.28.0",
        },
        "kubernetes": {
            "minimum": KUBERNETES_MINIMUM,
            "validatedVersions": KUBERNETES_VALIDATED,
            "clientAPIVersion": KUBERNETES_CLIENT_API,
        },
    })
}

/// Print the version in `args.output`.
pub fn run(args: &VersionArgs) -> Result<()> {
    let text = match args.output {
        VersionFormat::Text => text(),
        VersionFormat::Json => crate::print::pretty_json(&object())?,
        VersionFormat::Yaml => outrigger_go::yaml::to_string(&object()),
    };
    crate::print::stdout(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_carries_the_build_and_the_matrix() {
        let v = object();
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(
            v["istio"]["verifiedReleases"],
            json!(["1.24.6", "1.26.8", "1.28.10"])
        );
        assert_eq!(v["kubernetes"]["minimum"], "1.26");
        // build.rs ran `$RUSTC --version`.
        let rustc = v["rustVersion"].as_str().expect("string");
        assert!(rustc.starts_with("rustc 1."), "{rustc}");
        assert!(text().starts_with(&format!("outrigger {}\n", env!("CARGO_PKG_VERSION"))));
    }
}
