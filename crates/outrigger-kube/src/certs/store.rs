//! The certificates' Secret and the webhook's caBundle on the API server: reading and writing
//! the Secret (created when absent, merge-patched with the `resourceVersion` read, never written
//! when issued by another tool), observing and patching the caBundle, and one reconciliation
//! ([`reconcile_with`]). What to change is decided by the pure [`super::bundle`] rules.

use std::collections::BTreeMap;

use ::kube::api::{Api, Patch, PatchParams, PostParams};
use ::kube::Client;
use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use serde_json::{json, Value};
use time::OffsetDateTime;

use super::bundle::{add_trusted, CertBundle};
use crate::pki::{self, first, parse_certs};
use crate::webhook_object::ENTRY_SUFFIX;

/// Secret key of the signing CA certificate (PEM).
pub(crate) const CA_CERT_KEY: &str = "ca.crt";
/// Secret key of the signing CA private key (PEM).
pub(crate) const CA_KEY_KEY: &str = "ca.key";
/// Secret key of the trusted CA bundle (current CA first, then retired CAs still valid).
pub(crate) const CA_BUNDLE_KEY: &str = "ca-bundle.crt";
/// Secret key of the serving certificate (PEM).
pub(crate) const TLS_CERT_KEY: &str = "tls.crt";
/// Secret key of the serving private key (PEM).
pub(crate) const TLS_KEY_KEY: &str = "tls.key";
/// Attempts of a read-modify-write of the Secret before giving up.
const MAX_ATTEMPTS: usize = 5;

/// Errors of certificate management.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The API server refused or failed a request.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] ::kube::Error),
    /// Key or certificate generation, or reading a certificate, failed.
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    /// A stored certificate or key is unusable.
    #[error("invalid certificate data: {0}")]
    Invalid(String),
    /// The webhook configuration has no entry named `*sidecar-injector.istio.io`.
    #[error("MutatingWebhookConfiguration {0} has no webhook entry ending with {ENTRY_SUFFIX}")]
    NoWebhookEntry(String),
    /// The webhook configuration to keep in sync does not exist (names out of step).
    #[error("MutatingWebhookConfiguration {0:?} not found: generate it with `outrigger webhook-config --name {0}` or pass --webhook-config-name")]
    WebhookNotFound(String),
    /// The API server refused a request for lack of permission (RBAC).
    #[error("forbidden to {verb} {resource} {name:?}: check the RBAC rules (deploy/base/rbac.yaml): {message}")]
    Forbidden {
        /// The verb refused (`get`, `patch`, `update`, `create`, `watch`).
        verb: &'static str,
        /// The resource, e.g. `secrets` or `mutatingwebhookconfigurations`.
        resource: &'static str,
        /// The object's name.
        name: String,
        /// The API server's message.
        message: String,
    },
    /// Other replicas kept changing the Secret.
    #[error("Secret {0} kept changing under concurrent updates")]
    Contended(String),
}

/// Result alias of this module.
pub type Result<T, E = CertError> = std::result::Result<T, E>;

/// Where the certificates live and what they serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertConfig {
    /// Namespace of the Secret (the injector's namespace).
    pub namespace: String,
    /// Name of the Secret.
    pub secret: String,
    /// DNS names of the serving certificate (see [`crate::certs::bundle::service_dns_names`]).
    pub dns_names: Vec<String>,
    /// MutatingWebhookConfiguration whose caBundle is kept in sync; `None` when the bundle is
    /// managed externally (cert-manager's CA injector, GitOps).
    pub webhook: Option<String>,
    /// With an externally managed bundle: the configuration whose caBundle is *observed*
    /// (read-only) before a serving certificate of a new CA is served.
    pub observe: Option<String>,
}

fn invalid(what: impl std::fmt::Display) -> CertError {
    CertError::Invalid(what.to_string())
}

impl CertBundle {
    /// Read a bundle from a Secret's data, checking that every part parses.
    pub(crate) fn from_secret(secret: &Secret) -> Result<CertBundle> {
        let data = secret
            .data
            .as_ref()
            .ok_or_else(|| invalid("Secret has no data"))?;
        let get = |k: &str| -> Result<String> {
            let v = data
                .get(k)
                .ok_or_else(|| invalid(format!("Secret has no key {k:?}")))?;
            String::from_utf8(v.0.clone())
                .map_err(|_| invalid(format!("Secret key {k:?} is not UTF-8")))
        };
        let b = CertBundle {
            ca_cert_pem: get(CA_CERT_KEY)?,
            ca_key_pem: get(CA_KEY_KEY)?.into(),
            ca_bundle_pem: get(CA_BUNDLE_KEY)?,
            cert_pem: get(TLS_CERT_KEY)?,
            key_pem: get(TLS_KEY_KEY)?.into(),
        };
        first(&b.ca_cert_pem)?;
        parse_certs(&b.ca_bundle_pem)?;
        first(&b.cert_pem)?;
        pki::key_pair(b.ca_key_pem.as_bytes())
            .map_err(|e| invalid(format!("{CA_KEY_KEY}: {}", e.cause())))?;
        pki::key_pair(b.key_pem.as_bytes())
            .map_err(|e| invalid(format!("{TLS_KEY_KEY}: {}", e.cause())))?;
        Ok(b)
    }

