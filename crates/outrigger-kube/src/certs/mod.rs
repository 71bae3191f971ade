//! Serving certificate in the cluster: a CA and a serving certificate kept in one Secret, shared
//! by every replica, and the CA bundle patched into the MutatingWebhookConfiguration.
//!
//! * Bootstrap is safe when several replicas start at once: the Secret is created only if absent;
//!   a replica that loses the race (409 Conflict) reads and uses what the winner wrote. Updates
//!   carry the `resourceVersion` read, so concurrent rotations also have exactly one winner.
//! * Rotation never breaks trust: a new CA is first *added* to the bundle (the old CA stays, and
//!   the serving certificate stays the one the old CA signed); only after
//!   [`bundle::ROTATION_GRACE`], once the API server has had time to load the overlapping
//!   bundle, is the serving certificate re-issued by the new CA; a retired CA leaves the bundle
//!   when it expires.
//! * `--ca-bundle-managed-externally` ([`CertConfig::webhook`] `None`) never writes the webhook
//!   configuration, and serves a certificate of a new CA only once the external owner's caBundle
//!   (observed read-only, [`CertConfig::observe`]) contains it.
//! * A Secret issued by another tool (cert-manager's `kubernetes.io/tls` Secrets, see
//!   [`store::is_external`]) is used read-only and hot-reloaded when it changes; outrigger never
//!   writes it. Secrets of ours are only ever changed with a JSON merge patch of their `data`, so
//!   their type, labels and annotations (other tools') are never touched.
//! * The Secret is watched: a deleted Secret is restored from the bundle in memory, and a fresh
//!   CA keeps the CAs of the webhook's current caBundle trusted beside it.
//!
//! Layout: [`bundle`] holds the pure rules (what to rotate and when, the grace, the trusted
//! bundle), [`store`] the Secret and caBundle I/O and one reconciliation, and this module the
//! run loop ([`run`]).

pub mod bundle;
pub mod store;
#[cfg(test)]
mod testutil;

use ::kube::api::Api;
use ::kube::Client;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use time::OffsetDateTime;

pub use bundle::{service_dns_names, CertBundle};
pub(crate) use store::reconcile_at;
use store::reconcile_with;
pub use store::CertConfig;

