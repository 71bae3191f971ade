//! `outrigger inject`: manual sidecar injection of manifests, flag-compatible with
//! `istioctl kube-inject`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use outrigger_inject::workload::{self, KubeInjectOptions};
use outrigger_inject::yaml;

use crate::settings::{self, ConfigFiles, NativeMode};

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
    /// Print a unified diff of what injection changes instead of the documents.
    #[arg(long = "diff")]
    pub diff: bool,
}

fn read_input(path: &PathBuf) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// How messages name the input: its path, or `standard input` for `-`.
fn input_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

/// Run `outrigger inject`.
pub fn run(args: &InjectArgs) -> Result<()> {
    let snapshot = settings::kube_inject_snapshot(
        args.files.inject_config_file.as_deref(),
        args.files.values_file.as_deref(),
        args.files.mesh_config_file.as_deref(),
    )?;
    let input = read_input(&args.filename)?;
    let revision = if args.revision == "default" {
        ""
    } else {
        args.revision.as_str()
    };
    let compliance = std::env::var("COMPLIANCE_POLICY").unwrap_or_default();
    let opts = KubeInjectOptions {
        snapshot: &snapshot,
        native_sidecars: settings::native_sidecars_offline(args.native_sidecars),
        revision,
        compliance_policy: &compliance,
    };
    let source = input_name(&args.filename);
    let out =
        workload::inject_manifests(&input, &opts).with_context(|| format!("injecting {source}"))?;
    if out.changes.is_empty() {
        anyhow::bail!(
            "no Kubernetes objects in {source} (the input is empty or only has comments)"
        );
    }
    if !out.warnings.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err);
        for w in &out.warnings {
            let _ = writeln!(err, "{w}");
        }
    }
    let text = if args.diff {
        render_diff(&out)
    } else {
        out.text
    };
    match &args.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("writing standard output")?,
    }
    Ok(())
}

/// Unified diff, per injected document, of its YAML before and after injection.
fn render_diff(out: &workload::KubeInjectOutput) -> String {
    let mut s = String::new();
    for c in &out.changes {
        let Some((before, after)) = &c.before_after else {
            continue;
        };
        let (a, b) = (yaml::to_string(before), yaml::to_string(after));
        if a == b {
            continue;
        }
        let label = format!("document {} ({} {})", c.index, c.kind, c.name);
        let diff = similar::TextDiff::from_lines(&a, &b);
        s.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("{label} original"), &format!("{label} injected"))
                .to_string(),
        );
    }
    s
}