    /// The Secret data of this bundle.
    pub(crate) fn secret_data(&self) -> BTreeMap<String, ByteString> {
        [
            (CA_CERT_KEY, self.ca_cert_pem.as_str()),
            (CA_KEY_KEY, &*self.ca_key_pem),
            (CA_BUNDLE_KEY, self.ca_bundle_pem.as_str()),
            (TLS_CERT_KEY, self.cert_pem.as_str()),
            (TLS_KEY_KEY, &*self.key_pem),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect()
    }
}

fn is_status(e: &::kube::Error, code: u16) -> bool {
    matches!(e, ::kube::Error::Api(s) if s.code == code)
}

/// Name a 403 by verb, resource and object; other errors pass through.
fn named(e: ::kube::Error, verb: &'static str, resource: &'static str, name: &str) -> CertError {
    match e {
        ::kube::Error::Api(s) if s.code == 403 => CertError::Forbidden {
            verb,
            resource,
            name: name.to_string(),
            message: s.message,
        },
        e => CertError::Kube(e),
    }
}

/// Warn (once per process) when the synced webhook configuration carries `istio.io/rev`:
/// a default-revision istiod patches the caBundle of such objects to its own CA.
fn warn_if_istio_labelled(mwc: &MutatingWebhookConfiguration) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let rev = mwc
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(crate::webhook_object::REV_LABEL));
    if let Some(rev) = rev {
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::warn!(
                webhook = ?mwc.metadata.name,
                revision = %rev,
                "the webhook configuration carries istio.io/rev (Istio replacement mode): istiod's \
                 own injector must be off, or istiod's webhook patcher of that revision and \
                 outrigger will overwrite each other's caBundle"
            );
        }
    }
}

pub(crate) fn secret_object(
    cfg: &CertConfig,
    bundle: &CertBundle,
    resource_version: Option<String>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(cfg.secret.clone()),
            namespace: Some(cfg.namespace.clone()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/name".to_string(),
                "outrigger".to_string(),
            )])),
            resource_version,
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(bundle.secret_data()),
        ..Secret::default()
    }
}

/// Annotation prefix of cert-manager: a Secret it issued carries `cert-manager.io/*`.
pub(crate) const CERT_MANAGER_PREFIX: &str = "cert-manager.io/";
/// The type of TLS Secrets (cert-manager's, `kubectl create secret tls`).
pub(crate) const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// Whether `secret` was issued by another tool (cert-manager, `kubectl create secret tls`, a
/// GitOps pipeline): it carries cert-manager annotations, or it holds no CA key of ours but a
/// TLS pair or the TLS type. Such a Secret is used read-only: outrigger never writes it, never
/// changes its type, and leaves rotation to its issuer.
pub(crate) fn is_external(secret: &Secret) -> bool {
    let has = |k: &str| secret.data.as_ref().is_some_and(|d| d.contains_key(k));
    let cert_manager = secret
        .metadata
        .annotations
        .iter()
        .flatten()
        .any(|(k, _)| k.starts_with(CERT_MANAGER_PREFIX));
    cert_manager
        || (!has(CA_KEY_KEY)
            && (has(TLS_CERT_KEY) || secret.type_.as_deref() == Some(TLS_SECRET_TYPE)))
}

impl CertBundle {
    /// Read an externally issued Secret (`tls.crt`, `tls.key`, optional `ca.crt`): a bundle
    /// without a CA key ([`CertBundle::is_external`]), whose trusted bundle is `ca.crt` (empty
    /// when absent).
    pub(crate) fn from_external_secret(secret: &Secret) -> Result<CertBundle> {
        let data = secret
            .data
            .as_ref()
            .ok_or_else(|| invalid("Secret has no data"))?;
        let get = |k: &str| -> Result<Option<String>> {
            data.get(k)
                .map(|v| {
                    String::from_utf8(v.0.clone())
                        .map_err(|_| invalid(format!("Secret key {k:?} is not UTF-8")))
                })
                .transpose()
        };
        let cert_pem = get(TLS_CERT_KEY)?
            .ok_or_else(|| invalid(format!("Secret has no key {TLS_CERT_KEY:?}")))?;
        let key_pem: pki::KeyPem = get(TLS_KEY_KEY)?
            .ok_or_else(|| invalid(format!("Secret has no key {TLS_KEY_KEY:?}")))?
            .into();
        first(&cert_pem)?;
        pki::key_pair(key_pem.as_bytes())
            .map_err(|e| invalid(format!("{TLS_KEY_KEY}: {}", e.cause())))?;
        let ca = get(CA_CERT_KEY)?.unwrap_or_default();
        if !ca.is_empty() {
            parse_certs(&ca)?;
        }
        Ok(CertBundle {
            ca_cert_pem: ca.clone(),
            ca_key_pem: pki::KeyPem::default(),
            ca_bundle_pem: ca,
            cert_pem,
            key_pem,
        })
    }
}

