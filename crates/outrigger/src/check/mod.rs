//! `outrigger check`: explain whether a pod would be injected, and why.
//!
//! The explanation is the library's ([`outrigger_inject::check`]: the webhook gates, the
//! injector's decision step by step, the templates and the fix), so it cannot drift from what
//! the webhook and `inject` do. This command only gathers the inputs (a manifest offline, or the
//! live cluster with `--kube`, read by [`crate::kube::check`]) and prints the reports.

pub mod args;

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use crate::print;
use anyhow::{bail, Context, Result};
use outrigger_inject::check::{self, Report, NOT_SELECTED};
use outrigger_inject::config::input_kind::InputKind;
use outrigger_inject::kube::names::REVISION_LABEL;
use outrigger_inject::kube_inject::shift_yaml_line;
use serde_json::{Map, Value};

use crate::input;
use crate::kube::check::LiveQuery;
use crate::kube::webhook_object::{self, WebhookOptions};

pub use crate::check::args::{CheckArgs, CheckOutput};

/// Split a YAML stream as `inject` does (the library's
/// [`outrigger_go::yaml::DocumentReader`]) and parse each document; errors name the document
/// and the line of the stream, as `inject`'s do. Also returns a warning for each document followed by text that
/// Kubernetes' YAML reader ignores (as `inject` warns), in the library's words, with the line
/// of the stream.
pub fn parse_documents(input: impl std::io::BufRead) -> Result<(Vec<Value>, Vec<String>)> {
    let mut docs = Vec::new();
    let mut warnings = Vec::new();
    let reader = outrigger_go::yaml::DocumentReader::new(input);
    for (index, raw) in reader.enumerate() {
        let raw = raw?;
        // Errors name the document and the line of the stream, worded as `inject` words them.
        let read = outrigger_go::yaml::read_document(&raw.text).map_err(|e| {
            shift_yaml_line(e, raw.first_line).context(&format!("document {index}"))
        })?;
        if let Some(ignored) = read.ignored {
            let ignored = ignored.shifted(raw.first_line);
            warnings.push(format!("warning: document {index}: {ignored}"));
        }
        if !read.value.is_null() {
            docs.push(read.value);
        }
    }
    Ok((docs, warnings))
}

/// Parse `k=v` pairs (`k=` is an empty value; `k` alone is refused: it reads as a selector's
/// "exists" but a label always has a value).
pub fn parse_labels(pairs: &[String]) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    for p in pairs.iter().filter(|p| !p.is_empty()) {
        let Some((k, v)) = p.split_once('=') else {
            bail!(
                "--namespace-labels: {p:?} has no value; write KEY=VALUE, e.g. {p}=enabled \
                 (or {p}= for an empty value)"
            );
        };
        if k.is_empty() {
            bail!("--namespace-labels: {p:?} has no key");
        }
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(m)
}

/// One explained workload and the revision whose webhook entry selects it (`None`: no entry
/// does), as the table prints it.
#[derive(Debug, Clone, Copy)]
pub struct Verdict<'a> {
    /// The library's explanation.
    pub report: &'a Report,
    /// The revision of the selecting entry ([`selecting_revision`]).
    pub revision: Option<&'a str>,
}

/// The revision an injecting webhook entry selects: the `istio.io/rev` value its namespace or
/// object selector requires (`In`), else `default` (Istio's `istio-injection=enabled` and
/// `sidecar.istio.io/inject=true` entries, which are the default revision's).
pub fn entry_revision(entry: &Value) -> String {
    ["namespaceSelector", "objectSelector"]
        .iter()
        .filter_map(|s| entry.get(*s)?.get("matchExpressions")?.as_array())
        .flatten()
        .find(|r| r["key"] == REVISION_LABEL && r["operator"] == "In")
        .and_then(|r| r["values"].get(0)?.as_str())
        .or_else(|| {
            ["namespaceSelector", "objectSelector"]
                .iter()
                .find_map(|s| {
                    entry
                        .get(*s)?
                        .get("matchLabels")?
                        .get(REVISION_LABEL)?
                        .as_str()
                })
        })
        .unwrap_or(outrigger_inject::decide::selection::DEFAULT_REVISION)
        .to_string()
}

