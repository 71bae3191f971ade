//! What `outrigger preview` prints, as workloads are judged: each row is rendered on the thread
//! that judged it ([`Rendered::of`]) and handed to the [`Report`], which keeps only counts.
//! `-o json` writes each row as it comes (the same bytes as pretty-printing the whole array);
//! the table is aligned on its widest cells, so its rows are kept, as text in one buffer, until
//! the end.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use outrigger_inject::preview::{Change, Outcome};
use serde_json::{json, Value};

use super::{Origin, Row, REFUSED, TABLE_FIELDS};
use crate::drift::{column_line, show_pair};
use crate::preview::args::PreviewOutput;

/// Columns of the table.
const HEAD: [&str; 5] = ["NAMESPACE", "WORKLOAD", "REPLICAS", "CHANGES", "PREFLIGHT"];

/// One workload's row as the output shows it, and what the summary and exit status need of it.
pub(crate) struct Rendered {
    body: Body,
    changed: bool,
    refused: bool,
    /// The changed fields' paths (counted under the table; empty for JSON).
    paths: Vec<String>,
}

enum Body {
    /// The row's object, pretty-printed as an element of the top-level array (indented by one
    /// level, without the separator).
    Json(String),
    /// The row's cells and the lines below it.
    Table([String; 5], String),
}

impl Rendered {
    /// `row` rendered for `output`.
    pub(crate) fn of(row: &Row, output: PreviewOutput) -> Result<Rendered> {
        let (body, paths) = match output {
            PreviewOutput::Json => {
                let text = serde_json::to_string_pretty(&row_json(row))
                    .context("encoding a row as JSON")?;
                // JSON strings hold no raw line break: every line break is the printer's.
                (Body::Json(text.replace('\n', "\n  ")), Vec::new())
            }
            PreviewOutput::Table => {
                let paths = row.preview.changes.iter().map(|c| c.path.clone()).collect();
                (Body::Table(cells(row), below(row)), paths)
            }
        };
        Ok(Rendered {
            body,
            changed: row.changed(),
            refused: row.refused(),
            paths,
        })
    }
}

/// The output as rows come: JSON written at once, table rows kept for their widths, counts.
pub(crate) struct Report<W: Write> {
    out: W,
    output: PreviewOutput,
    rows: usize,
    changed: usize,
    refused: usize,
    table: Held,
    by_field: BTreeMap<String, usize>,
    /// Progress on stderr (a terminal only), and whether a line of it is open.
    progress: bool,
    progress_shown: bool,
}

impl Report<std::io::BufWriter<std::io::StdoutLock<'static>>> {
    /// A report to standard output; progress on stderr when it is a terminal.
    pub(crate) fn stdout(output: PreviewOutput) -> Self {
        let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        Report::new(out, output, std::io::stderr().is_terminal())
    }
}

impl<W: Write> Report<W> {
    /// A report written to `out`.
    pub(crate) fn new(out: W, output: PreviewOutput, progress: bool) -> Self {
        Report {
            out,
            output,
            rows: 0,
            changed: 0,
            refused: 0,
            table: Held {
                widths: HEAD.map(str::len),
                ..Held::default()
            },
            by_field: BTreeMap::new(),
            progress,
            progress_shown: false,
        }
    }

    /// The output format.
    pub(crate) fn output(&self) -> PreviewOutput {
        self.output
    }

    /// Add the next row: written at once as JSON, kept as table text.
    pub(crate) fn add(&mut self, r: Rendered) -> Result<()> {
        self.changed += usize::from(r.changed);
        self.refused += usize::from(r.refused);
        for p in r.paths {
            *self.by_field.entry(p).or_default() += 1;
        }
        match r.body {
            Body::Json(text) => {
                let sep = if self.rows == 0 { "[\n  " } else { ",\n  " };
                self.out
                    .write_all(sep.as_bytes())
                    .and_then(|()| self.out.write_all(text.as_bytes()))
                    .context("writing standard output")?;
            }
            Body::Table(cells, below) => self.table.push(&cells, &below),
        }
        self.rows += 1;
        Ok(())
    }

