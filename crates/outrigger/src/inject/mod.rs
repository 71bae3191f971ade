//! `outrigger inject`: manual sidecar injection of manifests, flag-compatible with
//! `istioctl kube-inject`.

pub mod args;

use std::io::{BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use outrigger_go::yaml;
use outrigger_inject::kube::names::STATUS_ANNOTATION;
use outrigger_inject::kube_inject::{
    self, KubeInjectOptions, Outcome, ProcessedDocument, SkipReason,
};

use crate::config_source::Setup;
use crate::input;

pub use crate::inject::args::{ColorMode, InjectArgs};

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

/// Run `outrigger inject`.
///
/// Documents are read, injected and written one at a time, so memory follows the largest
/// document, not the input. Warnings are printed after the run, as istioctl does (also when it
/// fails, before the error), then a summary line unless `--quiet`. With `--diff` the exit status
/// says whether anything changed.
pub fn run(args: &InjectArgs) -> Result<ExitCode> {
    crate::template_env::init(&args.env.template_env)?;
    let setup = Setup::load(
        args.cluster.source().as_ref(),
        &args.files.paths(),
        &args.revision,
    )?;
    let opts = setup.options(args.native_sidecars, args.reinject);
    let source = input::name(&args.filename);
    let input = input::open(&args.filename)?;
    let mut output = Output::open(args.output.as_deref())?;
    let mut stats = Stats {
        color: args.diff && args.color.enabled(args.output.as_deref()),
        ..Stats::default()
    };
    let decider = crate::decision::Decider::new(
        &args.decision,
        &args.revision,
        None,
        opts.settings.snapshot,
    )?;
    let result = stream(input, &opts, &decider, args, &mut output, &mut stats);
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
                    format!(
                        "the {} before it {} written to standard output",
                        crate::print::count(written, "document", "documents"),
                        if written == 1 { "was" } else { "were" }
                    ),
                ))
            } else {
                Err(e)
            }
        }
    }
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
    /// With --namespace-labels: workloads no webhook entry selects, left as written.
    not_selected: usize,
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
        if self.not_selected > 0 {
            parts.push(format!(
                "{} not selected by a webhook (--namespace-labels)",
                self.not_selected
            ));
        }
        if self.passed > 0 {
            parts.push(format!("{} passed through", self.passed));
        }
        let plural = if self.documents == 1 { "" } else { "s" };
        format!("{} document{plural}: {}", self.documents, parts.join(", "))
    }
}

/// Read, inject and write every document of `input`: the library's kube-inject loop
/// ([`kube_inject::inject_stream`]), with the decision's verdict and messages, the counts, the
/// diff and the output around it.
fn stream(
    input: impl BufRead,
    opts: &KubeInjectOptions<'_>,
    decider: &crate::decision::Decider<'_>,
    args: &InjectArgs,
    output: &mut Output,
    stats: &mut Stats,
) -> Result<()> {
    let documents = yaml::DocumentReader::new(input).map(|r| r.map_err(anyhow::Error::from));
    let prepare = |raw: &yaml::RawDocument| {
        let judged = judge(&raw.text, decider);
        // With --namespace-labels, a workload no webhook entry selects is left as written, as
        // `check` says it is not injected.
        let not_selected =
            decider.labels_given() && judged.as_ref().is_some_and(|j| j.none_selected());
        let keep_trees = args.diff || not_selected || raw.text.contains(STATUS_ANNOTATION);
        (keep_trees, (judged, not_selected))
    };
    kube_inject::inject_stream(
        documents,
        opts,
        prepare,
        |raw, doc, (judged, not_selected)| {
            write_document(raw, doc, judged, not_selected, args, output, stats)
        },
    )
}

/// Count, judge and write one processed document (or its diff).
fn write_document(
    raw: &yaml::RawDocument,
    mut doc: ProcessedDocument,
    judged: Option<crate::decision::Judged>,
    not_selected: bool,
    args: &InjectArgs,
    output: &mut Output,
    stats: &mut Stats,
) -> Result<()> {
    stats.warnings.extend(doc.warnings.iter().cloned());
    if let Some(judged) = &judged {
        for line in judged.stderr_lines() {
            if !stats.warnings.contains(&line) {
                stats.warnings.push(line);
            }
        }
    }
    if not_selected && doc.outcome == Outcome::Injected {
        if let Some((before, _)) = doc.trees.take() {
            doc.text = yaml::json_to_yaml(&before).with_context(|| doc.label())? + "---\n";
        }
        for note in judged
            .iter()
            .flat_map(|j| j.not_selected_notes("left as written"))
        {
            stats.warnings.push(note);
        }
        stats.documents += 1;
        stats.not_selected += 1;
        if !args.diff {
            output.write(&doc.text)?;
            stats.written += 1;
        }
        return Ok(());
    }
    let unchanged = doc.outcome == Outcome::Injected
        && doc
            .trees
            .as_ref()
            .is_some_and(|(before, after)| before == after);
    stats.count(doc.outcome, unchanged);
    if args.diff {
        let diff = render_diff(&doc, &raw.text, stats.color);
        if !diff.is_empty() {
            output.write(&diff)?;
            stats.written += 1;
            stats.changed += 1;
        }
    } else {
        output.write(&doc.text)?;
        stats.written += 1;
    }
    Ok(())
}

/// The one decision ([`crate::decision`]) for the pods of a document, when it can say anything
/// ([`crate::decision::Decider::worth_judging`]): with --namespace-labels (the verdict), or when
/// a pod names an injection request or another revision (warnings, notes). `None` for a document that does not parse (injection reports it).
fn judge(text: &str, decider: &crate::decision::Decider<'_>) -> Option<crate::decision::Judged> {
    if !decider.labels_given()
        && !text.contains("sidecar.istio.io/inject")
        && !text.contains("istio.io/rev")
    {
        return None;
    }
    let doc = yaml::from_str(text).ok()?;
    outrigger_inject::check::pods_of(&doc)
        .iter()
        .any(|(_, pod)| decider.worth_judging(pod))
        .then(|| decider.judge(&doc))
}

/// Unified diff of one injected document: its bytes as written in the input (`written`, its
/// leading `---` separator line left out, comments and key order kept) against the output, as
/// `diff` would compare them. Empty when the document was not injected or injection changed
/// nothing (the two trees are equal), however differently the output spells it.
fn render_diff(doc: &ProcessedDocument, written: &str, color: bool) -> String {
    if doc.outcome != Outcome::Injected {
        return String::new();
    }
    let Some((before, after_tree)) = &doc.trees else {
        return String::new();
    };
    if before == after_tree {
        return String::new();
    }
    let raw = match written.split_once('\n') {
        Some((first, rest)) if first.trim_end() == "---" => rest,
        _ => written,
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
        .diff_lines(raw, after)
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
