//! `outrigger inject`: manual sidecar injection of manifests, flag-compatible with
//! `istioctl kube-inject`.

use std::io::{BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use outrigger_inject::config::Snapshot;
use outrigger_inject::kube::names::STATUS_ANNOTATION;
use outrigger_inject::kube_inject::{
    self, KubeInjectOptions, Outcome, ProcessedDocument, SkipReason,
};
use outrigger_inject::yaml;

use crate::cli::common::ConfigFiles;
use crate::cli::inject::{ClusterArgs, DEFAULT_INJECT_CONFIG_MAP, DEFAULT_MESH_CONFIG_MAP};
use crate::input;
use crate::kube::config_watch::{self, ConfigMapRef};
use crate::kube::inject_source;
use crate::settings::{self, Input};
use outrigger_inject::decide::native::NativeMode;

pub use crate::cli::inject::{ColorMode, InjectArgs};

impl ColorMode {
    /// Whether to colour output going to `output` (`None`: standard output).
    fn enabled(self, output: Option<&Path>) -> bool {
        match self {
            ColorMode::Always => true,
            ColorMode::Never => false,
            ColorMode::Auto => {
                output.is_none()
                    && std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// Where the output goes: standard output as documents come, or a file written beside the
/// target and renamed over it only when the whole run succeeded ([`crate::safe_write`]).
enum Output {
    Stdout(BufWriter<std::io::StdoutLock<'static>>),
    File {
        target: PathBuf,
        file: crate::safe_write::AtomicFile,
        writer: BufWriter<std::fs::File>,
    },
}

impl Output {
    fn open(target: Option<&Path>) -> Result<Output> {
        let Some(target) = target else {
            return Ok(Output::Stdout(BufWriter::new(std::io::stdout().lock())));
        };
        let mut file = crate::safe_write::AtomicFile::create(target)?;
        let handle = file
            .file()
            .try_clone()
            .with_context(|| format!("writing {}", target.display()))?;
        Ok(Output::File {
            target: target.to_path_buf(),
            file,
            writer: BufWriter::new(handle),
        })
    }

    fn write(&mut self, text: &str) -> Result<()> {
        match self {
            Output::Stdout(w) => w
                .write_all(text.as_bytes())
                .context("writing standard output"),
            Output::File { target, writer, .. } => writer
                .write_all(text.as_bytes())
                .with_context(|| format!("writing {}", target.display())),
        }
    }

    /// Flush and, for a file, move it into place.
    fn finish(self) -> Result<()> {
        match self {
            Output::Stdout(mut w) => w.flush().context("writing standard output"),
            Output::File {
                target,
                file,
                writer,
            } => {
                writer
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("writing {}", target.display()))?;
                // Dropped unrenamed on error: the temporary file goes, the target stays.
                file.commit()
            }
        }
    }

    /// A failed run: standard output keeps what was written (as istioctl); a file is not created.
    fn abandon(self) {
        match self {
            Output::Stdout(mut w) => {
                let _ = w.flush();
            }
            Output::File { file, writer, .. } => {
                drop(writer);
                drop(file);
            }
        }
    }
}

/// What `inject` and `drift` inject with: the configuration (the cluster's ConfigMaps with
/// `--kube`, else the files or the embedded default), the revision as the library takes it
/// (`default` is none) and Istio's `COMPLIANCE_POLICY`.
pub(crate) struct Setup {
    snapshot: Snapshot,
    revision: String,
    compliance: String,
}

impl Setup {
    /// Read the configuration as the flags say.
    pub(crate) fn load(
        cluster: &ClusterArgs,
        files: &ConfigFiles,
        revision: &str,
    ) -> Result<Setup> {
        let snapshot = if cluster.kube {
            cluster_snapshot(cluster, files, revision)?
        } else {
            settings::kube_inject_snapshot(
                files.inject_config_file.as_deref(),
                files.values_file.as_deref(),
                files.mesh_config_file.as_deref(),
                revision,
            )?
        };
        Ok(Setup {
            snapshot,
            revision: if revision == "default" { "" } else { revision }.to_string(),
            compliance: std::env::var("COMPLIANCE_POLICY").unwrap_or_default(),
        })
    }

    /// The library's options for a run (`--native-sidecars` as given, `--reinject`).
    pub(crate) fn options(
        &self,
        native_sidecars: Option<NativeMode>,
        reinject: bool,
    ) -> KubeInjectOptions<'_> {
        KubeInjectOptions {
            snapshot: &self.snapshot,
            native_sidecars: settings::native_sidecars_offline(native_sidecars),
            revision: &self.revision,
            compliance_policy: &self.compliance,
            reinject,
        }
    }
}

/// Run `outrigger inject`.
///
/// Documents are read, injected and written one at a time, so memory follows the largest
/// document, not the input. Warnings are printed after the run, as istioctl does (also when it
/// fails, before the error), then a summary line unless `--quiet`. With `--diff` the exit status
/// says whether anything changed.
pub fn run(args: &InjectArgs) -> Result<ExitCode> {
    crate::template_env::init(&args.env.template_env)?;
    let setup = Setup::load(&args.cluster, &args.files, &args.revision)?;
    let opts = setup.options(args.native_sidecars, args.reinject);
    let source = input::name(&args.filename);
    let input = input::open(&args.filename)?;
    let mut output = Output::open(args.output.as_deref())?;
    let mut stats = Stats {
        color: args.diff && args.color.enabled(args.output.as_deref()),
        ..Stats::default()
    };
    let result = stream(input, &opts, args, &mut output, &mut stats);
    let mut err = std::io::stderr().lock();
    if !stats.warnings.is_empty() {
        let _ = writeln!(err);
        for w in &stats.warnings {
            let _ = writeln!(err, "{w}");
        }
    }
    let result = result.and_then(|()| {
        if stats.documents == 0 {
            anyhow::bail!(
                "no Kubernetes objects in {source} (the input is empty or only has comments)"
            );
        }
        Ok(())
    });
    match result {
        Ok(()) => {
            output.finish()?;
            if !args.quiet {
                let _ = writeln!(err, "{}", stats.summary());
            }
            Ok(if args.diff && stats.changed > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e) => {
            let written = stats.written;
            let to_stdout = matches!(output, Output::Stdout(_));
            output.abandon();
            let e = e.context(format!("injecting {source}"));
            if to_stdout && written > 0 && !args.diff {
                Err(crate::report::with_note(
                    e,
                    format!("the {written} document(s) before it were written to standard output"),
                ))
            } else {
                Err(e)
            }
        }
    }
}

/// The snapshot of `inject --kube`: the injector ConfigMap's `config` and `values` keys and the
/// mesh ConfigMap's `mesh` key, as `istioctl kube-inject` reads them, except the inputs given as
/// files. The cluster is not contacted when every input is a file. `drift --kube` reads its
/// configuration in force the same way.
pub(crate) fn cluster_snapshot(
    c: &ClusterArgs,
    files: &ConfigFiles,
    revision: &str,
) -> Result<Snapshot> {
    let configmap = |name: &str, default: &str| ConfigMapRef {
        namespace: c.target.istio_namespace.clone(),
        name: inject_source::configmap_name(name, default, revision),
    };
    let inject = configmap(&c.inject_config_map_name, DEFAULT_INJECT_CONFIG_MAP);
    let mesh = configmap(&c.mesh_config_map_name, DEFAULT_MESH_CONFIG_MAP);
    let mut inject_keys = Vec::new();
    if files.inject_config_file.is_none() {
        inject_keys.push(config_watch::CONFIG_KEY);
    }
    if files.values_file.is_none() {
        inject_keys.push(config_watch::VALUES_KEY);
    }
    let read_mesh = files.mesh_config_file.is_none();
    let (mut inject_values, mesh_value) = if inject_keys.is_empty() && !read_mesh {
        (Vec::new(), None)
    } else {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the runtime")?;
        rt.block_on(async {
            let cluster = crate::kube::client::connect(
                c.target.kubeconfig.as_deref(),
                c.target.context.as_deref(),
            )
            .await?;
            let client = cluster.client.clone();
            let hint = |flag: &str, file_flags: &str| {
                format!(
                    "is Istio installed in namespace {}? choose it with --istioNamespace, {flag} \
                     or --revision, or pass {file_flags}",
                    c.target.istio_namespace
                )
            };
            let inject_values = if inject_keys.is_empty() {
                Vec::new()
            } else {
                inject_source::read_keys(
                    client.clone(),
                    &inject,
                    &inject_keys,
                    &hint(
                        "--injectConfigMapName",
                        "--injectConfigFile and --valuesFile",
                    ),
                )
                .await
                .map_err(|e| cluster.explain(e))?
            };
            let mesh_value = if read_mesh {
                let mut v = inject_source::read_keys(
                    client.clone(),
                    &mesh,
                    &[config_watch::MESH_KEY],
                    &hint("--meshConfigMapName", "--meshConfigFile"),
                )
                .await
                .map_err(|e| cluster.explain(e))?;
                v.pop()
            } else {
                None
            };
            anyhow::Ok((inject_values, mesh_value))
        })
        .map_err(|e| e.context("--kube"))?
    };
    let name =
        |r: &ConfigMapRef, key: &str| format!("ConfigMap {}/{} key {key:?}", r.namespace, r.name);
    let config_name = name(&inject, config_watch::CONFIG_KEY);
    let values_name = name(&inject, config_watch::VALUES_KEY);
    let mesh_name = name(&mesh, config_watch::MESH_KEY);
    // Taken in the order they were asked for.
    let values_text = files
        .values_file
        .is_none()
        .then(|| inject_values.pop())
        .flatten();
    let config_text = files
        .inject_config_file
        .is_none()
        .then(|| inject_values.pop())
        .flatten();
    fn input<'a>(
        file: &'a Option<PathBuf>,
        text: &'a Option<String>,
        name: &'a str,
    ) -> Option<Input<'a>> {
        match (file, text) {
            (Some(p), _) => Some(Input::File(p)),
            (None, Some(t)) => Some(Input::Text { name, text: t }),
            (None, None) => None,
        }
    }
    settings::kube_inject_snapshot_from(
        input(&files.inject_config_file, &config_text, &config_name),
        input(&files.values_file, &values_text, &values_name),
        input(&files.mesh_config_file, &mesh_value, &mesh_name),
        revision,
    )
}

/// Counts and warnings of one run.
#[derive(Debug, Default)]
struct Stats {
    /// Documents processed.
    documents: usize,
    /// Documents (or diffs) written.
    written: usize,
    /// Documents injected.
    injected: usize,
    /// Documents injected before, which injection left as they were.
    unchanged: usize,
    /// Documents whose injection changed them (what `--diff` shows).
    changed: usize,
    /// Workloads skipped, by reason, in order of first appearance.
    skipped: Vec<(SkipReason, usize)>,
    /// Documents passed through.
    passed: usize,
    warnings: Vec<String>,
    /// Colour the diff.
    color: bool,
}

impl Stats {
    fn count(&mut self, outcome: Outcome, unchanged: bool) {
        self.documents += 1;
        match outcome {
            Outcome::Injected if unchanged => self.unchanged += 1,
            Outcome::Injected => self.injected += 1,
            Outcome::PassedThrough => self.passed += 1,
            Outcome::Skipped(reason) => match self.skipped.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => self.skipped.push((reason, 1)),
            },
        }
    }

    /// `3 documents: 1 injected, 1 unchanged (already injected), 1 skipped (hostNetwork), 1 passed
    /// through`.
    fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.injected > 0 {
            parts.push(format!("{} injected", self.injected));
        }
        if self.unchanged > 0 {
            parts.push(format!("{} unchanged (already injected)", self.unchanged));
        }
        let skipped: usize = self.skipped.iter().map(|(_, n)| n).sum();
        if skipped > 0 {
            let reasons: Vec<String> = if self.skipped.len() == 1 {
                vec![self.skipped[0].0.as_str().to_string()]
            } else {
                self.skipped
                    .iter()
                    .map(|(r, n)| format!("{n} {}", r.as_str()))
                    .collect()
            };
            parts.push(format!("{skipped} skipped ({})", reasons.join(", ")));
        }
        if self.passed > 0 {
            parts.push(format!("{} passed through", self.passed));
        }
        let plural = if self.documents == 1 { "" } else { "s" };
        format!("{} document{plural}: {}", self.documents, parts.join(", "))
    }
}

/// Read, inject and write every document of `input`.
fn stream(
    input: impl BufRead,
    opts: &KubeInjectOptions<'_>,
    args: &InjectArgs,
    output: &mut Output,
    stats: &mut Stats,
) -> Result<()> {
    for (index, raw) in yaml::DocumentReader::new(input).enumerate() {
        let raw = raw?;
        // The trees (input and output) tell a document that injection left as it was: kept for
        // --diff, and for documents that were injected before (re-injection is a fixed point).
        let keep_trees = args.diff || raw.text.contains(STATUS_ANNOTATION);
        let doc =
            kube_inject::inject_raw_document(index, &raw.text, raw.first_line, opts, keep_trees);
        let Some(doc) = doc? else { continue };
        let unchanged = doc.outcome == Outcome::Injected
            && doc
                .trees
                .as_ref()
                .is_some_and(|(before, after)| before == after);
        stats.count(doc.outcome, unchanged);
        stats.warnings.extend(doc.warnings.iter().cloned());
        if args.diff {
            let diff = render_diff(&doc, stats.color);
            if !diff.is_empty() {
                output.write(&diff)?;
                stats.written += 1;
                stats.changed += 1;
            }
        } else {
            output.write(&doc.text)?;
            stats.written += 1;
        }
    }
    Ok(())
}

/// Unified diff of one injected document: the document as read (its parsed, normalised tree,
/// written as the output is) against the output, so that only what injection changed shows
/// (not a key order, a comment or a quantity's spelling). Empty when the document was not
/// injected or injection changed nothing (the two trees are equal).
fn render_diff(doc: &ProcessedDocument, color: bool) -> String {
    if doc.outcome != Outcome::Injected {
        return String::new();
    }
    let Some((before, after_tree)) = &doc.trees else {
        return String::new();
    };
    if before == after_tree {
        return String::new();
    }
    let Ok(raw) = yaml::json_to_yaml(before) else {
        return String::new();
    };
    let after = doc.text.strip_suffix("---\n").unwrap_or(&doc.text);
    let full = if doc.namespace.is_empty() {
        doc.name.clone()
    } else {
        format!("{}/{}", doc.namespace, doc.name)
    };
    let label = format!("{} {full} (document {}", doc.kind, doc.index);
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Patience)
        .diff_lines(&raw, after)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{label}, as read)"),
            &format!("{label}, injected)"),
        )
        .to_string();
    if color {
        colorize(&diff)
    } else {
        diff
    }
}

/// ANSI colours of a unified diff, as `git diff` uses them: bold headers, cyan hunk lines, red
/// removals, green additions.
fn colorize(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + diff.len() / 4);
    for line in diff.split_inclusive('\n') {
        let (text, nl) = match line.strip_suffix('\n') {
            Some(t) => (t, "\n"),
            None => (line, ""),
        };
        let code = if text.starts_with("--- ") || text.starts_with("+++ ") {
            "1"
        } else if text.starts_with("@@") {
            "36"
        } else if text.starts_with('-') {
            "31"
        } else if text.starts_with('+') {
            "32"
        } else {
            ""
        };
        if code.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(&format!("\x1b[{code}m{text}\x1b[0m{nl}"));
        }
    }
    out
}
