//! `outrigger doctor`: examine an install in the cluster and give a verdict per check, with the
//! object(s) and the cause named once and a hint where there is a fix (docs/kubernetes.md,
//! "outrigger doctor").
//!
//! What is read ([`facts`]) is gathered once with the user's credentials; the checks over it
//! ([`config`], [`service`], [`certs`]) are plain functions; [`templates`] judges the served
//! configuration's templates as `serve` does (what a newer Istio uses that outrigger lacks); [`rbac`] asks the API server
//! (SelfSubjectAccessReview, impersonating the server's service account) and [`probe`] makes a
//! server-side dry-run create (`dryRun=All`: nothing is stored). Exit status: 0 when no check
//! failed (warnings and skipped checks allowed), 1 when one did, 2 when the doctor could not run.

pub mod args;
pub mod certs;
pub mod config;
pub mod facts;
pub mod output;
pub mod probe;
pub mod rbac;
pub mod selection;
pub mod service;
pub mod templates;

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;

pub use crate::doctor::args::{DoctorArgs, DoctorOutput};

/// The verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Healthy.
    Pass,
    /// Not what was asked for, but nothing found at fault (a check without the facts it needs).
    Skipped,
    /// Works, with a risk worth knowing.
    Warn,
    /// Broken: pods are refused, admitted uninjected, or injected by something else.
    Fail,
}

impl Verdict {
    /// The word printed for it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Skipped => "skipped",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Its name (`service-endpoints`, ...).
    pub name: &'static str,
    /// Its verdict.
    pub verdict: Verdict,
    /// One line naming the object(s) and the cause.
    pub finding: String,
    /// What to do about it (absent when it passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Check {
    /// A passed check.
    pub fn pass(name: &'static str, finding: impl Into<String>) -> Check {
        Check {
            name,
            verdict: Verdict::Pass,
            finding: finding.into(),
            hint: None,
        }
    }

    /// A check with `verdict` and a hint (none when empty).
    pub fn with(
        name: &'static str,
        verdict: Verdict,
        finding: impl Into<String>,
        hint: impl Into<String>,
    ) -> Check {
        let hint: String = hint.into();
        Check {
            name,
            verdict,
            finding: finding.into(),
            hint: (!hint.is_empty()).then_some(hint),
        }
    }
}

/// The exit status of a run: 1 when a check failed, else 0.
pub fn exit_status(checks: &[Check]) -> ExitCode {
    if checks.iter().any(|c| c.verdict == Verdict::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Run `outrigger doctor`.
pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    if let Some(ns) = &args.refused_namespace {
        return Err(crate::report::with_hint(
            anyhow::anyhow!(
                "-n/--namespace is the workloads' namespace in every command; doctor has none"
            ),
            format!(
                "outrigger's own namespace is --outrigger-namespace {ns}; the probe's is \
                 --probe-namespace {ns}"
            ),
        ));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let checks = rt.block_on(async {
        let cluster =
            crate::kube::client::connect(args.kubeconfig.as_deref(), args.context.as_deref())
                .await?;
        facts::is_kubernetes_api(&cluster.client, &cluster.target)
            .await
            .map_err(|e| cluster.explain(e))?;
        examine(&cluster.client, args)
            .await
            .map_err(|e| cluster.explain(e))
    })?;
    output::print(&checks, args.output)?;
    Ok(exit_status(&checks))
}

/// Gather the facts and run every check, in the order they are printed.
pub async fn examine(client: &::kube::Client, args: &DoctorArgs) -> Result<Vec<Check>> {
    let facts = facts::gather(client, args).await?;
    let now = time::OffsetDateTime::now_utc();
    let mut checks = config::checks(&facts);
    checks.push(service::endpoints(&facts));
    checks.extend(certs::checks(&facts, now, args.expiry_warning));
    checks.push(rbac::check(client, &facts).await);
    // The configuration the server serves is read once, for the templates check and the probe.
    let served = probe::served_raw(client, &facts).await;
    checks.push(templates::check(&served));
    checks.push(probe::check(client, &facts, &served, args.probe_namespace.as_deref()).await);
    Ok(checks)
}