    /// Show how far the run is (`what` read so far), on a terminal only.
    pub(crate) fn progress(&mut self, what: &str) {
        if self.progress {
            eprint!(
                "\r{what}, {} previewed",
                crate::print::count(self.rows, "workload", "workloads")
            );
            self.progress_shown = true;
        }
    }

    /// End the progress line, if one is shown.
    pub(crate) fn end_progress(&mut self) {
        if std::mem::take(&mut self.progress_shown) {
            eprintln!();
        }
    }

    /// Rows written to the output so far (JSON only: the table is written at the end).
    pub(crate) fn written(&self) -> usize {
        match self.output {
            PreviewOutput::Json => self.rows,
            PreviewOutput::Table => 0,
        }
    }

    /// Flush what was written, after a failure: a JSON array is left unclosed, so that a partial
    /// output never reads as a whole one.
    pub(crate) fn abandon(mut self) {
        self.end_progress();
        let _ = self.out.flush();
    }

    /// Write the rest (the table, or the array's end) and give the exit status: 3 when the
    /// cluster would refuse a pod of the candidate, 1 when something changes, else 0.
    pub(crate) fn finish(mut self) -> Result<ExitCode> {
        self.end_progress();
        match self.output {
            PreviewOutput::Json if self.rows == 0 => self.out.write_all(b"[]\n"),
            PreviewOutput::Json => self.out.write_all(b"\n]\n"),
            PreviewOutput::Table => self.write_table(),
        }
        .and_then(|()| self.out.flush())
        .context("writing standard output")?;
        Ok(if self.refused > 0 {
            ExitCode::from(REFUSED)
        } else if self.changed > 0 {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }

    /// The table: a row per workload, its changes and findings below, then the changes by field.
    fn write_table(&mut self) -> std::io::Result<()> {
        let t = &self.table;
        self.out
            .write_all(column_line(HEAD, &t.widths).as_bytes())?;
        let mut start = 0;
        for ends in &t.ends {
            let cell = |i: usize| &t.text[if i == 0 { start } else { ends[i - 1] }..ends[i]];
            let line = column_line([cell(0), cell(1), cell(2), cell(3), cell(4)], &t.widths);
            self.out.write_all(line.as_bytes())?;
            self.out.write_all(cell(5).as_bytes())?;
            start = ends[5];
        }
        writeln!(
            self.out,
            "{}: {} changed, {} would be refused",
            crate::print::count(self.rows, "workload", "workloads"),
            self.changed,
            self.refused
        )?;
        if !self.by_field.is_empty() {
            writeln!(self.out, "changes by field (workloads):")?;
            for (path, n) in &self.by_field {
                writeln!(self.out, "    {path}: {n}")?;
            }
        }
        Ok(())
    }
}

/// The table's rows, kept until the end: their text in one buffer (a row's strings, made on the
/// thread that judged it, are copied in and freed), where each row's five cells and the lines
/// below it end, and the widest cell of each column so far.
#[derive(Default)]
struct Held {
    text: String,
    ends: Vec<[usize; 6]>,
    widths: [usize; 5],
}

impl Held {
    fn push(&mut self, cells: &[String; 5], below: &str) {
        let mut ends = [0; 6];
        for (i, cell) in cells.iter().enumerate() {
            self.text.push_str(cell);
            ends[i] = self.text.len();
            self.widths[i] = self.widths[i].max(cell.len());
        }
        self.text.push_str(below);
        ends[5] = self.text.len();
        self.ends.push(ends);
    }
}

fn outcome_str(o: &Outcome) -> &'static str {
    match o {
        Outcome::Injected(_) => "injected",
        Outcome::NotInjected(_) => "not-injected",
        Outcome::Failed(_) => "failed",
    }
}

/// A row's cells in the table.
fn cells(r: &Row) -> [String; 5] {
    let what = match &r.document {
        Some((d, item)) if item.is_empty() => format!("{}/{} (doc {d})", r.kind, r.name),
        Some((d, item)) => format!("{}/{} (doc {d} {item})", r.kind, r.name),
        None => format!("{}/{}", r.kind, r.name),
    };
    let refused = r
        .findings
        .iter()
        .filter(|(f, o)| *o != Origin::Workload && f.refuses())
        .count();
    let preflight = if refused > 0 {
        format!("refused ({refused})")
    } else {
        "ok".to_string()
    };
    let changes = match (&r.preview.current, &r.preview.candidate) {
        (Outcome::Failed(_), _) => "current fails".to_string(),
        (Outcome::NotInjected(_), Outcome::Injected(_)) => "sidecar added".into(),
        (Outcome::Injected(_), Outcome::NotInjected(_)) => "sidecar removed".into(),
        _ => r.preview.changes.len().to_string(),
    };
    [
        if r.namespace.is_empty() {
            "-".to_string()
        } else {
            r.namespace.clone()
        },
        what,
        r.replicas.to_string(),
        changes,
        preflight,
    ]
}

/// The lines under a workload: failures, changed fields, findings.
fn below(r: &Row) -> String {
    let mut out = String::new();
    if let Outcome::Failed(e) = &r.preview.current {
        out.push_str(&format!("    the configuration in force fails: {e}\n"));
    }
    for c in r.preview.changes.iter().take(TABLE_FIELDS) {
        let (current, candidate) = show_pair(&c.current, &c.candidate);
        out.push_str(&format!(
            "    {}: {current} -> {candidate} ({})\n",
            c.path, c.cause
        ));
    }
    if r.preview.changes.len() > TABLE_FIELDS {
        out.push_str(&format!(
            "    ... {} more {} (-o json lists them all)\n",
            r.preview.changes.len() - TABLE_FIELDS,
            if r.preview.changes.len() - TABLE_FIELDS == 1 {
                "field"
            } else {
                "fields"
            }
        ));
    }
    for (f, origin) in &r.findings {
        let container = f
            .container
            .as_ref()
            .map(|c| format!(" [container {c}]"))
            .unwrap_or_default();
        let note = match origin {
            Origin::Candidate => "",
            Origin::Current => " (also under the configuration in force)",
            Origin::Workload => " (the workload's own, without a sidecar)",
        };
        out.push_str(&format!(
            "    ! {} {}{container}: {}{note}\n",
            f.check, f.rule, f.message
        ));
    }
    out
}

fn change_json(c: &Change) -> Value {
    json!({
        "path": c.path,
        "currentPointer": c.current_pointer,
        "candidatePointer": c.candidate_pointer,
        "current": c.current,
        "candidate": c.candidate,
        "cause": c.cause,
    })
}

fn row_json(r: &Row) -> Value {
    let failure = |o: &Outcome| match o {
        Outcome::Failed(e) => Some(e.clone()),
        _ => None,
    };
    let mut v = json!({
        "namespace": r.namespace,
        "kind": r.kind,
        "name": r.name,
        "replicas": r.replicas,
        "current": outcome_str(&r.preview.current),
        "candidate": outcome_str(&r.preview.candidate),
        "changes": r.preview.changes.iter().map(change_json).collect::<Vec<_>>(),
        "findings": r.findings.iter().map(|(f, o)| json!({
            "check": f.check,
            "rule": f.rule,
            "container": f.container,
            "message": f.message,
            "origin": o.as_str(),
        })).collect::<Vec<_>>(),
        "refused": r.refused(),
    });
    if let Some(e) = failure(&r.preview.current) {
        v["currentError"] = json!(e);
    }
    if let Some(e) = failure(&r.preview.candidate) {
        v["candidateError"] = json!(e);
    }
    if let Some((d, item)) = &r.document {
        v["document"] = json!(d);
        v["item"] = json!(item);
    }
    v
}

#[cfg(test)]
mod tests {
    use outrigger_inject::preview::{Finding, PodPreview};

