//! The one offline decision of `check`, `inject`, `drift` and `preview`: whether a pod of a
//! manifest is injected, as the webhook entries (the library's [`selection`]) and the injector
//! (the library's [`outrigger_inject::decide`]) see it, explained by the library's
//! [`check::explain`]; and the warnings and notes every one of these commands prints alike.
//!
//! Each pod is judged against the entries selecting the revision it asks for (its
//! `istio.io/rev` label, else its namespace's; a revision tag stands for its revision), unless
//! `--selector-revision` or `--revision` names what is evaluated; without either and without a
//! label, the shipped default's (`istio.io/rev=outrigger`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use outrigger_inject::check::{self, Report, NOT_SELECTED};
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::selection;
use outrigger_inject::kube::names::REVISION_LABEL;

/// The injection request's label and annotation.
const INJECT_KEY: &str = "sidecar.istio.io/inject";
use serde_json::{Map, Value};

use crate::cli::common::DecisionArgs;
use crate::kube::webhook_object::{self, WebhookOptions};

/// The inputs of the decision, shared by the commands.
pub struct Decider<'a> {
    snapshot: &'a Snapshot,
    /// Namespace of pods whose manifest names none (`check -n`; else `default`).
    namespace: Option<String>,
    /// `--namespace-labels`.
    namespace_labels: Map<String, Value>,
    /// Whether `--namespace-labels` was given: the commands other than `check` then follow the
    /// verdict (else they inject what does not opt out, as `istioctl kube-inject`).
    labels_given: bool,
    /// `--revision` of the command.
    revision: String,
    selector_revision: Option<String>,
    enable_namespaces_by_default: bool,
    /// `--revision-tag`: tag to revision.
    tags: std::collections::BTreeMap<String, String>,
    /// Whether the verdict always rests on the webhook entries (`check`), not only with
    /// --namespace-labels: a pod asking for a revision the entries do not select is then
    /// warned about.
    entries_always: bool,
    /// The webhook entries of the options evaluated so far (a few: one per revision asked for),
    /// rendered once each.
    entries: Mutex<Vec<(WebhookOptions, Arc<Vec<Value>>)>>,
}

/// The decision for the pods of one document (or one pod template).
#[derive(Debug, Default)]
pub struct Judged {
    /// One report per pod (template).
    pub reports: Vec<Report>,
    /// The revision whose webhook entry selects each pod (`None`: no entry does).
    pub revisions: Vec<Option<String>>,
    /// Warnings and notes about the evaluation (a revision asked for and not evaluated, the
    /// `auto.` entry, a verdict that assumes another revision's control plane), for stderr.
    pub messages: Vec<String>,
}

impl Judged {
    /// The injector's warnings for these pods (an invalid `sidecar.istio.io/inject` value, an
    /// invalid policy), each as `warning: KIND/NAME: TEXT`, as every command prints them.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.reports {
            for w in &r.warnings {
                let line = format!("warning: {}: {w}", r.workload);
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
        out
    }

    /// [`Judged::messages`] then [`Judged::warnings`]: what a command prints on stderr.
    pub fn stderr_lines(&self) -> Vec<String> {
        let mut out = self.messages.clone();
        out.extend(self.warnings());
        out
    }

    /// Whether no webhook entry selects any of the pods (there is at least one): the injector
    /// never sees them, so they are not injected whatever the injector would decide.
    pub fn none_selected(&self) -> bool {
        !self.reports.is_empty() && self.reports.iter().all(|r| r.reason == NOT_SELECTED)
    }

    /// Whether every pod is injected.
    pub fn all_injected(&self) -> bool {
        self.reports.iter().all(|r| r.injected)
    }

    /// For the pods no entry selects: `note: KIND/NAME: not injected, ...; to inject it: FIX`.
    pub fn not_selected_notes(&self, what: &str) -> Vec<String> {
        self.reports
            .iter()
            .filter(|r| r.reason == NOT_SELECTED)
            .map(|r| {
                let fix = r
                    .fix
                    .as_deref()
                    .map(|f| format!("; to inject it: {f}"))
                    .unwrap_or_default();
                format!(
                    "note: {}: {what}: no webhook entry selects it in namespace {} \
                     (--namespace-labels){fix}",
                    r.workload, r.namespace
                )
            })
            .collect()
    }
}

