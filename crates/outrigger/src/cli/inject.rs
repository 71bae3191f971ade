//! Flags of `outrigger inject`.

use std::path::PathBuf;

use super::common::{ConfigFiles, NativeMode};

/// Flags of `outrigger inject`.
#[derive(Debug, clap::Args)]
pub struct InjectArgs {
    /// Input manifest (multi-document YAML); `-` reads standard input.
    #[arg(short = 'f', long = "filename")]
    pub filename: PathBuf,
    /// Write the result here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Istio's configuration files.
    #[command(flatten)]
    pub files: ConfigFiles,
    /// Native sidecars: true, false, or auto (offline: follows ENABLE_NATIVE_SIDECARS).
    #[arg(long = "native-sidecars", value_enum)]
    pub native_sidecars: Option<NativeMode>,
    /// Control plane revision (`default` means none).
    #[arg(long = "revision", default_value = "")]
    pub revision: String,
    /// Print a unified diff of what injection changes instead of the documents; exits 1 when
    /// something changed, 0 when nothing did (2 on error), like `diff`.
    #[arg(long = "diff")]
    pub diff: bool,
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