/// The revision of the first entry of `entries` that selects the pod `report` explains (by the
/// entry names the report lists as selected).
pub fn selecting_revision(report: &Report, entries: &[Value]) -> Option<String> {
    let name = report.webhooks.iter().find(|w| w.selected)?.name.as_str();
    entries
        .iter()
        .find(|e| e["name"] == name)
        .map(entry_revision)
}

/// Render explained workloads as the table, kubectl's habit: one line per workload (namespace,
/// kind, name, verdict, reason, the selecting revision), then the warnings (`warning: KIND/NAME:
/// TEXT`, as every command words them) and the changes that would inject (only for the
/// workloads that have any), then the summary. `-o wide` gives the
/// long form ([`render_wide`]).
pub fn render_table(verdicts: &[Verdict<'_>]) -> String {
    let rows = verdicts.iter().map(|v| {
        let r = v.report;
        let (kind, name) = r.workload.split_once('/').unwrap_or(("Pod", &r.workload));
        let verdict = if r.injected {
            "INJECTED"
        } else {
            "NOT INJECTED"
        };
        (
            [
                r.namespace.clone(),
                kind.to_string(),
                name.to_string(),
                verdict.to_string(),
                r.reason.clone(),
                v.revision.unwrap_or("-").to_string(),
            ],
            String::new(),
        )
    });
    let mut s = crate::drift::columns(
        ["NAMESPACE", "KIND", "NAME", "VERDICT", "REASON", "REVISION"],
        rows,
    );
    // The warnings as every command words them (`warning: KIND/NAME: TEXT`), then the fixes.
    let mut fixes = String::new();
    for v in verdicts {
        let r = v.report;
        if !r.missing_templates.is_empty() {
            let _ = writeln!(
                s,
                "warning: {}: missing templates (injection would fail): {}",
                r.workload,
                r.missing_templates.join(", ")
            );
        }
        for w in &r.warnings {
            let _ = writeln!(s, "warning: {}: {w}", r.workload);
        }
        if let Some(fix) = &r.fix {
            let _ = writeln!(fixes, "{}: to inject it: {fix}", r.workload);
        }
    }
    s.push_str(&fixes);
    s.push_str(&summary_of(verdicts.iter().map(|v| v.report)));
    s
}

/// Render reports in the long form (`-o wide`): per workload the verdict, the webhook entries,
/// the injector's steps, the templates, the warnings and the fix; then the summary.
pub fn render_wide(reports: &[Report]) -> String {
    let mut s = String::new();
    for r in reports {
        let verdict = if r.injected {
            "INJECTED"
        } else {
            "NOT INJECTED"
        };
        let _ = writeln!(
            s,
            "{} in namespace {}: {verdict} ({})",
            r.workload, r.namespace, r.reason
        );
        let _ = writeln!(s, "  {}", r.message);
        let _ = writeln!(
            s,
            "  {:<44} {:<10} {:<10} SELECTED",
            "WEBHOOK", "NAMESPACE", "OBJECT"
        );
        for w in &r.webhooks {
            let yn = |b: bool| if b { "match" } else { "-" };
            let _ = writeln!(
                s,
                "  {:<44} {:<10} {:<10} {}",
                w.name,
                yn(w.namespace_selector),
                yn(w.object_selector),
                if w.selected { "yes" } else { "no" }
            );
        }
        if r.reason == NOT_SELECTED {
            let _ = writeln!(
                s,
                "  injector steps: NOT EVALUATED (no webhook sends the pod to the injector); \
                 what the injector would decide:"
            );
        }
        let _ = writeln!(
            s,
            "  {:<24} {:<14} {:<22} DETAIL",
            "STEP", "OUTCOME", "CODE"
        );
        let decided = r
            .steps
            .iter()
            .find(|st| st.outcome == "decided")
            .map_or("", |st| st.step);
        for st in &r.steps {
            if st.outcome == "not evaluated" {
                let _ = writeln!(
                    s,
                    "  {:<24} {:<14} {:<22} (not evaluated: decided at {decided})",
                    st.step, "NOT EVALUATED", "-"
                );
                continue;
            }
            let _ = writeln!(
                s,
                "  {:<24} {:<14} {:<22} {}",
                st.step,
                st.outcome,
                st.code.unwrap_or(""),
                st.detail
            );
        }
        if !r.templates.is_empty() {
            let _ = writeln!(s, "  templates: {}", r.templates.join(", "));
        }
        if !r.missing_templates.is_empty() {
            let _ = writeln!(
                s,
                "  missing templates (injection would fail): {}",
                r.missing_templates.join(", ")
            );
        }
        for w in &r.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
        if let Some(fix) = &r.fix {
            let _ = writeln!(s, "  to inject it: {fix}");
        }
    }
    s.push_str(&summary(reports));
    s
}

/// The table's last line: how many workloads (pods and pod templates) were explained and how
/// many of them are injected (`3 workloads: 2 injected, 1 not injected`).
pub fn summary(reports: &[Report]) -> String {
    summary_of(reports.iter())
}

fn summary_of<'a>(reports: impl Iterator<Item = &'a Report>) -> String {
    let (mut all, mut injected) = (0, 0);
    for r in reports {
        all += 1;
        injected += usize::from(r.injected);
    }
    format!(
        "{}: {injected} injected, {} not injected\n",
        crate::print::count(all, "workload", "workloads"),
        all - injected
    )
}