/// Keep certificates fresh and the caBundle in sync forever: reconcile whenever the Secret
/// changes (watched, so another replica's rotation, an external issuer's renewal or a deletion
/// is seen at once; a 410 Gone watch relists), whenever the webhook configuration changes (so a
/// caBundle reset by someone else is restored at once), and every `interval` for time-based
/// renewal; publish each new bundle on `tx` (the TLS server reloads from it), retry failures
/// after `retry`. With an externally managed bundle the webhook is never written, only watched
/// when [`CertConfig::observe`] names it.
pub async fn run(
    client: Client,
    cfg: CertConfig,
    tx: tokio::sync::watch::Sender<CertBundle>,
    interval: std::time::Duration,
    retry: std::time::Duration,
) {
    use ::kube::runtime::WatchStreamExt;
    use futures::StreamExt;
    // With an externally managed caBundle the configuration is still watched (read-only) so a
    // CA switch waiting for the external owner happens as soon as its caBundle changes.
    let webhook_changes = match cfg.webhook.as_ref().or(cfg.observe.as_ref()) {
        Some(name) => {
            let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
            ::kube::runtime::watcher::watch_object(api, name)
                .default_backoff()
                .map(|_| ())
                .boxed()
        }
        None => futures::stream::pending().boxed(),
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &cfg.namespace);
    let secret_changes = ::kube::runtime::watcher::watch_object(secrets, &cfg.secret)
        .default_backoff()
        .map(|_| ())
        .boxed();
    let mut changes = futures::stream::select(webhook_changes, secret_changes);
    loop {
        let current = tx.borrow().clone();
        let now = OffsetDateTime::now_utc();
        let wait = match reconcile_with(client.clone(), &cfg, now, Some(&current)).await {
            Ok(bundle) => {
                tx.send_if_modified(|cur| {
                    let changed = *cur != bundle;
                    if changed {
                        *cur = bundle;
                    }
                    changed
                });
                interval
            }
            Err(e) => {
                tracing::warn!(error = %e, "certificate reconciliation failed");
                retry
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            event = changes.next() => {
                if event.is_none() {
                    tokio::time::sleep(retry).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use base64::Engine;
    use http::Method;
    use serde_json::json;
    use testutil::*;

    #[tokio::test]
    async fn the_secret_is_watched_and_a_gone_watch_relists() {
        let b1 = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let b2 = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let (client, mut handle) = mock::client();
        let (tx, mut rx) = tokio::sync::watch::channel(b1.clone());
        let hour = std::time::Duration::from_secs(3600);
        let task = tokio::spawn(run(client, cfg(None), tx, hour, hour));
        let list = |b: &CertBundle, rv: &str| {
            json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {"resourceVersion": rv},
                   "items": [secret_json(b, rv)]})
        };
        let (mut lists, mut stored, mut open) = (0, b1.clone(), Vec::new());
        for _ in 0..20 {
            let r = mock::next(&mut handle).await;
            let uri = r.uri.clone();
            if uri.starts_with(SECRET_PATH) {
                r.respond(
                    200,
                    secret_json(&stored, if stored == b1 { "3" } else { "4" }),
                );
                if stored == b2 {
                    break;
                }
            } else if uri.starts_with(SECRETS_PATH) && uri.contains("watch=true") {
                if lists == 1 {
                    // The resourceVersion is too old: the API server ends the watch with 410.
                    let ev = json!({"type": "ERROR", "object": mock::gone()});
                    let mut line = serde_json::to_vec(&ev).expect("encode");
                    line.push(b'\n');
                    r.respond_raw(200, line);
                } else {
                    open.push(r);
                }
            } else if uri.starts_with(SECRETS_PATH) {
                assert!(
                    uri.contains("fieldSelector=metadata.name%3Doutrigger-tls"),
                    "{uri}"
                );
                lists += 1;
                if lists == 2 {
                    // Meanwhile another replica (or an issuer) changed the Secret.
                    stored = b2.clone();
                    r.respond(200, list(&b2, "4"));
                } else {
                    r.respond(200, list(&b1, "3"));
                }
            } else {
                panic!("unexpected request {} {uri}", r.method);
            }
        }
        assert_eq!(lists, 2, "relisted after 410 Gone");
        tokio::time::timeout(std::time::Duration::from_secs(5), rx.changed())
            .await
            .expect("published in time")
            .expect("published");
        assert_eq!(*rx.borrow(), b2);
        task.abort();
    }

    #[tokio::test]
    async fn keep_in_sync_restores_a_reset_ca_bundle() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let encoded = base64::engine::general_purpose::STANDARD.encode(&b.ca_bundle_pem);
        let mut in_sync = mwc_json(Some(&encoded));
        in_sync["webhooks"][1]["clientConfig"]["caBundle"] = json!(encoded);
        let reset = mwc_json(None);
        let (client, mut handle) = mock::client();
        let (tx, mut rx) = tokio::sync::watch::channel(
            CertBundle::generate(&["placeholder".into()], now()).expect("generate"),
        );
        let hour = std::time::Duration::from_secs(3600);
        let task = tokio::spawn(run(
            client,
            cfg(Some("outrigger-sidecar-injector")),
            tx,
            hour,
            hour,
        ));
        let mut current = in_sync.clone();
        let mut patched = None;
        let mut open_watches = Vec::new();
        for _ in 0..30 {
            let r = mock::next(&mut handle).await;
            let uri = r.uri.clone();
            match (r.method.clone(), uri.as_str()) {
                (Method::GET, u) if u.starts_with(SECRET_PATH) => {
                    r.respond(200, secret_json(&b, "3"))
                }
                (Method::GET, u) if u.starts_with(SECRETS_PATH) && u.contains("watch=true") => {
                    open_watches.push(r); // nothing changes on the Secret
                }
                (Method::GET, u) if u.starts_with(SECRETS_PATH) => r.respond(
                    200,
                    json!({"apiVersion": "v1", "kind": "SecretList",
                           "metadata": {"resourceVersion": "3"}, "items": [secret_json(&b, "3")]}),
                ),
                (Method::GET, u) if u.starts_with(MWC_PATH) => r.respond(200, current.clone()),
                (Method::GET, u) if u.contains("watch=true") => {
                    // Someone resets the caBundle.
                    let mut ev = reset.clone();
                    ev["metadata"]["resourceVersion"] = json!("6");
                    current = ev.clone();
                    r.respond_raw(200, mock::watch_line("MODIFIED", &ev));
                }
                (Method::GET, u)
                    if u.starts_with(
                        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?",
                    ) =>
                {
                    assert!(
                        u.contains("fieldSelector=metadata.name%3Doutrigger-sidecar-injector"),
                        "{u}"
                    );
                    r.respond(200, json!({"apiVersion": "admissionregistration.k8s.io/v1",
                        "kind": "MutatingWebhookConfigurationList", "metadata": {"resourceVersion": "5"},
                        "items": [in_sync.clone()]}));
                }
                (Method::PATCH, u) if u.starts_with(MWC_PATH) => {
                    patched = Some(r.body.clone());
                    r.respond(200, in_sync.clone());
                    break;
                }
                (m, u) => panic!("unexpected request {m} {u}"),
            }
        }
        let patch = patched.expect("the reset caBundle was restored");
        assert_eq!(
            patch["webhooks"][0]["clientConfig"]["caBundle"],
            json!(encoded)
        );
        rx.changed().await.expect("bundle published");
        assert_eq!(*rx.borrow(), b);
        task.abort();
    }
}
