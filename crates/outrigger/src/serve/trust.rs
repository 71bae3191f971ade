//! Readiness on the API server's trust: a replica is not ready while the issuer of the
//! certificate it serves is missing from the caBundle of the webhook configuration, since every
//! call the API server makes would then fail its TLS verification. Checked in every certificate
//! mode of `serve --kube` (the Secret managed by outrigger, an externally issued Secret,
//! `--ca-bundle-managed-externally`, `--tlsCertFile`), against the configuration
//! `--webhook-config-name` as watched (by name), and again whenever the served certificate
//! changes.
//!
//! The match is on the issuer's distinguished name against the subjects of the bundle's
//! certificates, for every `*sidecar-injector.istio.io` entry; signatures are not verified here
//! (the API server does that).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::kube::runtime::watcher::watch_object;
use ::kube::runtime::WatchStreamExt;
use ::kube::{Api, Client};
use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;

use super::handler::State;
use crate::kube::webhook_object::ENTRY_SUFFIX;

/// What readiness knows about the API server's trust in the served certificate.
#[derive(Debug, Default)]
pub struct Trust {
    problem: Mutex<Option<String>>,
}

impl Trust {
    /// Why the API server would not trust the served certificate (`None`: it would, or this is
    /// not checked).
    pub fn not_ready(&self) -> Option<String> {
        self.problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Record a verdict; logs when it changes.
    pub fn set(&self, problem: Option<String>) {
        let mut slot = self.problem.lock().unwrap_or_else(|e| e.into_inner());
        if *slot != problem {
            match &problem {
                Some(why) => tracing::error!("{why}; not ready"),
                None => {
                    if slot.is_some() {
                        tracing::info!(
                            "the webhook configuration's caBundle trusts the serving certificate"
                        );
                    }
                }
            }
        }
        *slot = problem;
    }
}

/// The verdict for a served certificate issued by `issuer` (DER of the distinguished name)
/// against `mwc` (`None`: the configuration does not exist).
pub fn verdict(
    issuer: &[u8],
    name: &str,
    mwc: Option<&MutatingWebhookConfiguration>,
) -> Option<String> {
    let Some(mwc) = mwc else {
        return Some(format!(
            "MutatingWebhookConfiguration {name:?} not found: the API server cannot call this replica"
        ));
    };
    let entries: Vec<_> = mwc
        .webhooks
        .iter()
        .flatten()
        .filter(|w| w.name.ends_with(ENTRY_SUFFIX))
        .collect();
    let missing: Vec<&str> = entries
        .iter()
        .filter(|w| {
            let pem = w
                .client_config
                .ca_bundle
                .as_ref()
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default();
            let subjects = crate::pki::parse_certs(&pem).unwrap_or_default();
            !subjects.iter().any(|c| c.subject == issuer)
        })
        .map(|w| w.name.as_str())
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "the issuer of the serving certificate is not in the caBundle of MutatingWebhookConfiguration {name:?} (entries {}): the API server would refuse this replica's certificate",
        missing.join(", ")
    ))
}

/// The issuer (DER distinguished name) of the certificate `state` serves.
fn served_issuer(state: &State) -> Option<Vec<u8>> {
    state.certs.leaf_issuer()
}

/// Forever: watch `name` and re-check whenever it or the served certificate changes (the
/// certificate is looked at every second).
pub async fn run(client: Client, name: String, state: Arc<State>) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let mut changes = watch_object(api, &name).default_backoff().boxed();
    let mut current: Option<Option<MutatingWebhookConfiguration>> = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            item = changes.next() => match item {
                Some(Ok(object)) => current = Some(object),
                Some(Err(e)) => tracing::warn!(webhook = %name, error = %e, "webhook configuration watch failed"),
                None => return,
            },
            _ = tick.tick() => {}
        }
        if let (Some(object), Some(issuer)) = (&current, served_issuer(&state)) {
            state.trust.set(verdict(&issuer, &name, object.as_ref()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mwc(bundles: &[(&str, Option<&str>)]) -> MutatingWebhookConfiguration {
        use base64::Engine as _;
        let webhooks: Vec<_> = bundles
            .iter()
            .map(|(n, pem)| {
                let mut cc = json!({});
                if let Some(pem) = pem {
                    cc["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(pem));
                }
                json!({"name": n, "sideEffects": "None", "admissionReviewVersions": ["v1"], "clientConfig": cc})
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "w"}, "webhooks": webhooks}))
            .expect("mwc")
    }

    #[test]
    fn the_issuer_must_be_in_every_injector_entrys_bundle() {
        let now = time::OffsetDateTime::now_utc();
        let ca = crate::pki::new_ca("a", now, now + time::Duration::days(1)).expect("CA");
        let other = crate::pki::new_ca("b", now, now + time::Duration::days(1)).expect("CA");
        let leaf =
            crate::pki::new_serving(&ca, &["svc".into()], now, now + time::Duration::days(1))
                .expect("leaf");
        let issuer = crate::pki::first(&leaf.cert_pem).expect("leaf").issuer;
        let both = format!("{}{}", other.cert_pem, ca.cert_pem);
        let ok = mwc(&[
            ("a.sidecar-injector.istio.io", Some(&both)),
            ("b.sidecar-injector.istio.io", Some(&ca.cert_pem)),
            ("unrelated.example.com", None),
        ]);
        assert_eq!(verdict(&issuer, "w", Some(&ok)), None);
        let bad = mwc(&[
            ("a.sidecar-injector.istio.io", Some(&ca.cert_pem)),
            ("b.sidecar-injector.istio.io", Some(&other.cert_pem)),
            ("c.sidecar-injector.istio.io", None),
        ]);
        let why = verdict(&issuer, "w", Some(&bad)).expect("not trusted");
        assert!(
            why.contains("entries b.sidecar-injector.istio.io, c.sidecar-injector.istio.io"),
            "{why}"
        );
        assert!(verdict(&issuer, "w", None)
            .expect("missing")
            .contains("not found"));
    }
}