    use super::*;

    fn row(name: &str, changes: usize, finding: bool) -> Row {
        let change = |i: usize| Change {
            path: format!("spec.containers[istio-proxy].env[V{i}]"),
            current_pointer: Some(format!("/spec/containers/1/env/{i}")),
            current: Some(json!({"name": format!("V{i}"), "value": "a\nb \"q\""})),
            candidate_pointer: None,
            candidate: None,
            cause: "template",
        };
        Row {
            namespace: "shop".into(),
            kind: "Deployment".into(),
            name: name.into(),
            document: Some((3, String::new())),
            replicas: 2,
            preview: PodPreview {
                current: Outcome::Injected(json!({})),
                candidate: Outcome::Injected(json!({})),
                changes: (0..changes).map(change).collect(),
            },
            findings: if finding {
                vec![(
                    Finding {
                        check: "pod-security",
                        rule: "restricted: capabilities".into(),
                        container: Some("istio-init".into()),
                        message: "adds NET_ADMIN".into(),
                    },
                    Origin::Candidate,
                )]
            } else {
                Vec::new()
            },
        }
    }

    fn report(rows: &[Row], output: PreviewOutput) -> (String, ExitCode) {
        let mut out = Vec::new();
        let mut report = Report::new(&mut out, output, false);
        for r in rows {
            report
                .add(Rendered::of(r, output).expect("render"))
                .expect("add");
        }
        let code = report.finish().expect("finish");
        (String::from_utf8(out).expect("utf-8"), code)
    }

