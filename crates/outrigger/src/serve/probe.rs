//! `--probe-interval`: the admission path checked end to end while serving. Every interval the
//! server asks the API server for a dry-run create of a probe pod in `--probe-namespace`
//! ([`crate::kube::probe`]), which runs the whole admission chain (every mutating webhook the
//! API server would call, this injector's Service and caBundle included) and stores nothing,
//! and counts the outcome: `injected` (with outrigger's marker, `outrigger.dev/injected-by`:
//! this injector's webhook injected it), `not_injected` (admitted without a sidecar: the webhook
//! was not called, failed open, or skipped the pod; or with another injector's sidecar and no
//! marker, e.g. istiod's while outrigger's endpoints are gone), `refused` (the API server refused the pod:
//! a webhook failed under `failurePolicy: Fail`, or a policy refused it) or `error` (no answer).
//! The outcome is a metric and, when it is not `injected`, a warning with the API server's
//! message; readiness does not depend on it (a probe that fails because the API server or
//! another webhook is down must not take the injector out of service).
//!
//! Off by default. It needs `create` on pods in the probe's namespace, which the injector's
//! namespace-scoped Role does not grant: `deploy/components/probe` adds a namespace of its own
//! (labelled `istio.io/rev=outrigger`: only outrigger selects it) and that one permission.

use std::sync::Arc;
use std::time::Duration;

use ::kube::Client;
use outrigger_inject::decide::selection::{injected_by_outrigger, INJECTED_BY_ANNOTATION};
use serde_json::Value;

use super::metrics::Metrics;
use crate::kube::probe::{dry_run_create, injected, probe_pod};

/// The probe pod's name.
pub const POD_NAME: &str = "outrigger-serve-probe";

/// What one probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The pod came back with a sidecar.
    Injected,
    /// The pod was admitted without one.
    NotInjected,
    /// The API server refused the pod.
    Refused,
    /// No answer from the API server.
    Error,
}

impl Outcome {
    /// The metric label's value.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Injected => "injected",
            Outcome::NotInjected => "not_injected",
            Outcome::Refused => "refused",
            Outcome::Error => "error",
        }
    }
}

/// The outcome of a dry-run create's answer, with the API server's message when it refused or
/// did not answer (or why a pod with a sidecar is not counted as outrigger's). Only outrigger's
/// marker counts as `injected`: another injector's sidecar is `not_injected`.
pub fn judge(answer: &Result<Value, (u16, String)>) -> (Outcome, Option<String>) {
    match answer {
        Ok(pod) if injected_by_outrigger(pod) => (Outcome::Injected, None),
        Ok(pod) if injected(pod) => (
            Outcome::NotInjected,
            Some(format!(
                "it came back with a sidecar but without {INJECTED_BY_ANNOTATION}: another \
                 injector injected it, not this one"
            )),
        ),
        Ok(_) => (Outcome::NotInjected, None),
        Err((0, message)) => (Outcome::Error, Some(message.clone())),
        Err((code, message)) => (Outcome::Refused, Some(format!("{code}: {message}"))),
    }
}

/// Forever: probe `namespace` every `interval` (the first after one interval), count and log
/// the outcome.
pub async fn run(client: Client, namespace: String, interval: Duration, metrics: Arc<Metrics>) {
    let pod = probe_pod(POD_NAME);
    loop {
        tokio::time::sleep(interval).await;
        let answer = dry_run_create(&client, &namespace, &pod).await;
        let (outcome, message) = judge(&answer);
        metrics.probed(outcome.label());
        match (outcome, message) {
            (Outcome::Injected, _) => {
                tracing::debug!(namespace = %namespace, "admission probe: injected")
            }
            (Outcome::NotInjected, Some(why)) => tracing::warn!(
                namespace = %namespace,
                outcome = outcome.label(),
                "admission probe: a dry-run pod in {namespace} was not injected by outrigger: {why}"
            ),
            (Outcome::NotInjected, None) => tracing::warn!(
                namespace = %namespace,
                outcome = outcome.label(),
                "admission probe: a dry-run pod in {namespace} was admitted without a sidecar (the webhook was not called, failed open, or skipped it)"
            ),
            (_, message) => tracing::warn!(
                namespace = %namespace,
                outcome = outcome.label(),
                "admission probe: a dry-run pod in {namespace} was {}: {}",
                if outcome == Outcome::Refused { "refused" } else { "not answered" },
                message.unwrap_or_default()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_judged_by_the_sidecar_and_the_status_code() {
        let plain = probe_pod(POD_NAME);
        let mut with = plain.clone();
        with["metadata"]["annotations"] = json!({"sidecar.istio.io/status": "{}"});
        // A sidecar without outrigger's marker is another injector's (istiod's).
        let (o, m) = judge(&Ok(with.clone()));
        assert_eq!(o, Outcome::NotInjected);
        assert!(m.is_some_and(|m| m.contains("outrigger.dev/injected-by")));
        outrigger_inject::decide::selection::mark_injected(&mut with);
        assert_eq!(judge(&Ok(with)), (Outcome::Injected, None));
        assert_eq!(judge(&Ok(plain)).0, Outcome::NotInjected);
        let (o, m) = judge(&Err((500, "failed calling webhook".into())));
        assert_eq!(o, Outcome::Refused);
        assert_eq!(m.as_deref(), Some("500: failed calling webhook"));
        assert_eq!(
            judge(&Err((0, "connection refused".into()))).0,
            Outcome::Error
        );
    }
}
