//! Flags of `outrigger drift`.

use std::path::PathBuf;

use super::common::{native_mode_flag, ConfigFiles};

/// Output format of `outrigger drift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DriftOutput {
    /// One row per pod template, the differing fields below it.
    Table,
    /// One JSON object per pod template, in a JSON array.
    Json,
}

/// Flags of `outrigger drift`.
#[derive(Debug, clap::Args)]
pub struct DriftArgs {
    /// Manifests to examine (multi-document YAML, as `outrigger inject` writes them); `-` reads
    /// standard input.
    #[arg(short = 'f', long = "filename")]
    pub filename: PathBuf,
    /// Istio's configuration files: the configuration in force (default: the embedded one).
    #[command(flatten)]
    pub files: ConfigFiles,
    /// Native sidecars in the configuration in force: true, false, or auto (offline: follows
    /// ENABLE_NATIVE_SIDECARS).
    #[arg(long = "native-sidecars", value_parser = native_mode_flag())]
    pub native_sidecars: Option<crate::NativeMode>,
    /// Revision in force (`default` means none): pods injected by another are `wrong-revision`.
    #[arg(long = "revision", default_value = "")]
    pub revision: String,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: DriftOutput,
}