/// The caBundle currently in the injector entries of `webhook` (PEM; empty when unset or
/// unreadable). Read-only.
async fn observed_ca_bundle(client: Client, webhook: &str) -> Result<String> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let mwc = match api.get_opt(webhook).await {
        Ok(Some(m)) => m,
        Ok(None) => return Err(CertError::WebhookNotFound(webhook.to_string())),
        Err(e) => return Err(named(e, "get", "mutatingwebhookconfigurations", webhook)),
    };
    let mut pem = String::new();
    for w in mwc.webhooks.unwrap_or_default() {
        if let (true, Some(ca)) = (w.name.ends_with(ENTRY_SUFFIX), w.client_config.ca_bundle) {
            pem.push_str(&String::from_utf8_lossy(&ca.0));
            if !pem.ends_with('\n') {
                pem.push('\n');
            }
        }
    }
    Ok(pem)
}

/// A fresh bundle that also trusts the CAs the webhook's caBundle holds now, so replicas still
/// serving a certificate of the previous CA stay trusted until they load the new one.
async fn fresh_bundle(
    client: &Client,
    cfg: &CertConfig,
    now: OffsetDateTime,
) -> Result<CertBundle> {
    let mut fresh = CertBundle::generate(&cfg.dns_names, now)?;
    if let Some(webhook) = &cfg.webhook {
        match observed_ca_bundle(client.clone(), webhook).await {
            Ok(pem) => add_trusted(&mut fresh, &pem, now),
            Err(e) => {
                tracing::debug!(error = %e, "no current caBundle to keep beside the new CA")
            }
        }
    }
    Ok(fresh)
}

/// With an externally managed caBundle, a serving certificate signed by a new CA is only
/// served once the external owner's caBundle (observed on the webhook configuration) contains
/// that CA; until then the current serving certificate stays. Returns the bundle to store.
async fn gate_ca_switch(
    client: &Client,
    cfg: &CertConfig,
    current: &CertBundle,
    mut next: CertBundle,
) -> Result<CertBundle> {
    if cfg.webhook.is_some() {
        return Ok(next);
    }
    let (cur_cert, next_cert) = (first(&current.cert_pem)?, first(&next.cert_pem)?);
    if cur_cert.issuer == next_cert.issuer {
        return Ok(next);
    }
    let observed = match &cfg.observe {
        Some(webhook) => match observed_ca_bundle(client.clone(), webhook).await {
            Ok(pem) => parse_certs(&pem).unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot observe the externally managed caBundle");
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    if observed.iter().any(|c| c.subject == next_cert.issuer) {
        return Ok(next);
    }
    tracing::warn!(
        webhook = ?cfg.observe,
        "CA rotation waits: the externally managed caBundle does not contain the new CA yet \
         (add ca-bundle.crt of the Secret to it); the current serving certificate stays"
    );
    next.cert_pem = current.cert_pem.clone();
    next.key_pem = current.key_pem.clone();
    Ok(next)
}

/// Load the shared certificates at time `now`, creating or refreshing them as needed (see the
/// module docs), for a replica that serves nothing yet (the tests' entry point; the server
/// reconciles through [`reconcile_with`]).
#[cfg(test)]
pub(crate) async fn bootstrap_at(
    client: Client,
    cfg: &CertConfig,
    now: OffsetDateTime,
) -> Result<CertBundle> {
    bootstrap_with(client, cfg, now, None).await
}

/// Load the shared certificates at `now` for a replica that serves `current` (if any): a deleted
/// or unusable Secret of ours is restored from `current` (so trust never changes), and a deleted
/// external Secret keeps `current` serving until its issuer recreates it.
///
/// Writes never replace the object: the Secret is created when absent, and otherwise only its
/// `data` keys of ours are changed with a JSON merge patch carrying the `resourceVersion` read
/// (a 409 means another replica won; start over). Its type, labels, annotations and other keys
/// are never touched. An externally issued Secret ([`is_external`]) is never written.
pub(crate) async fn bootstrap_with(
    client: Client,
    cfg: &CertConfig,
    now: OffsetDateTime,
    current: Option<&CertBundle>,
) -> Result<CertBundle> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &cfg.namespace);
    let own_current = current.filter(|b| !b.is_external());
    for _ in 0..MAX_ATTEMPTS {
        let existing = api
            .get_opt(&cfg.secret)
            .await
            .map_err(|e| named(e, "get", "secrets", &cfg.secret))?;
        let Some(existing) = existing else {
            if let Some(b) = current.filter(|b| b.is_external()) {
                tracing::warn!(secret = %cfg.secret, "the externally issued Secret is gone; \
                    serving the last certificate until its issuer recreates it");
                return Ok(b.clone());
            }
            let fresh = match own_current {
                Some(b) => {
                    tracing::warn!(secret = %cfg.secret, "certificate Secret deleted; restoring it");
                    b.refresh(&cfg.dns_names, now)?.unwrap_or_else(|| b.clone())
                }
                None => fresh_bundle(&client, cfg, now).await?,
            };
            match api
                .create(&PostParams::default(), &secret_object(cfg, &fresh, None))
                .await
            {
                Ok(_) => return Ok(fresh),
                // Another replica created it first: read and use the winner's.
                Err(e) if is_status(&e, 409) => continue,
                Err(e) => return Err(named(e, "create", "secrets", &cfg.secret)),
            }
        };
        if is_external(&existing) {
            return CertBundle::from_external_secret(&existing).map_err(|e| {
                invalid(format!(
                    "externally issued Secret {}/{} (used read-only): {e}",
                    cfg.namespace, cfg.secret
                ))
            });
        }
        let rv = existing.metadata.resource_version.clone();
        let next = match CertBundle::from_secret(&existing) {
            Ok(stored) => match stored.refresh(&cfg.dns_names, now)? {
                None => return Ok(stored),
                Some(next) => {
                    let next = gate_ca_switch(&client, cfg, &stored, next).await?;
                    if next == stored {
                        return Ok(stored);
                    }
                    next
                }
            },
            Err(e) => {
                tracing::warn!(secret = %cfg.secret, error = %e, "replacing unusable certificate data");
                match own_current {
                    Some(b) => b.refresh(&cfg.dns_names, now)?.unwrap_or_else(|| b.clone()),
                    None => fresh_bundle(&client, cfg, now).await?,
                }
            }
        };
        let patch = json!({
            "metadata": {"resourceVersion": rv},
            "data": serde_json::to_value(next.secret_data()).map_err(invalid)?,
        });
        match api
            .patch(&cfg.secret, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(next),
            // Another replica updated it first: start over from what it wrote.
            Err(e) if is_status(&e, 409) => continue,
            Err(e) => return Err(named(e, "patch", "secrets", &cfg.secret)),
        }
    }
    Err(CertError::Contended(cfg.secret.clone()))
}