/// Exit status of `check`: 0 when every pod would be injected, 1 when any would not.
pub fn verdict_status(reports: &[Report]) -> ExitCode {
    if reports.iter().all(|r| r.injected) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The webhook configuration `check` evaluates.
pub fn webhook_options(args: &CheckArgs) -> WebhookOptions {
    WebhookOptions {
        revision: args.revision.to_string(),
        selector: args.decision.selector_revision.clone(),
        enable_namespaces_by_default: args.decision.enable_namespaces_by_default,
        ..WebhookOptions::default()
    }
}

/// Print reports in the requested format (used by the live mode too); `revisions[i]` is the
/// revision selecting `reports[i]`'s pod.
pub fn print(reports: &[Report], revisions: &[Option<String>], output: CheckOutput) -> Result<()> {
    let text = match output {
        CheckOutput::Table => {
            let verdicts: Vec<Verdict<'_>> = reports
                .iter()
                .zip(revisions.iter().chain(std::iter::repeat(&None)))
                .map(|(report, revision)| Verdict {
                    report,
                    revision: revision.as_deref(),
                })
                .collect();
            render_table(&verdicts)
        }
        CheckOutput::Wide => render_wide(reports),
        CheckOutput::Json => print::pretty_json(&reports)?,
    };
    print::stdout(&text)
}

/// Read and parse the `-f` manifest; warnings about ignored text go to stderr, naming the file.
pub fn read_documents(file: &Path) -> Result<Vec<Value>> {
    let (docs, warnings) = parse_documents(input::open(file)?)
        .with_context(|| format!("reading {}", file.display()))?;
    let source = input::name(file);
    for w in warnings {
        eprintln!("{source}: {w}");
    }
    Ok(docs)
}

/// Gather the live facts (`--kube`) and explain; with each report, the revision selecting it.
fn explain_live(args: &CheckArgs) -> Result<(Vec<Report>, Vec<Option<String>>)> {
    // `--injectConfigMapName NAME -i NS`, as `inject --kube`; `--injectConfigMap NS/NAME` is
    // the deprecated spelling.
    let config_map = match (&args.inject_config_map_name, &args.inject_config_map) {
        (Some(name), _) => Some(format!("{}/{name}", args.target.istio_namespace)),
        (None, Some(both)) => {
            eprintln!(
                "warning: --injectConfigMap NAMESPACE/NAME is deprecated: use \
                 --injectConfigMapName NAME -i NAMESPACE (as inject --kube)"
            );
            Some(both.clone())
        }
        (None, None) => None,
    };
    // The mesh file goes with a ConfigMap's configuration (offline, with the files).
    let files = args.files.resolved()?;
    let mesh = match (&config_map, &files.mesh_config_file) {
        (Some(_), Some(_)) => {
            crate::config_source::read_input(&files.mesh_config_file, InputKind::MeshConfig)?
        }
        _ => None,
    };
    let query = LiveQuery {
        namespace: args.namespace.as_deref(),
        pod: args.pod.as_deref(),
        inject_config_map: config_map.as_deref(),
        mesh: mesh.as_deref(),
        webhook_config: args.webhook_config.as_deref(),
        kubeconfig: args.target.kubeconfig.as_deref(),
        context: args.target.context.as_deref(),
    };
    let live = crate::kube::check::fetch(&query)?;
    let snapshot = match live.snapshot {
        Some(s) => s,
        None => crate::config_source::webhook_snapshot(&args.files.paths())?,
    };
    let webhooks = match live.webhooks {
        Some(w) => w,
        None => webhook_object::entries(&webhook_options(args)),
    };
    let docs = match (live.pod, &args.filename) {
        (Some(pod), _) => vec![pod],
        (None, Some(file)) => {
            let docs = read_documents(file)?;
            for doc in &docs {
                let ns = doc.pointer("/metadata/namespace").and_then(Value::as_str);
                if let Some(ns) = ns.filter(|ns| !ns.is_empty() && *ns != live.namespace) {
                    eprintln!(
                        "warning: {} is in namespace {ns}, but the labels evaluated are those of \
                         namespace {} (choose it with --namespace {ns})",
                        crate::decision::doc_name(doc),
                        live.namespace
                    );
                }
            }
            docs
        }
        (None, None) => vec![check::new_pod()],
    };
    let reports = check::explain_documents(
        &docs,
        Some(&live.namespace),
        &live.namespace_labels,
        &webhooks,
        &snapshot,
    );
    let revisions = reports
        .iter()
        .map(|r| selecting_revision(r, &webhooks))
        .collect();
    Ok((reports, revisions))
}

/// Run `outrigger check`: exits 0 when every pod would be injected, 1 when any would not (2 on
/// error, set by `main`).
pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    crate::template_env::init(&args.env.template_env)?;
    if args.kube {
        let (reports, revisions) = explain_live(args)?;
        if reports.is_empty() {
            bail!("nothing to explain");
        }
        print(&reports, &revisions, args.output)?;
        return Ok(verdict_status(&reports));
    }
    let Some(file) = &args.filename else {
        bail!("-f is required without --kube")
    };
    let snapshot = crate::config_source::webhook_snapshot(&args.files.paths())?;
    let docs = read_documents(file)?;
    let decider = crate::decision::Decider::new(
        &args.decision,
        &args.revision,
        args.namespace.as_deref(),
        &snapshot,
    )?
    .explaining();
    let mut reports = Vec::new();
    let mut revisions = Vec::new();
    // Said once, however many documents they apply to; the injector's warnings are the table's.
    let said = crate::decision::SaidOnce::default();
    for doc in &docs {
        let judged = decider.judge(doc);
        said.eprint(judged.messages);
        revisions.extend(judged.revisions);
        reports.extend(judged.reports);
    }
    if reports.is_empty() {
        bail!(
            "{} holds no pod or workload with a pod template",
            file.display()
        );
    }
    print(&reports, &revisions, args.output)?;
    Ok(verdict_status(&reports))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use outrigger_inject::check::{explain, pods_of, Context as CheckContext};
    use outrigger_inject::config::InjectorConfig;
    use outrigger_inject::config::Policy;
    use outrigger_inject::config::Snapshot;
    use outrigger_inject::config::ValuesFacts;
    use outrigger_inject::kube::names::NAMESPACE_NAME_LABEL;
    use outrigger_inject::kube::selector::LabelSelector;
    use serde_json::json;

    fn snapshot(policy: &str, never: Vec<Value>, always: Vec<Value>) -> Snapshot {
        let sel = |v: Vec<Value>| {
            v.iter()
                .map(|s| LabelSelector::from_json(s).expect("valid"))
                .collect()
        };
        let config = InjectorConfig {
            policy: Policy::parse(policy),
            default_templates: vec!["sidecar".into()],
            templates: BTreeMap::new(),
            aliases: BTreeMap::from([(
                "both".to_string(),
                vec!["sidecar".to_string(), "extra".to_string()],
            )]),
            never_inject_selector: sel(never),
            always_inject_selector: sel(always),
            injected_annotations: BTreeMap::new(),
            warnings: Vec::new(),
        };
        Snapshot {
            config,
            values: json!({}),
            values_facts: ValuesFacts::default(),
            mesh: json!({}),
            template_env: BTreeMap::new(),
            render_memo: Default::default(),
        }
    }

    /// The webhook entries of the takeover (istiod's default revision's selectors: Istio's
    /// chart), which most of these explanations are about.
    fn takeover() -> WebhookOptions {
        WebhookOptions {
            selector: Some("default".into()),
            ..WebhookOptions::default()
        }
    }

    /// The shipped default selects only what opted into outrigger: a namespace labelled for
    /// istiod is not selected, and the fix is outrigger's label (replacing istiod's).
    #[test]
    fn the_default_install_selects_only_namespaces_labelled_for_outrigger() {
        let snap = Snapshot::load("policy: enabled", "{}", None).expect("config");
        let p = pod(json!({}), json!({}));
        let wh = WebhookOptions::default();
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &wh,
        );
        assert!(selected(&r).is_empty());
        assert_eq!(r.reason, NOT_SELECTED);
        assert_eq!(
            r.fix.as_deref(),
            Some(
                "kubectl label namespace apps istio.io/rev=outrigger istio-injection- --overwrite"
            )
        );
        let r = run_explain(&p, "apps", json!({"istio.io/rev": "outrigger"}), &snap, &wh);
        assert_eq!(selected(&r), ["rev.namespace.sidecar-injector.istio.io"]);
        assert!(r.injected);
    }

    fn pod(labels: Value, annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "labels": labels, "annotations": annotations},
               "spec": {"containers": [{"name": "app", "image": "app"}]}})
    }

    fn run_explain(
        p: &Value,
        ns: &str,
        ns_labels: Value,
        snap: &Snapshot,
        wh: &WebhookOptions,
    ) -> Report {
        let labels = ns_labels.as_object().cloned().expect("labels object");
        let entries = webhook_object::entries(wh);
        let ctx = CheckContext {
            namespace: ns,
            namespace_labels: &labels,
            webhooks: &entries,
            snapshot: snap,
        };
        explain("Pod/p", p, &ctx)
    }

    fn selected(r: &Report) -> Vec<&str> {
        r.webhooks
            .iter()
            .filter(|w| w.selected)
            .map(|w| w.name.as_str())
            .collect()
    }

    #[test]
    fn labelled_namespace_injects_by_policy() {
        let snap = snapshot("enabled", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        assert_eq!(selected(&r), ["namespace.sidecar-injector.istio.io"]);
        assert!(r.injected);
        assert_eq!(r.reason, "policy_enabled");
        assert_eq!(r.templates, ["sidecar"]);
        assert_eq!(
            r.missing_templates,
            ["sidecar"],
            "the test config defines no template"
        );
        let decided: Vec<_> = r.steps.iter().filter(|s| s.outcome == "decided").collect();
        assert_eq!(decided.len(), 1);
        assert_eq!(decided[0].step, "policy");
        assert_eq!(decided[0].code, Some("policy_enabled"));
        assert!(r.steps[..5].iter().all(|s| s.outcome == "continue"));
        assert_eq!(
            r.namespace_labels
                .get(NAMESPACE_NAME_LABEL)
                .map(String::as_str),
            Some("apps")
        );
    }

    #[test]
    fn unlabelled_namespace_is_not_selected() {
        let snap = snapshot("enabled", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({}),
            &snap,
            &takeover(),
        );
        assert!(selected(&r).is_empty());
        assert!(!r.injected);
        assert_eq!(r.reason, NOT_SELECTED);
        assert!(r.templates.is_empty());
    }

    #[test]
    fn auto_entry_selects_unlabelled_namespaces_when_enabled() {
        let snap = snapshot("enabled", vec![], vec![]);
        let wh = WebhookOptions {
            enable_namespaces_by_default: true,
            ..takeover()
        };
        let r = run_explain(&pod(json!({}), json!({})), "apps", json!({}), &snap, &wh);
        assert_eq!(selected(&r), ["auto.sidecar-injector.istio.io"]);
        assert!(r.injected);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "kube-system",
            json!({}),
            &snap,
            &wh,
        );
        assert!(selected(&r).is_empty(), "kube-system is excluded by name");
    }

    #[test]
    fn pod_label_opt_in_uses_object_entry() {
        let snap = snapshot("enabled", vec![], vec![]);
        let p = pod(json!({"sidecar.istio.io/inject": "true"}), json!({}));
        let r = run_explain(&p, "apps", json!({}), &snap, &takeover());
        assert_eq!(selected(&r), ["object.sidecar-injector.istio.io"]);
        assert!(r.injected);
        assert_eq!(r.reason, "label_enabled");
        assert_eq!(r.steps[2].outcome, "decided");
        assert_eq!(r.steps[3].outcome, "not evaluated");
    }

    #[test]
    fn annotation_opt_out_reaches_the_injector_then_skips() {
        let snap = snapshot("enabled", vec![], vec![]);
        let p = pod(json!({}), json!({"sidecar.istio.io/inject": "false"}));
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        assert_eq!(selected(&r), ["namespace.sidecar-injector.istio.io"]);
        assert!(!r.injected);
        assert_eq!(r.reason, "annotation_disabled");
        assert!(r.steps[2].detail.contains("annotation"));
    }

    #[test]
    fn revision_label_on_namespace_selects_rev_namespace_entry() {
        let snap = snapshot("enabled", vec![], vec![]);
        let wh = WebhookOptions {
            revision: "canary".into(),
            selector: Some("canary".into()),
            ..Default::default()
        };
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio.io/rev": "canary"}),
            &snap,
            &wh,
        );
        assert_eq!(selected(&r), ["rev.namespace.sidecar-injector.istio.io"]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio.io/rev": "other"}),
            &snap,
            &wh,
        );
        assert!(selected(&r).is_empty());
    }

    #[test]
    fn never_selector_and_ignored_namespace_and_host_network() {
        let snap = snapshot(
            "enabled",
            vec![json!({"matchLabels": {"job": "batch"}})],
            vec![],
        );
        let p = pod(json!({"job": "batch"}), json!({}));
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        assert_eq!(r.reason, "never_inject_selector");
        assert!(
            r.steps[3].detail.contains("entry [0]"),
            "{}",
            r.steps[3].detail
        );
        let mut p = pod(json!({}), json!({}));
        p["spec"]["hostNetwork"] = json!(true);
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        assert_eq!(r.reason, "host_network");
        assert!(r.steps[1..].iter().all(|s| s.outcome == "not evaluated"));
        let r = run_explain(
            &pod(json!({}), json!({})),
            "kube-public",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        assert_eq!(r.reason, "ignored_namespace");
    }

    #[test]
    fn disabled_policy_and_always_selector_and_aliases() {
        let snap = snapshot(
            "disabled",
            vec![],
            vec![json!({"matchLabels": {"mesh": "yes"}})],
        );
        let wh = takeover();
        let ns = json!({"istio-injection": "enabled"});
        let r = run_explain(&pod(json!({}), json!({})), "apps", ns.clone(), &snap, &wh);
        assert_eq!(r.reason, "policy_disabled");
        assert!(!r.injected);
        let p = pod(
            json!({"mesh": "yes"}),
            json!({"inject.istio.io/templates": "both"}),
        );
        let r = run_explain(&p, "apps", ns, &snap, &wh);
        assert_eq!(r.reason, "always_inject_selector");
        assert_eq!(r.templates, ["sidecar", "extra"]);
    }

    #[test]
    fn invalid_policy_warns() {
        let snap = snapshot("bogus", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        assert_eq!(r.reason, "policy_invalid");
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("Illegal value for autoInject:bogus"));
    }

    #[test]
    fn pod_templates_of_workloads() {
        let dep = json!({"kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
                         "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}}});
        let cron = json!({"kind": "CronJob", "metadata": {"name": "c"},
                          "spec": {"jobTemplate": {"spec": {"template": {"metadata": {}, "spec": {}}}}}});
        let list = json!({"kind": "List", "items": [dep.clone(), cron.clone(), {"kind": "Service", "metadata": {"name": "s"}}]});
        let pods = pods_of(&list);
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[0].0, "Deployment/d");
        assert_eq!(pods[0].1["metadata"]["namespace"], "x");
        assert_eq!(pods[1].0, "CronJob/c");
        assert!(pods_of(&json!({"kind": "ConfigMap"})).is_empty());
    }

    /// `check` splits a stream exactly as `inject` does: a `---` line inside a block scalar
    /// belongs to the scalar, `--- ` with trailing blanks separates, `---x` does not.
    #[test]
    fn documents_split_as_inject_splits_them() {
        let text = "kind: ConfigMap\nmetadata:\n  name: c\ndata:\n  script: |\n    ---\n    echo\n\
                    --- \nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    note: a\n      ---x\n";
        let (docs, warnings) = parse_documents(text.as_bytes()).expect("valid YAML");
        assert!(warnings.is_empty(), "{warnings:?}");
        let inject_sees: Vec<String> = outrigger_go::yaml::DocumentReader::new(text.as_bytes())
            .map(|d| d.expect("splits").text)
            .collect();
        assert_eq!(docs.len(), inject_sees.len());
        assert_eq!(docs.len(), 2, "{inject_sees:?}");
        assert_eq!(docs[0]["data"]["script"], "---\necho\n");
        assert_eq!(docs[1]["metadata"]["name"], "p");
        assert_eq!(docs[1]["metadata"]["annotations"]["note"], "a ---x");
    }

    #[test]
    fn documents_and_labels_parse() {
        let (docs, warnings) = parse_documents(
            "kind: Pod\nmetadata:\n  name: a\n---\n---\nkind: Pod\nmetadata:\n  name: b\n"
                .as_bytes(),
        )
        .expect("valid YAML");
        assert_eq!(docs.len(), 2);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(docs[1]["metadata"]["name"], "b");
        // Text after an end marker: ignored by Kubernetes, named with its line in the stream.
        let (docs, warnings) = parse_documents(
            "kind: Pod\nmetadata:\n  name: a\n---\nkind: Pod\nmetadata:\n  name: b\n...\nspec: {}\n"
                .as_bytes(),
        )
        .expect("valid YAML");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].get("spec"), None);
        assert_eq!(
            warnings,
            [
                "warning: document 1: line 9: content after the end of the document is ignored by \
              Kubernetes' YAML reader (and is not valid YAML: yaml: line 8: did not find \
              expected <document start>)"
            ]
        );
        let err = parse_documents("kind: Pod\n---\na: [\n".as_bytes()).expect_err("bad YAML");
        assert!(format!("{err:#}").contains("line 3"), "{err:#}");
        let l = parse_labels(&["a=b".into(), "c=".into(), "d=e=f".into()]).expect("valid");
        assert_eq!(l["a"], "b");
        assert_eq!(l["c"], "");
        assert_eq!(l["d"], "e=f");
        assert!(parse_labels(&["=x".into()]).is_err());
        let err = parse_labels(&["istio-injection".into()]).expect_err("no value");
        assert!(err.to_string().contains("istio-injection=enabled"), "{err}");
    }

    /// The table prints a line per workload, then the warnings (this configuration has no
    /// `sidecar` template: a warning of its own), then the changes that would inject the
    /// workloads not injected, then the summary.
    #[test]
    fn the_table_groups_warnings_and_fixes_under_the_rows() {
        let snap = snapshot("enabled", vec![], vec![]);
        let ns = json!({"istio.io/rev": "outrigger"});
        let wh = WebhookOptions::default();
        let entries = webhook_object::entries(&wh);
        let maybe = run_explain(
            &pod(json!({}), json!({"sidecar.istio.io/inject": "maybe"})),
            "apps",
            ns.clone(),
            &snap,
            &wh,
        );
        let plain = run_explain(&pod(json!({}), json!({})), "apps", ns.clone(), &snap, &wh);
        let out = run_explain(
            &pod(json!({"sidecar.istio.io/inject": "false"}), json!({})),
            "apps",
            ns,
            &snap,
            &wh,
        );
        let reports = [maybe, plain, out];
        let revisions: Vec<Option<String>> = reports
            .iter()
            .map(|r| selecting_revision(r, &entries))
            .collect();
        let verdicts: Vec<Verdict<'_>> = reports
            .iter()
            .zip(&revisions)
            .map(|(report, rev)| Verdict {
                report,
                revision: rev.as_deref(),
            })
            .collect();
        assert_eq!(
            render_table(&verdicts),
            "NAMESPACE  KIND  NAME  VERDICT       REASON                REVISION\n\
             apps       Pod   p     INJECTED      policy_enabled        outrigger\n\
             apps       Pod   p     INJECTED      policy_enabled        outrigger\n\
             apps       Pod   p     NOT INJECTED  webhook_not_selected  -\n\
             warning: Pod/p: missing templates (injection would fail): sidecar\n\
             warning: Pod/p: Invalid value for sidecar.istio.io/inject: \"maybe\". Only 'true' \
             and 'false' are accepted. Falling back to default injection policy.\n\
             warning: Pod/p: missing templates (injection would fail): sidecar\n\
             Pod/p: to inject it: remove the label sidecar.istio.io/inject=\"false\" from the pod\n\
             3 workloads: 2 injected, 1 not injected\n"
        );
    }

    #[test]
    fn table_and_json_render() {
        let snap = snapshot("enabled", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &takeover(),
        );
        let t = render_wide(std::slice::from_ref(&r));
        assert!(
            t.starts_with("Pod/p in namespace apps: INJECTED (policy_enabled)"),
            "{t}"
        );
        assert!(t.contains("namespace.sidecar-injector.istio.io"));
        assert!(
            t.ends_with("\n1 workload: 1 injected, 0 not injected\n"),
            "{t}"
        );
        // The default table: one line per workload, the revision of the selecting entry.
        let entries = webhook_object::entries(&takeover());
        let revision = selecting_revision(&r, &entries);
        assert_eq!(revision.as_deref(), Some("default"));
        let t = render_table(&[Verdict {
            report: &r,
            revision: revision.as_deref(),
        }]);
        assert_eq!(
            t,
            "NAMESPACE  KIND  NAME  VERDICT   REASON          REVISION\n\
             apps       Pod   p     INJECTED  policy_enabled  default\n\
             warning: Pod/p: missing templates (injection would fail): sidecar\n\
             1 workload: 1 injected, 0 not injected\n"
        );
        let j = serde_json::to_value(std::slice::from_ref(&r)).expect("serialisable");
        assert_eq!(j[0]["reason"], "policy_enabled");
        assert_eq!(j[0]["steps"][5]["code"], "policy_enabled");
        assert!(j[0]["steps"][0].get("code").is_none());
    }
}
