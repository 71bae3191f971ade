//! Flags of `outrigger inject`.

use std::path::PathBuf;

use crate::cli::common::{ClusterArgs, ConfigFiles, TemplateEnvArgs};
use outrigger_inject::decide::native::NativeMode;

/// Flags of `outrigger inject`.
#[derive(Debug, clap::Args)]
pub struct InjectArgs {
    /// Input manifest (multi-document YAML); `-` reads standard input.
    #[arg(short = 'f', long = "filename")]
    pub filename: PathBuf,
    /// Write the result to this file instead of standard output (istioctl kube-inject's `-o`: a
    /// file, not a format; `-o ./json` for a file named like a kubectl format).
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = output_file)]
    pub output: Option<PathBuf>,
    /// Istio's configuration files.
    #[command(flatten)]
    pub files: ConfigFiles,
    /// What the templates may read of the environment.
    #[command(flatten)]
    pub env: TemplateEnvArgs,
    /// Where `--kube` reads the configuration in the cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Native sidecars: true, false, or auto (offline: follows ENABLE_NATIVE_SIDECARS).
    #[arg(long = "native-sidecars", value_parser = crate::cli::values::native_mode())]
    pub native_sidecars: Option<NativeMode>,
    /// `--revision`: the control plane revision.
    #[command(flatten)]
    pub revision: crate::cli::common::RevisionArg<crate::cli::common::revision_flags::Inject>,
    /// What decides whether a pod is injected (`--namespace-labels`, `--selector-revision`,
    /// `--revision-tag`), as `check` takes it.
    #[command(flatten)]
    pub decision: crate::cli::common::DecisionArgs,
    /// Print a unified diff of what injection changes instead of the documents; exits 1 when
    /// something changed, 0 when nothing did (2 on error), like `diff`.
    #[arg(long = "diff")]
    pub diff: bool,
    /// Remove a previous injection completely before injecting: the containers, volumes and
    /// pull secrets its `sidecar.istio.io/status` lists, rewritten probes and Prometheus
    /// annotations, and the labels and annotations it wrote (not Istio's re-injection, which
    /// merges the new sidecar onto the old one).
    #[arg(long = "reinject")]
    pub reinject: bool,
    /// Colour the diff: auto (when standard output is a terminal and NO_COLOR is unset), always,
    /// never.
    #[arg(long = "color", value_enum, default_value = "auto")]
    pub color: ColorMode,
    /// Do not print the summary line on standard error (warnings are still printed).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// When to colour the diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorMode {
    /// When standard output is a terminal and `NO_COLOR` is unset or empty.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// kubectl's `-o` formats (`json`, `jsonpath=...`): what a user who means a format types.
pub const KUBECTL_OUTPUT_FORMATS: [&str; 6] = ["yaml", "json", "wide", "name", "table", "jsonpath"];

/// kubectl's `-o FORMAT=ARGUMENT` formats.
const KUBECTL_TEMPLATE_FORMATS: [&str; 7] = [
    "jsonpath",
    "jsonpath-file",
    "jsonpath-as-json",
    "go-template",
    "go-template-file",
    "template",
    "custom-columns",
];

/// The value parser of `inject -o`: a file name, refusing one that reads as a kubectl output
/// format (`-o json` would silently write YAML to a file named `json`).
pub fn output_file(value: &str) -> Result<PathBuf, String> {
    let format = value.split_once('=').map_or(value, |(head, _)| head);
    let is_format = KUBECTL_OUTPUT_FORMATS.contains(&value.to_ascii_lowercase().as_str())
        || (value.contains('=') && KUBECTL_TEMPLATE_FORMATS.contains(&format));
    if is_format {
        return Err(format!(
            "`inject -o` is the output file (as in istioctl kube-inject), not kubectl's output \
             format; the output is always YAML. Write `-o ./{value}` to mean a file of that name"
        ));
    }
    Ok(PathBuf::from(value))
}