/// Make every `*sidecar-injector.istio.io` entry of `webhook` carry `ca_bundle_pem`.
/// Returns whether a patch was sent (nothing is written when all entries are current).
pub(crate) async fn ensure_ca_bundle(
    client: Client,
    webhook: &str,
    ca_bundle_pem: &str,
) -> Result<bool> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let mwc = match api.get_opt(webhook).await {
        Ok(Some(mwc)) => mwc,
        Ok(None) => return Err(CertError::WebhookNotFound(webhook.to_string())),
        Err(e) => return Err(named(e, "get", "mutatingwebhookconfigurations", webhook)),
    };
    warn_if_istio_labelled(&mwc);
    let wanted = ByteString(ca_bundle_pem.as_bytes().to_vec());
    let entries: Vec<_> = mwc
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .filter(|w| w.name.ends_with(ENTRY_SUFFIX))
        .collect();
    if entries.is_empty() {
        return Err(CertError::NoWebhookEntry(webhook.to_string()));
    }
    if entries
        .iter()
        .all(|w| w.client_config.ca_bundle.as_ref() == Some(&wanted))
    {
        return Ok(false);
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(ca_bundle_pem);
    // Strategic merge: `webhooks` merges by name, so only the caBundle fields change.
    let patch: Value = json!({
        "webhooks": entries
            .iter()
            .map(|w| json!({"name": w.name, "clientConfig": {"caBundle": encoded}}))
            .collect::<Vec<_>>()
    });
    api.patch(webhook, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map_err(|e| named(e, "patch", "mutatingwebhookconfigurations", webhook))?;
    Ok(true)
}

/// One reconciliation: bootstrap/refresh the Secret, then (unless managed externally) sync the
/// webhook's caBundle.
pub(crate) async fn reconcile_at(
    client: Client,
    cfg: &CertConfig,
    now: OffsetDateTime,
) -> Result<CertBundle> {
    reconcile_with(client, cfg, now, None).await
}

/// [`reconcile_at`] for a replica serving `current` (see [`bootstrap_with`]).
pub(crate) async fn reconcile_with(
    client: Client,
    cfg: &CertConfig,
    now: OffsetDateTime,
    current: Option<&CertBundle>,
) -> Result<CertBundle> {
    let bundle = bootstrap_with(client.clone(), cfg, now, current).await?;
    if let Some(webhook) = &cfg.webhook {
        if bundle.ca_bundle_pem.is_empty() {
            return Err(invalid(format!(
                "the externally issued Secret {}/{} has no {CA_CERT_KEY:?} to put in the caBundle \
                 of {webhook:?}: add it, or pass --ca-bundle-managed-externally",
                cfg.namespace, cfg.secret
            )));
        }
        if ensure_ca_bundle(client, webhook, &bundle.ca_bundle_pem).await? {
            tracing::info!(webhook = %webhook, "patched caBundle");
        }
    }
    Ok(bundle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certs::bundle::{Plan, CLOCK_SKEW, ROTATION_GRACE};
    use crate::certs::service_dns_names;
    use crate::certs::testutil::*;
    use crate::mock;
    use crate::pki::cert_blocks;
    use http::Method;
    use time::Duration;

    #[test]
    fn secret_data_round_trips_and_bad_data_is_rejected() {
        let names = service_dns_names("ns", "svc");
        let b = CertBundle::generate(&names, now()).expect("generate");
        let round =
            CertBundle::from_secret(&secret_object(&cfg(None), &b, None)).expect("round trip");
        assert_eq!(round, b);
        let mut broken = secret_object(&cfg(None), &b, None);
        if let Some(d) = broken.data.as_mut() {
            d.insert(TLS_CERT_KEY.into(), ByteString(b"garbage".to_vec()));
        }
        let err = CertBundle::from_secret(&broken).expect_err("garbage certificate");
        assert!(err.to_string().contains("no PEM CERTIFICATE"), "{err}");
    }

    #[tokio::test]
    async fn first_replica_creates_the_secret() {
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { bootstrap_at(client, &cfg(None), now()).await });
        let req = mock::next(&mut handle).await;
        req.assert(Method::GET, SECRET_PATH);
        req.respond(404, mock::not_found("secrets", "outrigger-tls"));
        let req = mock::next(&mut handle).await;
        req.assert(Method::POST, SECRETS_PATH);
        let sent = bundle_of(&req.body);
        assert_eq!(req.body["metadata"]["name"], "outrigger-tls");
        assert!(req.body["metadata"].get("resourceVersion").is_none());
        let echo = req.body.clone();
        req.respond(201, echo);
        let got = task.await.expect("task").expect("bootstrap");
        assert_eq!(got, sent);
    }

    #[tokio::test]
    async fn secret_race_between_two_replicas_uses_the_winners_bundle() {
        let (client_a, mut handle_a) = mock::client();
        let (client_b, mut handle_b) = mock::client();
        let a = tokio::spawn(async move { bootstrap_at(client_a, &cfg(None), now()).await });
        let b = tokio::spawn(async move { bootstrap_at(client_b, &cfg(None), now()).await });
        // Both find no Secret.
        let ga = mock::next(&mut handle_a).await;
        ga.assert(Method::GET, SECRET_PATH);
        let gb = mock::next(&mut handle_b).await;
        gb.assert(Method::GET, SECRET_PATH);
        ga.respond(404, mock::not_found("secrets", "outrigger-tls"));
        gb.respond(404, mock::not_found("secrets", "outrigger-tls"));
        // Both try to create; A wins, B gets 409 AlreadyExists.
        let ca = mock::next(&mut handle_a).await;
        ca.assert(Method::POST, SECRETS_PATH);
        let cb = mock::next(&mut handle_b).await;
        cb.assert(Method::POST, SECRETS_PATH);
        let winner = bundle_of(&ca.body);
        let loser_attempt = bundle_of(&cb.body);
        assert_ne!(winner, loser_attempt, "each replica generated its own keys");
        let stored = ca.body.clone();
        ca.respond(201, stored.clone());
        cb.respond(409, mock::already_exists("secrets", "outrigger-tls"));
        // B reads the winner's Secret and uses it unchanged (no further write).
        let rb = mock::next(&mut handle_b).await;
        rb.assert(Method::GET, SECRET_PATH);
        rb.respond(200, secret_json(&winner, "7"));
        assert_eq!(a.await.expect("task").expect("A"), winner);
        assert_eq!(b.await.expect("task").expect("B"), winner);
        mock::assert_no_request(&mut handle_b).await;
    }

    #[tokio::test]
    async fn rotation_writes_with_resource_version_and_retries_on_conflict() {
        let names = cfg(None).dns_names;
        let renewed = now() + Duration::days(2400);
        let old = CertBundle::generate(&names, now())
            .and_then(|b| b.apply(Plan::ReissueServing, &names, renewed))
            .expect("generate");
        let later = now() + Duration::days(2440);
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { bootstrap_at(client, &cfg(None), later).await });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, SECRET_PATH);
        r.respond(200, secret_json(&old, "41"));
        let put = mock::next(&mut handle).await;
        put.assert(Method::PATCH, SECRET_PATH);
        assert_eq!(
            put.content_type.as_deref(),
            Some("application/merge-patch+json")
        );
        assert_eq!(put.body["metadata"]["resourceVersion"], "41");
        assert!(
            put.body.get("type").is_none() && put.body["metadata"].get("labels").is_none(),
            "only data and the precondition are sent: {}",
            put.body
        );
        let first_try = bundle_from_data(&put.body);
        assert_eq!(
            parse_certs(&first_try.ca_bundle_pem).expect("bundle").len(),
            2,
            "overlapping bundle"
        );
        assert_eq!(first_try.cert_pem, old.cert_pem);
        // Another replica rotated meanwhile: conflict, re-read, and its result is current.
        put.respond(409, mock::conflict("secrets", "outrigger-tls"));
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, SECRET_PATH);
        let theirs = old.apply(Plan::RotateCa, &names, later).expect("rotate");
        r.respond(200, secret_json(&theirs, "42"));
        assert_eq!(task.await.expect("task").expect("bootstrap"), theirs);
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn ca_bundle_patch_touches_only_injector_entries() {
        let pem = CertBundle::generate(&["x".into()], now())
            .expect("generate")
            .ca_bundle_pem;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&pem);
        let (client, mut handle) = mock::client();
        let p = pem.clone();
        let task = tokio::spawn(async move {
            ensure_ca_bundle(client, "outrigger-sidecar-injector", &p).await
        });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        r.respond(200, mwc_json(Some(&encoded)));
        let patch = mock::next(&mut handle).await;
        patch.assert(Method::PATCH, &format!("{MWC_PATH}?"));
        assert_eq!(
            patch.content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        assert_eq!(
            patch.body,
            json!({"webhooks": [
                {"name": "rev.namespace.sidecar-injector.istio.io", "clientConfig": {"caBundle": encoded}},
                {"name": "namespace.sidecar-injector.istio.io", "clientConfig": {"caBundle": encoded}},
            ]})
        );
        patch.respond(200, mwc_json(Some(&encoded)));
        assert!(task.await.expect("task").expect("patched"));
    }

    #[tokio::test]
    async fn ca_bundle_in_sync_means_no_write() {
        let pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
        let encoded = base64::engine::general_purpose::STANDARD.encode(pem);
        let mut current = mwc_json(Some(&encoded));
        current["webhooks"][1]["clientConfig"]["caBundle"] = json!(encoded);
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            ensure_ca_bundle(client, "outrigger-sidecar-injector", pem).await
        });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        r.respond(200, current);
        assert!(!task.await.expect("task").expect("in sync"));
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn missing_injector_entries_are_an_error() {
        let mut mwc = mwc_json(None);
        mwc["webhooks"] = json!([{"name": "other.example.com", "clientConfig": {}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]);
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            ensure_ca_bundle(client, "outrigger-sidecar-injector", "x").await
        });
        let r = mock::next(&mut handle).await;
        r.respond(200, mwc);
        let err = task.await.expect("task").expect_err("no entry");
        assert!(matches!(err, CertError::NoWebhookEntry(_)), "{err}");
    }

    /// A Secret as cert-manager writes it: type kubernetes.io/tls, its annotations, no CA key.
    fn cert_manager_secret(b: &CertBundle, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "outrigger-tls", "namespace": "outrigger", "resourceVersion": rv,
                "labels": {"controller.cert-manager.io/fao": "true"},
                "annotations": {"cert-manager.io/issuer-name": "ca-issuer",
                                "cert-manager.io/certificate-name": "outrigger"}},
            "data": {
                "tls.crt": base64::engine::general_purpose::STANDARD.encode(&b.cert_pem),
                "tls.key": base64::engine::general_purpose::STANDARD.encode(&b.key_pem),
                "ca.crt": base64::engine::general_purpose::STANDARD.encode(&b.ca_cert_pem)}})
    }

    #[test]
    fn external_secrets_are_recognised() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let cm: Secret = serde_json::from_value(cert_manager_secret(&b, "1")).expect("secret");
        assert!(is_external(&cm));
        let ours = secret_object(&cfg(None), &b, None);
        assert!(!is_external(&ours));
        let mut kubectl_tls = ours.clone();
        kubectl_tls.type_ = Some(TLS_SECRET_TYPE.into());
        if let Some(d) = kubectl_tls.data.as_mut() {
            d.remove(CA_KEY_KEY);
            d.remove(CA_BUNDLE_KEY);
        }
        assert!(is_external(&kubectl_tls));
        let empty = Secret::default();
        assert!(!is_external(&empty), "an empty Secret is filled in by us");
        let read = CertBundle::from_external_secret(&cm).expect("usable");
        assert!(read.is_external());
        assert_eq!(read.cert_pem, b.cert_pem);
        assert_eq!(read.ca_bundle_pem, b.ca_cert_pem);
    }

    #[tokio::test]
    async fn a_cert_manager_secret_is_used_read_only() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            reconcile_at(client, &cfg(Some("outrigger-sidecar-injector")), now()).await
        });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, SECRET_PATH);
        r.respond(200, cert_manager_secret(&b, "12"));
        // Never written; only the caBundle is synced from its ca.crt.
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        r.respond(200, mwc_json(None));
        let patch = mock::next(&mut handle).await;
        patch.assert(Method::PATCH, &format!("{MWC_PATH}?"));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&b.ca_cert_pem);
        assert_eq!(
            patch.body["webhooks"][0]["clientConfig"]["caBundle"],
            json!(encoded)
        );
        patch.respond(200, mwc_json(Some(&encoded)));
        let got = task.await.expect("task").expect("reconcile");
        assert!(got.is_external());
        assert_eq!((got.cert_pem, got.key_pem), (b.cert_pem, b.key_pem));
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn an_external_secret_without_ca_crt_needs_an_external_ca_bundle() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let mut s = cert_manager_secret(&b, "12");
        if let Some(d) = s["data"].as_object_mut() {
            d.remove("ca.crt");
        }
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            reconcile_at(client, &cfg(Some("outrigger-sidecar-injector")), now()).await
        });
        mock::next(&mut handle).await.respond(200, s);
        let err = task.await.expect("task").expect_err("no ca.crt");
        assert!(
            err.to_string().contains("--ca-bundle-managed-externally"),
            "{err}"
        );
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn unusable_secret_data_is_patched_keeping_the_webhooks_ca() {
        let old = CertBundle::generate(&["old".into()], now()).expect("generate");
        let mut broken = secret_json(&old, "9");
        broken["data"]["tls.crt"] = json!("Z2FyYmFnZQ==");
        broken["metadata"]["annotations"] = json!({"argocd.argoproj.io/tracking-id": "x"});
        let old_encoded = base64::engine::general_purpose::STANDARD.encode(&old.ca_bundle_pem);
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            reconcile_at(client, &cfg(Some("outrigger-sidecar-injector")), now()).await
        });
        mock::next(&mut handle).await.respond(200, broken);
        // The caBundle in use is read so its CA stays trusted beside the new one.
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        r.respond(200, mwc_json(Some(&old_encoded)));
        let patch = mock::next(&mut handle).await;
        patch.assert(Method::PATCH, SECRET_PATH);
        assert_eq!(
            patch.content_type.as_deref(),
            Some("application/merge-patch+json")
        );
        assert_eq!(
            patch
                .body
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["metadata".to_string(), "data".to_string()]),
            "type, labels and annotations are never sent"
        );
        assert_eq!(patch.body["metadata"], json!({"resourceVersion": "9"}));
        let stored = bundle_from_data(&patch.body);
        let trusted: Vec<Vec<u8>> = parse_certs(&stored.ca_bundle_pem)
            .expect("bundle")
            .into_iter()
            .map(|c| c.subject)
            .collect();
        let old_ca = first(&old.ca_cert_pem).expect("old CA").subject;
        let new_ca = first(&stored.ca_cert_pem).expect("new CA").subject;
        assert_eq!(trusted, vec![new_ca, old_ca]);
        patch.respond(200, json!({}));
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        r.respond(200, mwc_json(Some(&old_encoded)));
        let r = mock::next(&mut handle).await;
        r.assert(Method::PATCH, &format!("{MWC_PATH}?"));
        r.respond(200, json!({}));
        assert_eq!(task.await.expect("task").expect("reconcile"), stored);
    }

    #[tokio::test]
    async fn a_deleted_secret_is_restored_from_memory() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let (client, mut handle) = mock::client();
        let current = b.clone();
        let task =
            tokio::spawn(
                async move { bootstrap_with(client, &cfg(None), now(), Some(&current)).await },
            );
        let r = mock::next(&mut handle).await;
        r.respond(404, mock::not_found("secrets", "outrigger-tls"));
        let r = mock::next(&mut handle).await;
        r.assert(Method::POST, SECRETS_PATH);
        assert_eq!(
            bundle_of(&r.body),
            b,
            "same CA and serving certificate: trust unchanged"
        );
        let echo = r.body.clone();
        r.respond(201, echo);
        assert_eq!(task.await.expect("task").expect("restored"), b);
    }

    #[tokio::test]
    async fn rbac_denial_on_the_secret_is_named() {
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { bootstrap_at(client, &cfg(None), now()).await });
        mock::next(&mut handle).await.respond(
            403,
            mock::forbidden("get", "secrets", "outrigger-tls", Some("outrigger")),
        );
        let err = task.await.expect("task").expect_err("forbidden");
        assert!(
            err.to_string()
                .starts_with("forbidden to get secrets \"outrigger-tls\""),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_refused_type_change_is_reported_not_retried() {
        // The API server refuses to change a Secret's type (422); such an error is final.
        let old = CertBundle::generate(&["old".into()], now()).expect("generate");
        let mut broken = secret_json(&old, "9");
        broken["data"]["tls.crt"] = json!("Z2FyYmFnZQ==");
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { bootstrap_at(client, &cfg(None), now()).await });
        mock::next(&mut handle).await.respond(200, broken);
        let patch = mock::next(&mut handle).await;
        patch.respond(
            422,
            mock::invalid("secrets", "outrigger-tls", "type", "\"Opaque\""),
        );
        let err = task.await.expect("task").expect_err("422");
        assert!(err.to_string().contains("field is immutable"), "{err}");
        mock::assert_no_request(&mut handle).await;
    }

    /// A bundle whose CA was rotated more than the grace period ago while the serving
    /// certificate is still the old CA's: the next plan switches the serving certificate.
    fn rotated_bundle() -> (CertBundle, OffsetDateTime) {
        let names = cfg(None).dns_names;
        let renewed = now() + Duration::days(2400);
        let at = now() + Duration::days(2440);
        let b = CertBundle::generate(&names, now())
            .and_then(|b| b.apply(Plan::ReissueServing, &names, renewed))
            .and_then(|b| b.apply(Plan::RotateCa, &names, at))
            .expect("rotated");
        (b, at + ROTATION_GRACE + CLOCK_SKEW + Duration::minutes(1))
    }

    fn external_cfg() -> CertConfig {
        CertConfig {
            observe: Some("outrigger-sidecar-injector".into()),
            ..cfg(None)
        }
    }

    #[tokio::test]
    async fn externally_managed_bundle_switches_ca_only_once_observed() {
        let (b, later) = rotated_bundle();
        assert_eq!(
            b.plan(&cfg(None).dns_names, later).expect("plan"),
            Plan::ReissueServing
        );
        let old_only = cert_blocks(&b.ca_bundle_pem)
            .into_iter()
            .skip(1)
            .collect::<String>();
        // The external owner still has only the old CA: nothing changes, nothing is written.
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { reconcile_at(client, &external_cfg(), later).await });
        mock::next(&mut handle)
            .await
            .respond(200, secret_json(&b, "20"));
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        let encoded = base64::engine::general_purpose::STANDARD.encode(&old_only);
        r.respond(200, mwc_json(Some(&encoded)));
        assert_eq!(task.await.expect("task").expect("waits"), b);
        mock::assert_no_request(&mut handle).await;
        // Once its caBundle holds the new CA, the serving certificate moves to it.
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { reconcile_at(client, &external_cfg(), later).await });
        mock::next(&mut handle)
            .await
            .respond(200, secret_json(&b, "20"));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&b.ca_bundle_pem);
        mock::next(&mut handle)
            .await
            .respond(200, mwc_json(Some(&encoded)));
        let patch = mock::next(&mut handle).await;
        patch.assert(Method::PATCH, SECRET_PATH);
        let stored = bundle_from_data(&patch.body);
        assert_eq!(
            first(&stored.cert_pem).expect("cert").issuer,
            first(&b.ca_cert_pem).expect("CA").subject
        );
        patch.respond(200, json!({}));
        assert_eq!(task.await.expect("task").expect("switched"), stored);
    }

    #[tokio::test]
    async fn a_missing_webhook_configuration_names_the_mismatch() {
        let (client, mut handle) = mock::client();
        let task =
            tokio::spawn(
                async move { ensure_ca_bundle(client, "istio-sidecar-injector", "x").await },
            );
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::GET,
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/istio-sidecar-injector",
        );
        r.respond(
            404,
            mock::not_found("mutatingwebhookconfigurations", "istio-sidecar-injector"),
        );
        let err = task.await.expect("task").expect_err("not found");
        assert_eq!(
            err.to_string(),
            "MutatingWebhookConfiguration \"istio-sidecar-injector\" not found: generate it with \
             `outrigger webhook-config --name istio-sidecar-injector` or pass --webhook-config-name"
        );
    }

    #[tokio::test]
    async fn rbac_denial_on_the_webhook_is_named() {
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            ensure_ca_bundle(client, "outrigger-sidecar-injector", "x").await
        });
        let r = mock::next(&mut handle).await;
        r.respond(
            403,
            mock::forbidden(
                "get",
                "mutatingwebhookconfigurations",
                "outrigger-sidecar-injector",
                None,
            ),
        );
        let err = task.await.expect("task").expect_err("forbidden");
        let msg = err.to_string();
        assert!(
            msg.starts_with(
                "forbidden to get mutatingwebhookconfigurations \"outrigger-sidecar-injector\""
            ),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn externally_managed_bundle_never_touches_the_webhook() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { reconcile_at(client, &cfg(None), now()).await });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, SECRET_PATH);
        r.respond(200, secret_json(&b, "3"));
        assert_eq!(task.await.expect("task").expect("reconcile"), b);
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn managed_bundle_is_patched_after_bootstrap() {
        let b = CertBundle::generate(&cfg(None).dns_names, now()).expect("generate");
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            reconcile_at(client, &cfg(Some("outrigger-sidecar-injector")), now()).await
        });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, SECRET_PATH);
        r.respond(200, secret_json(&b, "3"));
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, MWC_PATH);
        r.respond(200, mwc_json(None));
        let patch = mock::next(&mut handle).await;
        patch.assert(Method::PATCH, &format!("{MWC_PATH}?"));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&b.ca_bundle_pem);
        assert_eq!(
            patch.body["webhooks"][0]["clientConfig"]["caBundle"],
            json!(encoded)
        );
        patch.respond(200, mwc_json(Some(&encoded)));
        assert_eq!(task.await.expect("task").expect("reconcile"), b);
    }
}