    #[test]
    fn json_rows_written_one_at_a_time_are_the_pretty_printed_array() {
        for n in 0..4 {
            let rows: Vec<Row> = (0..n).map(|i| row(&format!("w{i}"), i, i == 2)).collect();
            let (got, _) = report(&rows, PreviewOutput::Json);
            let whole: Vec<Value> = rows.iter().map(row_json).collect();
            let want = serde_json::to_string_pretty(&Value::Array(whole)).expect("json") + "\n";
            assert_eq!(got, want, "{n} rows");
        }
    }

    #[test]
    fn the_exit_status_and_the_summary_count_every_row() {
        let (out, code) = report(&[], PreviewOutput::Table);
        assert_eq!(code, ExitCode::SUCCESS);
        assert!(
            out.ends_with("0 workloads: 0 changed, 0 would be refused\n"),
            "{out}"
        );
        let (_, code) = report(
            &[row("a", 0, false), row("b", 2, false)],
            PreviewOutput::Json,
        );
        assert_eq!(code, ExitCode::from(1));
        let mut rows = [row("a", 0, true), row("b", 12, false), row("c", 1, false)];
        rows[1].name = "a-longer-name".into();
        let (out, code) = report(&rows, PreviewOutput::Table);
        assert_eq!(code, ExitCode::from(REFUSED));
        assert!(
            out.contains("3 workloads: 2 changed, 1 would be refused\n"),
            "{out}"
        );
        assert!(out.contains("... 2 more fields"), "{out}");
        assert!(
            out.contains("    spec.containers[istio-proxy].env[V0]: 2\n"),
            "{out}"
        );
        // The rows held in one buffer come out as `columns` aligns them all at once.
        let aligned = crate::drift::columns(HEAD, rows.iter().map(|r| (cells(r), below(r))));
        assert!(out.starts_with(&aligned), "{out}\n---\n{aligned}");
        // Aligned on the widest cell of any row: every row's replicas under the header's.
        let column = out.find("REPLICAS").expect("header");
        for line in out.lines().filter(|l| l.starts_with("shop ")) {
            assert_eq!(line.find("  2  ").map(|i| i + 2), Some(column), "{out}");
        }
    }
}