/// Lines said once per run, however many documents they apply to (the commands print the
/// decision's messages as they judge, in order).
#[derive(Debug, Default)]
pub struct SaidOnce(Mutex<BTreeSet<String>>);

impl SaidOnce {
    /// The lines of `lines` not said before (now said).
    pub fn fresh(&self, lines: Vec<String>) -> Vec<String> {
        let mut said = self.0.lock().unwrap_or_else(|p| p.into_inner());
        lines
            .into_iter()
            .filter(|l| said.insert(l.clone()))
            .collect()
    }

    /// Print the lines of `lines` not said before on stderr.
    pub fn eprint(&self, lines: Vec<String>) {
        for l in self.fresh(lines) {
            eprintln!("{l}");
        }
    }
}

impl<'a> Decider<'a> {
    /// The decision's inputs: the flags, the command's `--revision` (`""`: none), the namespace
    /// of pods whose manifest names none, and the injector's configuration.
    pub fn new(
        args: &DecisionArgs,
        revision: &str,
        namespace: Option<&str>,
        snapshot: &'a Snapshot,
    ) -> Result<Decider<'a>> {
        Ok(Decider {
            snapshot,
            namespace: namespace.map(str::to_string),
            namespace_labels: crate::check::parse_labels(&args.namespace_labels)?,
            labels_given: !args.namespace_labels.is_empty(),
            revision: revision.to_string(),
            selector_revision: args.selector_revision.clone(),
            enable_namespaces_by_default: args.enable_namespaces_by_default,
            tags: args.revision_tags.iter().cloned().collect(),
            entries_always: false,
            entries: Mutex::new(Vec::new()),
        })
    }

    /// The decider of `check`, whose verdict always rests on the webhook entries (the other
    /// commands' only with --namespace-labels): a pod asking for a revision the evaluated
    /// entries do not select is warned about even without the labels.
    pub fn explaining(mut self) -> Decider<'a> {
        self.entries_always = true;
        self
    }

    /// Whether `--namespace-labels` was given.
    pub fn labels_given(&self) -> bool {
        self.labels_given
    }

    /// The namespace labels given.
    pub fn namespace_labels(&self) -> &Map<String, Value> {
        &self.namespace_labels
    }

    /// The webhook entries evaluated by default (no revision asked for).
    pub fn options(&self) -> WebhookOptions {
        WebhookOptions {
            revision: self.revision.clone(),
            selector: self.selector_revision.clone(),
            enable_namespaces_by_default: self.enable_namespaces_by_default,
            ..WebhookOptions::default()
        }
    }

    /// Whether judging `pod` (a pod or pod template) can say anything a command without
    /// `check`'s table prints: always with --namespace-labels (the verdict) or
    /// --enable-namespaces-by-default (its note), else only when the pod asks for injection
    /// (`sidecar.istio.io/inject`, which may be invalid) or for a revision other than
    /// `default` and outrigger's own (the note on what that assumes). Keeps the common case
    /// (plain or injected pods) free of the explanation's cost.
    pub fn worth_judging(&self, pod: &Value) -> bool {
        let has = |p: &str, key: &str| {
            pod.pointer(p)
                .and_then(Value::as_object)
                .and_then(|m| m.get(key))
        };
        self.labels_given
            || self.enable_namespaces_by_default
            || has("/metadata/labels", INJECT_KEY).is_some()
            || has("/metadata/annotations", INJECT_KEY).is_some()
            || has("/metadata/labels", REVISION_LABEL)
                .and_then(Value::as_str)
                .is_some_and(|r| {
                    r != selection::DEFAULT_REVISION && r != selection::OUTRIGGER_SELECTOR
                })
    }

    /// The webhook entries `options` render, rendered once per distinct options.
    fn entries_of(&self, options: &WebhookOptions) -> Arc<Vec<Value>> {
        let mut cache = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, e)) = cache.iter().find(|(o, _)| o == options) {
            return e.clone();
        }
        let e = Arc::new(webhook_object::entries(options));
        cache.push((options.clone(), e.clone()));
        e
    }

    /// Judge the pods (templates) of one document.
    pub fn judge(&self, doc: &Value) -> Judged {
        self.judge_pods(&doc_name(doc), check::pods_of(doc))
    }

    /// Judge one pod template of workload `workload` (`Deployment/web`) in `namespace` (empty:
    /// the decider's).
    pub fn judge_pod(&self, workload: &str, namespace: &str, pod: &Value) -> Judged {
        let mut pod = pod.clone();
        if !namespace.is_empty() {
            if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.entry("namespace")
                    .or_insert_with(|| Value::String(namespace.to_string()));
            }
        }
        self.judge_pods(workload, vec![(workload.to_string(), pod)])
    }

    fn judge_pods(&self, name: &str, pods: Vec<(String, Value)>) -> Judged {
        let mut messages = Vec::new();
        let asked = requested_revision(&pods, &self.namespace_labels);
        let mut options = self.options();
        let given = match (&self.selector_revision, self.revision.as_str()) {
            (Some(sel), _) => Some(format!("--selector-revision {sel}")),
            (None, "") => None,
            (None, rev) => Some(format!(
                "--revision {rev} (entries selecting istio.io/rev={})",
                options.selector_revision()
            )),
        };
        match (&asked, given) {
            (Some(rev), None) => match self.tags.get(rev) {
                // A tag: its revision's entries, selecting the tag.
                Some(target) => {
                    options.revision = target.clone();
                    options.tag = Some(rev.clone());
                }
                None => {
                    options.revision = rev.clone();
                    options.selector = Some(rev.clone());
                }
            },
            (Some(rev), Some(given))
                if rev != options.selector_revision()
                    && (self.entries_always || self.labels_given) =>
            {
                messages.push(format!(
                    "warning: {name} asks for revision {rev:?} (label istio.io/rev) but {given} \
                     is evaluated"
                ));
            }
            _ => {}
        }
        if let Some(w) = webhook_object::auto_entry_dropped(&options) {
            messages.push(w);
        }
        let webhooks = self.entries_of(&options);
        let reports: Vec<Report> = pods
            .iter()
            .map(|(workload, pod)| {
                // The manifest's namespace wins; the decider's is for manifests without one.
                let ns = pod
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .or(self.namespace.as_deref())
                    .unwrap_or("default")
                    .to_string();
                let ctx = check::Context {
                    namespace: &ns,
                    namespace_labels: &self.namespace_labels,
                    webhooks: &webhooks,
                    snapshot: self.snapshot,
                };
                check::explain(workload, pod, &ctx)
            })
            .collect();
        // A tag for the default revision assumes nothing.
        let assumes = asked.clone().filter(|rev| {
            !self
                .tags
                .get(rev)
                .is_some_and(|t| selection::is_default_revision(t))
        });
        if let Some(note) =
            assumed_revision(name, &assumes, &self.revision, self.snapshot, &reports)
        {
            messages.push(note);
        }
        let revisions = reports
            .iter()
            .map(|r| crate::check::selecting_revision(r, &webhooks))
            .collect();
        Judged {
            reports,
            revisions,
            messages,
        }
    }
}

