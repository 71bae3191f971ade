//! One entry point for `serve --kube`: the settings ([`KubeSettings`], from serve's flags) and
//! [`start`], which bootstraps the certificates synchronously and spawns the
//! background tasks (certificate rotation and caBundle sync, ConfigMap watch, node and namespace
//! caches), handing back what the server reads per request.

use ::kube::Client;
use anyhow::{Context, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::NativeMode;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::certs::{self, CertBundle, CertConfig};
use super::config_watch::{self, ConfigEvent, ConfigMapRef};
use super::events::EventRecorder;
use super::namespaces::NamespaceCache;
use super::nodes::NodeCache;

/// What `serve --kube`'s flags say to the runtime (the binary's `KubeArgs` converts to it).
#[derive(Debug, Clone, Default)]
pub struct KubeSettings {
    /// Secret (in the injector's namespace) holding the shared CA and serving certificate.
    pub tls_secret: String,
    /// MutatingWebhookConfiguration whose caBundle is kept in sync.
    pub webhook_config_name: String,
    /// Never write the webhook configuration (only observe its caBundle).
    pub ca_bundle_managed_externally: bool,
    /// Read Istio's own ConfigMaps (revision-aware names in [`KubeSettings::istio_namespace`]).
    pub istio_configmaps: bool,
    /// With [`KubeSettings::istio_configmaps`]: the namespace of Istio's ConfigMaps.
    pub istio_namespace: String,
    /// The Istio control-plane revision served (`default`: none).
    pub revision: String,
    /// Injector ConfigMap to watch, NAMESPACE/NAME.
    pub inject_config_map: Option<String>,
    /// Mesh ConfigMap to watch, NAMESPACE/NAME.
    pub mesh_config_map: Option<String>,
    /// Record a Kubernetes Event for every injection and skip.
    pub events: bool,
}

/// Everything [`start`] needs besides the settings.
#[derive(Debug, Clone)]
pub struct KubeContext {
    /// The injector's namespace (POD_NAMESPACE).
    pub namespace: String,
    /// The injector's Service name (certificate DNS names).
    pub service: String,
    /// Extra DNS names for the serving certificate.
    pub extra_dns_names: Vec<String>,
    /// The injector pod's name (Event reporting instance).
    pub pod_name: Option<String>,
    /// `ENABLE_NATIVE_SIDECARS` mode.
    pub native_mode: NativeMode,
    /// `PLATFORM=openshift`.
    pub openshift: bool,
    /// Bootstrap, rotate and publish the certificates through the Secret (false when the
    /// server has certificate files of its own).
    pub manage_certs: bool,
}

/// What the server uses while running.
pub struct KubeServices {
    /// Current certificates (with [`KubeContext::manage_certs`]); changes when rotation happens
    /// (reload TLS from it).
    pub certs: Option<watch::Receiver<CertBundle>>,
    /// Node facts for the native-sidecar decision.
    pub native: NodeCache,
    /// Namespace cache (OpenShift only).
    pub namespaces: Option<NamespaceCache>,
    /// Event recorder (with `--events`).
    pub events: Option<EventRecorder>,
    /// Configuration updates (with `--injectConfigMap`): swap in each `Loaded` snapshot.
    pub config: Option<BoxStream<'static, ConfigEvent<Snapshot>>>,
    /// Background tasks (abort them on shutdown).
    pub tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for KubeServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeServices")
            .field("native", &self.native)
            .field("namespaces", &self.namespaces)
            .field("config", &self.config.is_some())
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

/// The certificate settings from the flags.
pub(crate) fn cert_config(args: &KubeSettings, ctx: &KubeContext) -> CertConfig {
    let mut dns_names = certs::service_dns_names(&ctx.namespace, &ctx.service);
    dns_names.extend(ctx.extra_dns_names.iter().cloned());
    CertConfig {
        namespace: ctx.namespace.clone(),
        secret: args.tls_secret.clone(),
        dns_names,
        webhook: (!args.ca_bundle_managed_externally).then(|| args.webhook_config_name.clone()),
        observe: args
            .ca_bundle_managed_externally
            .then(|| args.webhook_config_name.clone()),
    }
}

/// Where `serve --kube` reads its configuration from the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSources {
    /// The injector ConfigMap (keys `config` and `values`).
    pub inject: ConfigMapRef,
    /// The mesh ConfigMap (key `mesh`).
    pub mesh: Option<ConfigMapRef>,
    /// A missing mesh ConfigMap keeps the server waiting (`--istio-configmaps`) instead of
    /// meaning Istio's mesh defaults (`--injectConfigMap` alone).
    pub mesh_required: bool,
}

impl ConfigSources {
    /// The ConfigMaps, for messages: `ns/a and ns/b`.
    pub fn describe(&self) -> String {
        let one = |r: &ConfigMapRef| format!("{}/{}", r.namespace, r.name);
        match &self.mesh {
            Some(m) => format!("{} and {}", one(&self.inject), one(m)),
            None => one(&self.inject),
        }
    }
}

/// The ConfigMaps the flags name: Istio's own (`--istio-configmaps`, revision-aware, as
/// istioctl names them), or `--injectConfigMap` / `--meshConfigMap`; `None` without either
/// (the mounted files or the embedded default are used).
pub fn config_sources(args: &KubeSettings) -> Result<Option<ConfigSources>> {
    use super::inject_source::{DEFAULT_INJECT_CONFIG_MAP, DEFAULT_MESH_CONFIG_MAP};
    if args.istio_configmaps {
        use crate::webhook_object::is_dns1123_label;
        if !is_dns1123_label(&args.istio_namespace) {
            anyhow::bail!(
                "--istioNamespace {:?}: not a namespace name (a DNS-1123 label)",
                args.istio_namespace
            );
        }
        if !args.revision.is_empty() && !is_dns1123_label(&args.revision) {
            anyhow::bail!(
                "--revision {:?}: not a revision name (a DNS-1123 label, as Istio requires)",
                args.revision
            );
        }
        let named = |default: &str| ConfigMapRef {
            namespace: args.istio_namespace.clone(),
            name: super::inject_source::configmap_name(default, default, &args.revision),
        };
        return Ok(Some(ConfigSources {
            inject: named(DEFAULT_INJECT_CONFIG_MAP),
            mesh: Some(named(DEFAULT_MESH_CONFIG_MAP)),
            mesh_required: true,
        }));
    }
    let Some(r) = &args.inject_config_map else {
        return Ok(None);
    };
    let inject = ConfigMapRef::parse(r).context("--injectConfigMap")?;
    let mesh = args
        .mesh_config_map
        .as_deref()
        .map(ConfigMapRef::parse)
        .transpose()
        .context("--meshConfigMap")?;
    Ok(Some(ConfigSources {
        inject,
        mesh,
        mesh_required: false,
    }))
}

/// With [`KubeContext::manage_certs`], bootstrap the certificates (and the caBundle unless
/// managed externally); then start the background tasks. Fails when the first certificate
/// bootstrap fails; the server should not start without a certificate.
pub async fn start(client: Client, args: &KubeSettings, ctx: &KubeContext) -> Result<KubeServices> {
    let mut tasks = Vec::new();
    let certs_rx = if ctx.manage_certs {
        let cfg = cert_config(args, ctx);
        let bundle = certs::reconcile_at(client.clone(), &cfg, time::OffsetDateTime::now_utc())
            .await
            .context("bootstrapping the serving certificate")?;
        let (tx, certs_rx) = watch::channel(bundle);
        // The Secret and the webhook configuration are watched; the timer only drives
        // time-based renewal (a rotation step is due at most once per hour).
        let (interval, retry) = (
            std::time::Duration::from_secs(3600),
            std::time::Duration::from_secs(10),
        );
        tasks.push(tokio::spawn(certs::run(
            client.clone(),
            cfg,
            tx,
            interval,
            retry,
        )));
        Some(certs_rx)
    } else {
        None
    };
    let (native, node_watch) = NodeCache::start(client.clone(), ctx.native_mode);
    tasks.push(tokio::spawn(node_watch));
    let namespaces = if ctx.openshift {
        let (cache, run) = NamespaceCache::start(client.clone());
        tasks.push(tokio::spawn(run));
        Some(cache)
    } else {
        None
    };
    let events = args
        .events
        .then(|| EventRecorder::new(client.clone(), ctx.pod_name.clone()));
    let config = config_sources(args)?
        .map(|s| config_watch::snapshots(client, s.inject, s.mesh, s.mesh_required).boxed());
    Ok(KubeServices {
        certs: certs_rx,
        native,
        namespaces,
        events,
        config,
        tasks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;
    use serde_json::json;

    fn ctx(native_mode: NativeMode, openshift: bool) -> KubeContext {
        KubeContext {
            namespace: "outrigger".into(),
            service: "outrigger".into(),
            extra_dns_names: vec!["injector.example".into()],
            pod_name: Some("outrigger-0".into()),
            native_mode,
            openshift,
            manage_certs: true,
        }
    }

    #[test]
    fn flags_map_to_certificate_settings() {
        let args = KubeSettings {
            tls_secret: "s".into(),
            webhook_config_name: "w".into(),
            ..KubeSettings::default()
        };
        let c = cert_config(&args, &ctx(NativeMode::Auto, false));
        assert_eq!(c.webhook.as_deref(), Some("w"));
        assert!(c.dns_names.contains(&"outrigger.outrigger.svc".to_string()));
        assert_eq!(
            c.dns_names.last().map(String::as_str),
            Some("injector.example")
        );
        let external = KubeSettings {
            ca_bundle_managed_externally: true,
            ..args
        };
        assert_eq!(
            cert_config(&external, &ctx(NativeMode::Auto, false)).webhook,
            None
        );
    }

    #[tokio::test]
    async fn minimal_start_touches_only_the_secret() {
        let (client, mut handle) = mock::client();
        let args = KubeSettings {
            tls_secret: "outrigger-tls".into(),
            ca_bundle_managed_externally: true,
            ..KubeSettings::default()
        };
        let task =
            tokio::spawn(
                async move { start(client, &args, &ctx(NativeMode::Disabled, false)).await },
            );
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::GET,
            "/api/v1/namespaces/outrigger/secrets/outrigger-tls",
        );
        r.respond(404, mock::not_found("secrets", "outrigger-tls"));
        let r = mock::next(&mut handle).await;
        r.assert(Method::POST, "/api/v1/namespaces/outrigger/secrets?");
        let echo = r.body.clone();
        r.respond(201, echo);
        let services = task.await.expect("task").expect("started");
        assert!(
            services.events.is_none() && services.namespaces.is_none() && services.config.is_none()
        );
        use outrigger_inject::decide::native::ClusterFacts as _;
        assert!(!services.native.has_nodes(), "disabled mode: no node watch");
        // The rotation loop re-reads the Secret once at start; nothing else is requested.
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::GET,
            "/api/v1/namespaces/outrigger/secrets/outrigger-tls",
        );
        for t in services.tasks {
            t.abort();
        }
    }

    #[tokio::test]
    async fn start_with_certificate_files_leaves_the_secret_alone() {
        let (client, mut handle) = mock::client();
        let args = KubeSettings::default();
        let c = KubeContext {
            manage_certs: false,
            ..ctx(NativeMode::Disabled, false)
        };
        let services = start(client, &args, &c).await.expect("started");
        assert!(services.certs.is_none());
        assert_eq!(
            services.tasks.len(),
            1,
            "only the (idle, mode disabled) node watch, no rotation: {services:?}"
        );
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn full_start_watches_nodes_namespaces_and_configmaps() {
        let (client, mut handle) = mock::client();
        let args = KubeSettings {
            tls_secret: "outrigger-tls".into(),
            webhook_config_name: "outrigger-sidecar-injector".into(),
            inject_config_map: Some("istio-system/istio-sidecar-injector".into()),
            events: true,
            ..KubeSettings::default()
        };
        let names = cert_config(&args, &ctx(NativeMode::Auto, true)).dns_names;
        let bundle =
            CertBundle::generate(&names, time::OffsetDateTime::now_utc()).expect("generate");
        let task =
            tokio::spawn(async move { start(client, &args, &ctx(NativeMode::Auto, true)).await });
        let mut seen: Vec<String> = Vec::new();
        let done = |seen: &[String]| {
            seen.iter().any(|s| s == "GET /api/v1/nodes")
                && seen.iter().any(|s| s == "GET /api/v1/namespaces")
        };
        for _ in 0..40 {
            if done(&seen) {
                break;
            }
            let Ok(Some((req, send))) =
                tokio::time::timeout(std::time::Duration::from_secs(5), handle.next_request())
                    .await
            else {
                break;
            };
            let uri = req.uri().to_string();
            let path = req.uri().path().to_string();
            if uri.contains("watch=true") {
                seen.push(format!("WATCH {path}"));
                continue; // leave watches open (dropping the responder ends them with an error)
            }
            seen.push(format!("{} {path}", req.method()));
            let body = match (req.method().clone(), path.as_str()) {
                (Method::GET, "/api/v1/namespaces/outrigger/secrets/outrigger-tls") => {
                    let mut s = serde_json::to_value(k8s_openapi::api::core::v1::Secret {
                        data: Some(bundle.secret_data()),
                        ..Default::default()
                    })
                    .expect("secret");
                    s["metadata"] = json!({"name": "outrigger-tls", "resourceVersion": "1"});
                    s
                }
                (Method::GET, p)
                    if p.ends_with("mutatingwebhookconfigurations/outrigger-sidecar-injector") =>
                {
                    let encoded = base64::Engine::encode(
                        &base64::engine::general_purpose::STANDARD,
                        &bundle.ca_bundle_pem,
                    );
                    json!({"metadata": {"name": "outrigger-sidecar-injector"}, "webhooks": [
                        {"name": "namespace.sidecar-injector.istio.io", "clientConfig": {"caBundle": encoded},
                         "sideEffects": "None", "admissionReviewVersions": ["v1"]}]})
                }
                (Method::GET, p) => {
                    json!({"metadata": {"resourceVersion": "1"}, "items": [], "apiVersion": "v1",
                                           "kind": if p.contains("nodes") { "NodeList" } else { "List" }})
                }
                (m, p) => panic!("unexpected request {m} {p}"),
            };
            let bytes = serde_json::to_vec(&body).expect("encode");
            send.send_response(
                http::Response::builder()
                    .status(200)
                    .body(::kube::client::Body::from(bytes))
                    .expect("response"),
            );
        }
        assert!(done(&seen), "node and namespace caches listed: {seen:?}");
        let services = task.await.expect("task").expect("started");
        assert!(
            seen.contains(&"GET /api/v1/namespaces/outrigger/secrets/outrigger-tls".to_string()),
            "{seen:?}"
        );
        assert!(
            seen.iter()
                .any(|s| s.ends_with("mutatingwebhookconfigurations/outrigger-sidecar-injector")),
            "caBundle checked at start: {seen:?}"
        );
        assert!(services.events.is_some());
        assert!(services.namespaces.is_some());
        assert!(
            services.config.is_some(),
            "config stream returned (lazy until polled)"
        );
        assert!(
            !seen.iter().any(|s| s.contains("PATCH")),
            "caBundle already current: {seen:?}"
        );
        assert_eq!(
            services.tasks.len(),
            3,
            "rotation, node watch, namespace watch"
        );
        for t in services.tasks {
            t.abort();
        }
    }
}