/// The revision the pods ask for: the `istio.io/rev` label of the first pod (template) that has
/// one, else the namespace's (`default` as written; `None` when nothing asks).
///
/// The pod's label comes first here, unlike Istio's precedence (the namespace's labels first,
/// [`selection::selecting_revision`]): `check` and `inject` evaluate a pod against the revision
/// it asks for, and say when another is evaluated (`tests/check.rs`
/// `a_pod_asking_for_a_revision_is_checked_against_it` pins that a pod asking for `canary` in a
/// namespace labelled `istio.io/rev=stable` is judged by canary's entries).
fn requested_revision(pods: &[(String, Value)], ns_labels: &Map<String, Value>) -> Option<String> {
    let label = |labels: Option<&Value>| {
        labels
            .and_then(|l| l.get(REVISION_LABEL))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    pods.iter()
        .find_map(|(_, pod)| label(pod.pointer("/metadata/labels")))
        .or_else(|| {
            ns_labels
                .get(REVISION_LABEL)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

/// `Deployment/web`: how a warning names a document.
pub fn doc_name(doc: &Value) -> String {
    format!(
        "{}/{}",
        doc["kind"].as_str().unwrap_or("object"),
        doc.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    )
}

/// The note for a verdict that rests on an assumption: a pod (or its namespace) asks for a
/// revision other than `default` (label `istio.io/rev`), `--revision` names none, and the
/// configuration is the default revision's (its values name no `revision`). It is then judged by
/// that revision's webhooks, as if a control plane of that revision served it with this
/// configuration, which nothing offline can confirm.
fn assumed_revision(
    name: &str,
    asked: &Option<String>,
    given: &str,
    snapshot: &Snapshot,
    reports: &[Report],
) -> Option<String> {
    // outrigger's own selector value names no control plane: the configuration given serves it.
    let rev = asked
        .as_deref()
        .filter(|r| *r != selection::DEFAULT_REVISION && *r != selection::OUTRIGGER_SELECTOR)?;
    let config_revision = snapshot
        .values
        .get("revision")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !given.is_empty() || !config_revision.is_empty() || !reports.iter().any(|r| r.injected) {
        return None;
    }
    Some(format!(
        "note: {name} is INJECTED by revision {rev:?}'s webhooks (label istio.io/rev={rev}) only if \
         a control plane of revision {rev} runs; the configuration given is the default \
         revision's (pass revision {rev}'s files, or --revision {rev} to evaluate it as such)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "apps", "labels": labels},
               "spec": {"containers": [{"name": "app", "image": "app"}]}})
    }

    fn decider<'a>(snap: &'a Snapshot, flags: &[&str]) -> Decider<'a> {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            decision: DecisionArgs,
            #[arg(short = 'f')]
            filename: Option<String>,
        }
        let argv = ["x", "-f", "m.yaml"].iter().chain(flags);
        let flags = <Flags as clap::Parser>::try_parse_from(argv).expect("flags");
        Decider::new(&flags.decision, "", None, snap).expect("decider")
    }

    /// A revision tag stands for its revision: the pod is judged by the entries selecting the
    /// tag, and a tag of the default revision assumes no other control plane.
    #[test]
    fn a_revision_tag_is_judged_by_its_entries_and_assumes_nothing_for_default() {
        let snap = Snapshot::load("policy: enabled", "{}", None).expect("config");
        let tagged = pod(json!({"istio.io/rev": "prod"}));
        let judged = decider(&snap, &["--revision-tag", "prod=default"]).judge(&tagged);
        assert!(judged.all_injected(), "{:?}", judged.reports);
        assert_eq!(judged.revisions, [Some("prod".to_string())]);
        assert!(judged.messages.is_empty(), "{:?}", judged.messages);
        // The same tag for another revision: the note says what the verdict assumes.
        let judged = decider(&snap, &["--revision-tag", "prod=canary"]).judge(&tagged);
        assert!(judged.all_injected());
        assert_eq!(judged.messages.len(), 1, "{:?}", judged.messages);
        assert!(judged.messages[0].starts_with("note: Pod/p is INJECTED by revision \"prod\"'s"));
    }

    /// Only a pod the decision can say something about is judged without --namespace-labels.
    #[test]
    fn plain_and_injected_pods_are_not_worth_judging_without_labels() {
        let snap = Snapshot::load("policy: enabled", "{}", None).expect("config");
        let d = decider(&snap, &[]);
        assert!(!d.worth_judging(&pod(json!({"app": "a"}))));
        assert!(!d.worth_judging(&pod(json!({"istio.io/rev": "default"}))));
        assert!(!d.worth_judging(&pod(json!({"istio.io/rev": "outrigger"}))));
        assert!(d.worth_judging(&pod(json!({"istio.io/rev": "canary"}))));
        assert!(d.worth_judging(&pod(json!({"sidecar.istio.io/inject": "maybe"}))));
        let labelled = decider(&snap, &["--namespace-labels", "team=a"]);
        assert!(labelled.worth_judging(&pod(json!({}))));
        assert!(labelled.labels_given());
        // Said once: a second time is silent.
        let said = SaidOnce::default();
        assert_eq!(said.fresh(vec!["a".into(), "b".into()]), ["a", "b"]);
        assert_eq!(said.fresh(vec!["a".into(), "c".into()]), ["c"]);
    }
}
