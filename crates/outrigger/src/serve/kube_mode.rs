//! `serve --kube`: connect to the API server, start the kube-rs services
//! ([`crate::kube::runtime::start`]) and feed what they produce into the running server:
//! certificate rotations into the TLS resolver, ConfigMap snapshots into the configuration swap,
//! the node and namespace caches and the Event recorder into the admission handler.

use std::sync::Arc;
use std::time::Duration;

use ::kube::Client;
use anyhow::{anyhow, bail, Context, Result};
use futures::{Stream, StreamExt};
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::NativeMode;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::cluster::{EventSink, KubeEvents, KubeFacts, SharedFacts};
use super::handler::State;
use super::{tls, ServeArgs};
use crate::cli::common::KubeArgs;
use crate::kube::certs::CertBundle;
use crate::kube::config_watch::ConfigEvent;
use crate::kube::runtime::{self, KubeContext, KubeServices};

/// How long start-up waits for the API server (version check, certificate bootstrap, first
/// ConfigMap read) before giving up.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a replica checks that the webhook configuration is still activated.
pub const ACTIVATION_PERIOD: Duration = Duration::from_secs(30);

/// The running Kubernetes integration.
pub struct Cluster {
    /// What [`runtime::start`] returned (the config stream is taken by [`Cluster::first_config`]).
    pub services: KubeServices,
    /// `--injectConfigMap` (for log lines).
    source: String,
    /// Tasks spawned here (certificate and configuration updates).
    tasks: Vec<JoinHandle<()>>,
    /// The API client (for the tasks spawned once serving).
    client: Client,
    /// What a ready replica makes true of the webhook configuration (`None`: nothing).
    activation: Option<crate::kube::activation::Activation>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("services", &self.services)
            .field("source", &self.source)
            .field("tasks", &self.tasks.len())
            .field("activation", &self.activation)
            .finish_non_exhaustive()
    }
}

/// Flags that only make sense with `--kube` are refused without it (instead of being ignored).
pub fn reject_kube_only_flags(k: &KubeArgs) -> Result<()> {
    let set = [
        ("--istio-configmaps", k.istio_configmaps),
        ("--injectConfigMap", k.inject_config_map.is_some()),
        ("--meshConfigMap", k.mesh_config_map.is_some()),
        ("--events", k.events),
        (
            "--failure-policy-once-ready",
            k.failure_policy_once_ready.is_some(),
        ),
        ("--webhook-owned-by-namespace", k.webhook_owned_by_namespace),
        (
            "--fail-open-without-deployment",
            k.fail_open_without_deployment.is_some(),
        ),
        ("--detect-overlaps", k.detect_overlaps),
        ("--probe-interval", k.probe_interval.is_some()),
        (
            "--ca-bundle-managed-externally",
            k.ca_bundle_managed_externally,
        ),
        ("--watch-pods", k.watch_pods),
    ];
    match set.iter().find(|(_, on)| *on) {
        Some((flag, _)) => bail!("{flag} needs --kube (it uses the Kubernetes API)"),
        None => Ok(()),
    }
}

/// The start-up context from the serve flags and the environment.
pub fn context(args: &ServeArgs, native: NativeMode, openshift: bool) -> KubeContext {
    KubeContext {
        namespace: args.namespace.clone(),
        service: args.service.clone(),
        extra_dns_names: args.dns_names.clone(),
        pod_name: std::env::var("POD_NAME").ok().filter(|s| !s.is_empty()),
        native_mode: native,
        openshift,
        manage_certs: args.tls_cert_file.is_none(),
    }
}

/// The longest wait between two attempts to reach the API server at start-up.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(8);

/// Build a client ([`crate::kube::client::connect`]: `--kubeconfig` and `--context`, else
/// KUBECONFIG, else in-cluster) and check that
/// the API server answers. While it is unreachable (no answer, connection refused, TLS not yet
/// up: a control plane restarting, a node's network coming up), retry with exponential backoff
/// (0.5 s doubling to 8 s) for `--kube-connect-timeout`, logging each failure; an answer that is an API error
/// is not retried.
pub async fn connect(k: &KubeArgs) -> Result<Client> {
    let retry_for = k.connect_timeout;
    let cluster = crate::kube::client::connect(k.kubeconfig.as_deref(), k.context.as_deref())
        .await
        .map_err(|e| e.context("--kube"))?;
    let target = &cluster.target;
    let deadline = tokio::time::Instant::now() + retry_for;
    let mut delay = Duration::from_millis(500);
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let error = match tokio::time::timeout(
            left.max(Duration::from_millis(100)),
            cluster.client.apiserver_version(),
        )
        .await
        {
            Ok(Ok(version)) => {
                tracing::info!(server = %target, version = %version.git_version, attempts, "connected to the Kubernetes API server");
                return Ok(cluster.client);
            }
            Ok(Err(e @ ::kube::Error::Api(_))) => {
                return Err(cluster
                    .explain(crate::kube::client::api_error(e).context("reading its version"))
                    .context("--kube"));
            }
            Ok(Err(e)) => crate::report::chain(&crate::kube::client::api_error(e)),
            Err(_) => "no answer".to_string(),
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            bail!("--kube: cannot reach the Kubernetes API server {target} ({attempts} attempts over {retry_for:?}): {error}");
        }
        let wait = delay.min(left);
        tracing::warn!(server = %target, attempt = attempts, "cannot reach the Kubernetes API server: {error}; retrying in {wait:?}");
        tokio::time::sleep(wait).await;
        delay = (delay * 2).min(MAX_RETRY_DELAY);
    }
}

/// Connect and start the services; fails with a clear message when the cluster is unreachable
/// or the certificate bootstrap fails.
pub async fn start(args: &ServeArgs, native: NativeMode, openshift: bool) -> Result<Cluster> {
    let k = &args.kube;
    if k.mesh_config_map.is_some() && k.inject_config_map.is_none() {
        bail!("--meshConfigMap needs --injectConfigMap (the mesh ConfigMap is read together with the injector ConfigMap)");
    }
    let settings = k.settings();
    let sources = runtime::config_sources(&settings)?;
    let client = connect(k).await?;
    let ctx = context(args, native, openshift);
    let services = tokio::time::timeout(
        START_TIMEOUT,
        runtime::start(client.clone(), &settings, &ctx),
    )
    .await
    .map_err(|_| anyhow!("--kube: start-up did not finish within {START_TIMEOUT:?}"))?
    .context("--kube: starting the Kubernetes integration")?;
    wait_for_caches(&services).await?;
    if k.detect_overlaps {
        // Information for the operator: a failure is logged, never fatal.
        if let Err(e) = crate::kube::overlap::detect(client.clone(), &k.webhook_config_name).await {
            tracing::warn!("--detect-overlaps: {e:#}");
        }
    }
    if ctx.manage_certs {
        tracing::info!(secret = %format!("{}/{}", ctx.namespace, k.tls_secret),
            ca_bundle_managed_externally = k.ca_bundle_managed_externally,
            "serving certificate from the Secret");
    }
    Ok(Cluster {
        services,
        source: sources.map(|s| s.describe()).unwrap_or_default(),
        tasks: Vec::new(),
        client,
        activation: (k.failure_policy_once_ready.is_some()
            || k.webhook_owned_by_namespace
            || k.fail_open_without_deployment.is_some())
        .then(|| crate::kube::activation::Activation {
            webhook: k.webhook_config_name.clone(),
            failure_policy: k.failure_policy_once_ready.clone(),
            owner_namespace: k.webhook_owned_by_namespace.then(|| ctx.namespace.clone()),
            deployment: k
                .fail_open_without_deployment
                .clone()
                .map(|d| (ctx.namespace.clone(), d)),
        }),
    })
}

/// Wait for the first full list of nodes (auto mode) and namespaces (OpenShift): until then an
/// empty cache would answer wrongly (an empty node list passes the native-sidecar check).
async fn wait_for_caches(services: &KubeServices) -> Result<()> {
    let caches = async {
        services.native.wait_until_ready().await;
        if let Some(ns) = &services.namespaces {
            ns.wait_until_ready().await;
        }
    };
    tokio::time::timeout(START_TIMEOUT, caches)
        .await
        .map_err(|_| anyhow!("--kube: the node and namespace caches were not filled within {START_TIMEOUT:?} (check the RBAC for listing and watching nodes and namespaces)"))
}

/// Load the serving certificate of a bundle.
pub fn load_bundle(bundle: &CertBundle, compliance: &str) -> Result<tls::Loaded> {
    tls::load_pem(
        bundle.cert_pem.as_bytes(),
        bundle.key_pem.as_bytes(),
        compliance,
    )
}

/// The first configuration of the cluster, as start-up sees it.
#[derive(Debug)]
pub enum FirstConfig {
    /// Not told to read the cluster: the mounted files or the embedded default apply.
    NotFromCluster,
    /// Read and parsed.
    Loaded(Arc<Snapshot>),
    /// Not read (missing, unreadable or unparsable ConfigMap, or no answer in time): the server
    /// starts not ready, refusing admission requests, with this reason (naming the ConfigMaps),
    /// and becomes ready when a configuration arrives. Never the embedded default.
    Waiting(String),
}

/// The first configuration of a ConfigMap stream, or why there is none (it was rejected or did
/// not arrive in time; the server does not serve a configuration it was not given).
pub async fn first_snapshot<S>(
    stream: &mut S,
    source: &str,
    wait: Duration,
) -> Result<Arc<Snapshot>>
where
    S: Stream<Item = ConfigEvent<Snapshot>> + Unpin,
{
    match tokio::time::timeout(wait, stream.next()).await {
        Ok(Some(ConfigEvent::Loaded(snap))) => {
            for w in &snap.config.warnings {
                tracing::warn!("{w}");
            }
            tracing::info!(source = %format!("ConfigMap {source}"), "configuration loaded");
            Ok(snap)
        }
        Ok(Some(ConfigEvent::Rejected { error, .. })) => {
            bail!("waiting for the configuration from ConfigMap {source}: {error}")
        }
        Ok(None) => bail!("ConfigMap {source}: the ConfigMap watch ended"),
        Err(_) => bail!(
            "waiting for the configuration from ConfigMap {source}: no configuration read within {wait:?}"
        ),
    }
}

/// Swap in every configuration of the stream (keep-last-good: a rejected one only counts a
/// failed reload), with the same metric and log lines as a file reload.
pub async fn apply_config_events<S>(state: Arc<State>, mut stream: S, source: String)
where
    S: Stream<Item = ConfigEvent<Snapshot>> + Unpin,
{
    while let Some(event) = stream.next().await {
        match event {
            ConfigEvent::Loaded(snap) => {
                super::failsafe::offer(&state, snap, &format!("ConfigMap {source}")).await;
            }
            ConfigEvent::Rejected {
                error,
                keeping_last_good,
            } => {
                state.metrics.reload("config", false);
                if state.config_health.pending().is_some() {
                    let why =
                        format!("waiting for the configuration from ConfigMap {source}: {error}");
                    tracing::error!("{why}; not ready");
                    state.config_health.set_pending(Some(why));
                    continue;
                }
                let kept = if keeping_last_good {
                    "the last good configuration"
                } else {
                    "the start-up configuration"
                };
                tracing::error!("update error: {error}; keeping {kept}");
            }
        }
    }
}

/// Swap in every certificate the rotation task publishes; new handshakes use it at once.
pub async fn apply_certificates(state: Arc<State>, mut rx: watch::Receiver<CertBundle>) {
    while rx.changed().await.is_ok() {
        let bundle = rx.borrow_and_update().clone();
        match load_bundle(&bundle, &state.inject.compliance_policy) {
            Ok(loaded) => {
                let not_after = loaded.not_after;
                state.certs.swap(loaded);
                state.metrics.cert_expiry.set(not_after);
                state.metrics.reload("certificate", true);
                tracing::info!(not_after, "serving certificate rotated (from the Secret)");
            }
            Err(e) => {
                state.metrics.reload("certificate", false);
                tracing::error!(
                    "certificate rotation failed: {}; keeping the current certificate",
                    crate::report::chain(&e)
                );
            }
        }
    }
}

impl Cluster {
    /// Told to read the cluster, wait for the first configuration from the API (at most
    /// [`START_TIMEOUT`]); without it, start not ready ([`FirstConfig::Waiting`]).
    pub async fn first_config(&mut self) -> FirstConfig {
        let Some(stream) = self.services.config.as_mut() else {
            return FirstConfig::NotFromCluster;
        };
        match first_snapshot(stream, &self.source, START_TIMEOUT).await {
            Ok(snap) => FirstConfig::Loaded(snap),
            Err(e) => {
                tracing::error!("{e}; not ready until it is read (the embedded default is never served in its place)");
                FirstConfig::Waiting(e.to_string())
            }
        }
    }

    /// The per-request cluster facts for the handler.
    pub fn facts(&self) -> Arc<SharedFacts> {
        Arc::new(KubeFacts {
            native: self.services.native.clone(),
            namespaces: self.services.namespaces.clone(),
        })
    }

    /// The Event sink (with `--events`); `hold`: how long the Event of a caller without a
    /// client certificate waits for its pod to be seen created (with `--watch-pods`; without,
    /// such Events are dropped).
    pub fn events(&self, hold: Option<Duration>) -> Option<Arc<dyn EventSink>> {
        self.services
            .events
            .clone()
            .map(|r| Arc::new(KubeEvents::new(r, hold)) as Arc<dyn EventSink>)
    }

    /// Start feeding certificate rotations and ConfigMap changes into `state`.
    pub fn spawn_updates(&mut self, state: Arc<State>) {
        if let Some(rx) = self.services.certs.clone() {
            self.tasks
                .push(tokio::spawn(apply_certificates(state.clone(), rx)));
        }
        if let Some(stream) = self.services.config.take() {
            let source = self.source.clone();
            self.tasks
                .push(tokio::spawn(apply_config_events(state, stream, source)));
        }
    }

    /// Once serving: activate the webhook configuration when this replica has been ready for
    /// `settle` ([`crate::kube::activation`]).
    pub fn spawn_activation(&mut self, state: Arc<State>, settle: Duration) {
        if let Some(a) = self.activation.clone() {
            let ready = move || super::handler::not_ready(&state).is_none();
            self.tasks.push(tokio::spawn(crate::kube::activation::run(
                self.client.clone(),
                a,
                ready,
                settle,
                ACTIVATION_PERIOD,
            )));
        }
    }

    /// `--probe-interval`: probe the admission path in `namespace` every `every`
    /// ([`super::probe`]).
    pub fn spawn_probe(&mut self, state: Arc<State>, namespace: String, every: Duration) {
        self.tasks.push(tokio::spawn(super::probe::run(
            self.client.clone(),
            namespace,
            every,
            state.metrics.clone(),
        )));
    }

    /// Told to stop: fail open when the install is being deleted or no replica will answer
    /// ([`crate::kube::activation::fail_open_if_uninstalling`]), within `limit`; a failure is
    /// logged.
    pub async fn on_shutdown(&self, limit: Duration) {
        let Some(a) = &self.activation else { return };
        let step = crate::kube::activation::fail_open_if_uninstalling(self.client.clone(), a);
        match tokio::time::timeout(limit, step).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!("failing open while the install is deleted: {e:#}"),
            Err(_) => tracing::error!(
                "failing open while the install is deleted: no answer within {limit:?}"
            ),
        }
    }

    /// Once serving: keep readiness on whether the webhook configuration's caBundle trusts the
    /// served certificate ([`super::trust`]).
    pub fn spawn_trust_check(&mut self, state: Arc<State>, webhook: String) {
        self.tasks.push(tokio::spawn(super::trust::run(
            self.client.clone(),
            webhook,
            state,
        )));
    }

    /// `--watch-pods`: keep `outrigger_pods` current from a watch of every pod, selecting with
    /// the webhook configuration `webhook` ([`super::pod_watch`]).
    pub fn spawn_pod_watch(&mut self, state: Arc<State>, webhook: String) {
        self.tasks.push(tokio::spawn(super::pod_watch::run(
            self.client.clone(),
            state,
            webhook,
        )));
    }

    /// Stop every background task.
    pub fn abort(self) {
        for t in self.tasks.iter().chain(&self.services.tasks) {
            t.abort();
        }
    }
}

#[cfg(test)]
mod probe_tests {
    use super::START_TIMEOUT;
    use serde_json::Value;

    /// Start-up phases that run before the listener opens, each bounded by `START_TIMEOUT`: the
    /// API server's version check (`connect`), the certificate bootstrap and caBundle patch
    /// (`runtime::start`), the node and namespace caches, and the first ConfigMap read. The
    /// Deployment's startupProbe must allow all of them.
    const START_PHASES: u32 = 4;

    fn container() -> Value {
        let text = include_str!("../../../../deploy/base/deployment.yaml");
        let dep = outrigger_go::yaml::from_str(text).expect("deployment.yaml parses");
        dep["spec"]["template"]["spec"]["containers"][0].clone()
    }

    fn seconds(probe: &Value, field: &str, default: u64) -> u64 {
        probe[field].as_u64().unwrap_or(default)
    }

    #[test]
    fn startup_probe_outlasts_every_start_up_phase() {
        let c = container();
        let startup = &c["startupProbe"];
        assert_eq!(startup["httpGet"]["path"], "/healthz", "{startup}");
        let budget = seconds(startup, "initialDelaySeconds", 0)
            + seconds(startup, "periodSeconds", 10) * seconds(startup, "failureThreshold", 3);
        let phases = u64::from(START_PHASES) * START_TIMEOUT.as_secs();
        assert!(
            budget >= phases + 15,
            "startupProbe allows {budget} s, start-up may take {phases} s"
        );
        // Liveness only runs after the startup probe passed: no start-up delay of its own.
        assert!(c["livenessProbe"].get("initialDelaySeconds").is_none());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;

    use arc_swap::ArcSwap;
    use base64::Engine as _;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use outrigger_inject::config::defaults;
    use serde_json::{json, Map, Value};
    use tokio::sync::Semaphore;

    use super::*;
    use crate::kube::events::Outcome;
    use crate::kube::nodes;
    use crate::serve::cluster::InjectionEvent;
    use crate::serve::handler::{self, InjectSettings, Limits};
    use crate::serve::metrics::Metrics;
    use outrigger_inject::decide::native::ClusterFacts;

    /// Fake cluster: kubelet 1.33 on `new-node`, 1.29 on `old-node` (so not every node passes),
    /// one OpenShift namespace; records calls (`None`: the all-nodes question).
    #[derive(Debug, Default)]
    struct FakeFacts {
        nodes_asked: Mutex<Vec<Option<String>>>,
        namespaces_asked: Mutex<Vec<String>>,
    }

    impl ClusterFacts for FakeFacts {
        fn has_nodes(&self) -> bool {
            true
        }

        fn kubelet_version(&self, name: &str) -> Option<String> {
            self.nodes_asked
                .lock()
                .expect("lock")
                .push(Some(name.to_string()));
            match name {
                "new-node" => Some("v1.33.0".into()),
                "old-node" => Some("v1.29.0".into()),
                _ => None,
            }
        }

        fn all_nodes_native(&self, _: &mut Vec<String>) -> bool {
            self.nodes_asked.lock().expect("lock").push(None);
            false
        }

        fn namespace_annotations(&self, namespace: &str) -> Option<Map<String, Value>> {
            self.namespaces_asked
                .lock()
                .expect("lock")
                .push(namespace.to_string());
            (namespace == "team").then(|| {
                let mut m = Map::new();
                m.insert(
                    "openshift.io/sa.scc.uid-range".into(),
                    json!("1000620000/10000"),
                );
                m
            })
        }
    }

    #[derive(Debug, Default)]
    struct FakeSink(Mutex<Vec<InjectionEvent>>);

    impl EventSink for FakeSink {
        fn record(&self, event: InjectionEvent) {
            self.0.lock().expect("lock").push(event);
        }
    }

    fn default_snapshot() -> Snapshot {
        Snapshot::load(defaults::CONFIG, defaults::VALUES, Some(defaults::MESH)).expect("defaults")
    }

    fn cert() -> tls::Loaded {
        let g = crate::pki::self_signed(&["localhost".into()], 30).expect("generate");
        tls::load_pem(g.cert_pem.as_bytes(), g.key_pem.as_bytes(), "").expect("load")
    }

    fn state(
        native_mode: NativeMode,
        openshift: bool,
        cluster: Option<Arc<SharedFacts>>,
        events: Option<Arc<dyn EventSink>>,
    ) -> Arc<State> {
        Arc::new(State {
            snapshot: ArcSwap::from_pointee(default_snapshot()),
            certs: tls::CertStore::new(cert()),
            metrics: Metrics::new(),
            limits: Limits {
                max_body: 1 << 20,
                body: crate::serve::body::BodyLimits {
                    max: 1 << 20,
                    first_byte: Duration::from_secs(10),
                    min_rate: 0,
                },
                deadline: Duration::from_secs(10),
            },
            inject: InjectSettings {
                native_mode,
                openshift,
                compliance_policy: String::new(),
                revision: outrigger_inject::webhook::REVISION.to_string(),
                namespaces: None,
                max_list_entries: outrigger_inject::webhook::MAX_LIST_ENTRIES,
            },
            permits: Semaphore::new(4),
            review_slots: Arc::new(Semaphore::new(2)),
            quick_reviews: Semaphore::new(1),
            budget: Default::default(),
            draining: AtomicBool::new(false),
            cluster,
            events,
            config_health: crate::serve::failsafe::ConfigHealth::new(
                false,
                Ok(outrigger_inject::guard::Adds::default()),
            ),
            trust: crate::serve::trust::Trust::default(),
        })
    }

    fn pod(name: &str, node: Option<&str>, annotations: Value) -> Value {
        let mut spec = json!({"containers": [{"name": "app", "image": "nginx"}]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                                 "uid": "rs-uid", "controller": true}]},
            "spec": spec})
    }

    /// Post one review for `pod` in `namespace`; returns the decoded JSON patch ("" if none).
    async fn post(state: &Arc<State>, namespace: &str, pod: Value) -> String {
        let body = serde_json::to_vec(&json!({"kind": "AdmissionReview",
            "apiVersion": "admission.k8s.io/v1",
            "request": {"uid": "u1", "namespace": namespace, "operation": "CREATE",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"}, "object": pod}}))
        .expect("json");
        // As from the API server, authenticated by its client certificate.
        let req = http::Request::builder()
            .method("POST")
            .uri("/inject")
            .header("content-type", "application/json")
            .extension(crate::serve::conn::Caller {
                authenticated: true,
                source: std::net::IpAddr::from([10, 0, 0, 1]),
            })
            .body(Full::new(Bytes::from(body)))
            .expect("request");
        let resp = handler::handle(state.clone(), req)
            .await
            .expect("infallible");
        assert_eq!(resp.status(), 200);
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let v: Value = serde_json::from_slice(&bytes).expect("review json");
        match v.pointer("/response/patch").and_then(Value::as_str) {
            Some(p) => String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .expect("base64"),
            )
            .expect("utf-8"),
            None => String::new(),
        }
    }

    const NATIVE: &str = r#""restartPolicy":"Always""#;

    #[tokio::test]
    async fn auto_mode_asks_the_cached_detector_with_the_pod_node() {
        let facts = Arc::new(FakeFacts::default());
        let st = state(NativeMode::Auto, false, Some(facts.clone()), None);
        let on_new = post(&st, "team", pod("a", Some("new-node"), json!({}))).await;
        assert!(on_new.contains("istio-proxy"), "injected: {on_new}");
        assert!(on_new.contains(NATIVE), "native sidecar on new-node");
        let on_old = post(&st, "team", pod("b", Some("old-node"), json!({}))).await;
        assert!(on_old.contains("istio-proxy"), "injected: {on_old}");
        assert!(!on_old.contains(NATIVE), "no native sidecar on old-node");
        let unscheduled = post(&st, "team", pod("c", None, json!({}))).await;
        assert!(!unscheduled.contains(NATIVE));
        assert_eq!(
            *facts.nodes_asked.lock().expect("lock"),
            vec![
                Some("new-node".to_string()),
                Some("old-node".to_string()),
                None
            ]
        );
        assert!(
            facts.namespaces_asked.lock().expect("lock").is_empty(),
            "namespaces are only read on OpenShift"
        );
    }

    #[tokio::test]
    async fn fixed_native_modes_do_not_consult_the_nodes() {
        let facts = Arc::new(FakeFacts::default());
        let st = state(NativeMode::Enabled, false, Some(facts.clone()), None);
        let patch = post(&st, "team", pod("a", Some("old-node"), json!({}))).await;
        assert!(patch.contains(NATIVE));
        assert!(facts.nodes_asked.lock().expect("lock").is_empty());
    }

    /// A node as a real cluster reports it (labels, annotations, images, conditions), stripped
    /// as the watch strips it.
    fn big_node(i: usize) -> k8s_openapi::api::core::v1::Node {
        let mut n: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i:05}"), "resourceVersion": "1",
                "labels": {"kubernetes.io/hostname": format!("node-{i:05}"), "topology.kubernetes.io/zone": "z1"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"podCIDR": "10.0.0.0/24", "providerID": format!("cloud:///node-{i}")},
            "status": {"nodeInfo": {"kubeletVersion": "v1.33.2", "architecture": "amd64", "bootID": "b",
                    "containerRuntimeVersion": "containerd://2.0.0", "kernelVersion": "6.1", "kubeProxyVersion": "",
                    "machineID": "m", "operatingSystem": "linux", "osImage": "Debian", "systemUUID": "u"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "capacity": {"cpu": "8", "memory": "32Gi"}}}))
        .expect("node");
        nodes::strip(&mut n);
        n
    }

    fn namespace(i: usize) -> k8s_openapi::api::core::v1::Namespace {
        let mut ns: k8s_openapi::api::core::v1::Namespace = serde_json::from_value(json!({
            "metadata": {"name": format!("ns-{i:05}"), "resourceVersion": "1",
                "labels": {"kubernetes.io/metadata.name": format!("ns-{i:05}"), "istio-injection": "enabled"},
                "annotations": {"openshift.io/sa.scc.uid-range": "1000620000/10000",
                                "openshift.io/sa.scc.supplemental-groups": "1000620000/10000"}},
            "status": {"phase": "Active"}}))
        .expect("namespace");
        crate::kube::namespaces::strip(&mut ns);
        ns
    }

    fn resident_bytes() -> Option<u64> {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * 4096)
    }

    fn facts_with(nodes_n: usize, namespaces: impl Iterator<Item = usize>) -> Arc<KubeFacts> {
        use ::kube::runtime::{reflector, watcher};
        let mut events = vec![watcher::Event::Init];
        events.extend((0..nodes_n).map(|i| watcher::Event::InitApply(big_node(i))));
        events.push(watcher::Event::InitDone);
        let (native, _) = nodes::fed(events);
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        for i in namespaces {
            writer.apply_watcher_event(&watcher::Event::InitApply(namespace(i)));
        }
        writer.apply_watcher_event(&watcher::Event::InitDone);
        Arc::new(KubeFacts {
            native,
            namespaces: Some(crate::kube::namespaces::NamespaceCache::with_store(store)),
        })
    }

    /// A review against 5,000 cached nodes and 10,000 cached namespaces (a pod without
    /// nodeName, OpenShift namespace lookup on) injects exactly as against minimal caches; the
    /// cache memory is reported. Latency is compared by [`bench_review_latency_with_big_caches`].
    #[tokio::test]
    async fn big_caches_inject_as_minimal_ones() {
        big_caches(false).await;
    }

    /// Benchmark, run on demand (`cargo test -p outrigger --bin outrigger -- --ignored
    /// bench_review_latency`): review latency with the big caches stays within 5% of minimal
    /// caches (fastest of 150 interleaved reviews a side). Speed lives here, not in the default test run.
    #[tokio::test]
    #[ignore = "benchmark: run with --ignored on a quiet machine"]
    async fn bench_review_latency_with_big_caches() {
        big_caches(true).await;
    }

    async fn big_caches(time_it: bool) {
        let before = resident_bytes();
        let big = facts_with(5_000, 0..10_000);
        let after = resident_bytes();
        let json_bytes: usize = (0..5_000)
            .map(|i| {
                serde_json::to_vec(&big_node(i))
                    .map(|v| v.len())
                    .unwrap_or(0)
            })
            .sum::<usize>()
            + (0..10_000)
                .map(|i| {
                    serde_json::to_vec(&namespace(i))
                        .map(|v| v.len())
                        .unwrap_or(0)
                })
                .sum::<usize>();
        eprintln!(
            "cache memory: 5,000 nodes + 10,000 namespaces: {} KiB as JSON (stripped objects), \
             process resident +{} KiB while building them (upper bound: includes freed garbage)",
            json_bytes / 1024,
            after
                .zip(before)
                .map(|(a, b)| a.saturating_sub(b) / 1024)
                .unwrap_or(0),
        );
        // The baseline caches hold only what this pod needs: its namespace.
        let empty = state(
            NativeMode::Auto,
            true,
            Some(facts_with(0, std::iter::once(4242))),
            None,
        );
        let full = state(NativeMode::Auto, true, Some(big), None);
        let p = |i: usize| pod(&format!("p{i}"), None, json!({}));
        // Both inject (every node passes), with the namespace's UID range.
        let out = post(&full, "ns-04242", p(0)).await;
        assert!(out.contains(NATIVE) && out.contains("1000629999"), "{out}");
        assert_eq!(post(&empty, "ns-04242", p(0)).await, out, "same injection");
        if !time_it {
            return;
        }
        // Single reviews, the two sides interleaved (alternating which goes first); the fastest
        // of each side is compared: interference from the rest of the machine only ever adds
        // time, and with 150 samples a side some run undisturbed.
        let (mut best_empty, mut best_full) = (f64::MAX, f64::MAX);
        for i in 0..300 {
            let st = if (i / 2 + i) % 2 == 0 { &empty } else { &full };
            let t = std::time::Instant::now();
            post(st, "ns-04242", p(i)).await;
            let took = t.elapsed().as_secs_f64();
            if Arc::ptr_eq(st, &empty) {
                best_empty = best_empty.min(took);
            } else {
                best_full = best_full.min(took);
            }
        }
        let ratio = best_full / best_empty;
        eprintln!(
            "review latency: empty caches {:.0} µs, 5,000 nodes + 10,000 namespaces {:.0} µs (x{ratio:.3}, fastest of 150 each)",
            best_empty * 1e6,
            best_full * 1e6
        );
        assert!(ratio < 1.05, "latency ratio {ratio:.3}");
    }

    #[tokio::test]
    async fn skipped_pods_never_ask_the_node_cache() {
        let facts = Arc::new(FakeFacts::default());
        let st = state(NativeMode::Auto, false, Some(facts.clone()), None);
        let skipped = post(
            &st,
            "team",
            pod("a", None, json!({"sidecar.istio.io/inject": "false"})),
        )
        .await;
        assert!(skipped.is_empty(), "not injected: {skipped}");
        assert!(
            facts.nodes_asked.lock().expect("lock").is_empty(),
            "the native-sidecar decision is only made for pods to inject"
        );
    }

    #[tokio::test]
    async fn openshift_takes_proxy_ids_from_the_namespace_cache() {
        let facts = Arc::new(FakeFacts::default());
        let st = state(NativeMode::Disabled, true, Some(facts.clone()), None);
        let patch = post(&st, "team", pod("a", None, json!({}))).await;
        assert!(patch.contains("1000629999"), "UID from uid-range: {patch}");
        let other = post(&st, "elsewhere", pod("b", None, json!({}))).await;
        assert!(other.contains("istio-proxy"));
        assert!(!other.contains("1000629999"), "unknown namespace: defaults");
        assert_eq!(
            *facts.namespaces_asked.lock().expect("lock"),
            vec!["team".to_string(), "elsewhere".to_string()]
        );
    }

    #[tokio::test]
    async fn events_are_recorded_per_injection_skip_and_not_for_malformed_reviews() {
        let sink = Arc::new(FakeSink::default());
        let st = state(NativeMode::Disabled, false, None, Some(sink.clone()));
        post(&st, "team", pod("a", None, json!({}))).await;
        post(
            &st,
            "team",
            pod("b", None, json!({"sidecar.istio.io/inject": "false"})),
        )
        .await;
        let req = http::Request::builder()
            .method("POST")
            .uri("/inject")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(b"{\"kind\": 1}")))
            .expect("request");
        let _ = handler::handle(st.clone(), req).await;
        let events = sink.0.lock().expect("lock").clone();
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(
            (events[0].outcome, events[0].code.as_str()),
            (Outcome::Injected, "injected")
        );
        assert_eq!(events[0].namespace, "team");
        assert_eq!(
            events[0].pod["metadata"]["ownerReferences"][0]["name"],
            "web-1"
        );
        assert_eq!(events[1].outcome, Outcome::Skipped);
        assert_ne!(events[1].code, "injected");
        assert!(!events[1].code.is_empty());
        assert!(!events[1].message.is_empty(), "decision sentence");
        assert!(events
            .iter()
            .all(|e| e.authenticated && e.source == std::net::IpAddr::from([10, 0, 0, 1])));
    }

    fn node_detector(nodes: &[(&str, &str)]) -> nodes::NodeCache {
        use ::kube::runtime::watcher;
        let mut events = vec![watcher::Event::Init];
        for (name, version) in nodes {
            let node = serde_json::from_value(json!({"metadata": {"name": name},
                "status": {"nodeInfo": {"kubeletVersion": version, "architecture": "", "bootID": "",
                    "containerRuntimeVersion": "", "kernelVersion": "", "kubeProxyVersion": "",
                    "machineID": "", "operatingSystem": "", "osImage": "", "systemUUID": ""}}}))
            .expect("node");
            events.push(watcher::Event::InitApply(node));
        }
        events.push(watcher::Event::InitDone);
        nodes::fed(events).0
    }

    #[tokio::test]
    async fn kube_facts_decide_native_sidecars_from_the_cached_node_versions() {
        let facts = KubeFacts {
            native: node_detector(&[
                ("new-node", "v1.33.1-gke.100"),
                ("old-node", "v1.29.4"),
                ("short", "v1.33"),
                ("padded", "v1.033.0"),
            ]),
            namespaces: None,
        };
        let st = state(NativeMode::Auto, false, Some(Arc::new(facts)), None);
        let on_new = post(&st, "team", pod("a", Some("new-node"), json!({}))).await;
        assert!(on_new.contains(NATIVE), "kubelet 1.33 on the pod's node");
        // Versions Go's semver reads (the server's own parser used to refuse them).
        for node in ["short", "padded"] {
            let patch = post(&st, "team", pod("s", Some(node), json!({}))).await;
            assert!(patch.contains(NATIVE), "kubelet on {node}: {patch}");
        }
        let on_old = post(&st, "team", pod("b", Some("old-node"), json!({}))).await;
        assert!(on_old.contains("istio-proxy") && !on_old.contains(NATIVE));
        let unscheduled = post(&st, "team", pod("c", None, json!({}))).await;
        assert!(!unscheduled.contains(NATIVE), "one old node: all must pass");
        let all_new = KubeFacts {
            native: node_detector(&[("n1", "v1.33.0"), ("n2", "v1.34.2")]),
            namespaces: None,
        };
        let st = state(NativeMode::Auto, false, Some(Arc::new(all_new)), None);
        assert!(post(&st, "team", pod("d", None, json!({})))
            .await
            .contains(NATIVE));
    }

    #[tokio::test]
    async fn kube_events_are_published_in_the_background() {
        let (client, mut handle) = crate::kube_mock::client();
        let sink = KubeEvents::new(
            crate::kube::events::EventRecorder::new(client, Some("outrigger-0".into())),
            None,
        );
        let st = state(NativeMode::Disabled, false, None, Some(Arc::new(sink)));
        // The admission response is complete before the API server has seen anything.
        let patch = post(&st, "team", pod("a", None, json!({}))).await;
        assert!(patch.contains("istio-proxy"));
        let r = crate::kube_mock::next(&mut handle).await;
        assert_eq!(r.method, http::Method::POST);
        assert!(
            r.uri
                .starts_with("/apis/events.k8s.io/v1/namespaces/team/events"),
            "{}",
            r.uri
        );
        assert_eq!(r.body["reason"], "SidecarInjected");
        assert_eq!(r.body["regarding"]["kind"], "ReplicaSet");
        assert_eq!(r.body["regarding"]["name"], "web-1");
        let note = r.body["note"].as_str().unwrap_or_default();
        assert!(note.starts_with("injected: "), "{note}");
        // A failing API server only costs a warning.
        r.respond(500, json!({"kind": "Status", "code": 500}));
        let again = post(&st, "team", pod("b", None, json!({}))).await;
        assert!(again.contains("istio-proxy"));
    }

    #[test]
    fn kube_only_flags_need_kube() {
        assert!(reject_kube_only_flags(&KubeArgs::default()).is_ok());
        let e = reject_kube_only_flags(&KubeArgs {
            events: true,
            ..KubeArgs::default()
        })
        .expect_err("refused");
        assert!(e.to_string().contains("--events needs --kube"), "{e}");
        let e = reject_kube_only_flags(&KubeArgs {
            inject_config_map: Some("a/b".into()),
            ..KubeArgs::default()
        })
        .expect_err("refused");
        assert!(e.to_string().contains("--injectConfigMap"), "{e}");
        for (args, flag) in [
            (
                KubeArgs {
                    probe_interval: Some(Duration::from_secs(60)),
                    probe_namespace: Some("p".into()),
                    ..KubeArgs::default()
                },
                "--probe-interval",
            ),
            (
                KubeArgs {
                    fail_open_without_deployment: Some("outrigger".into()),
                    ..KubeArgs::default()
                },
                "--fail-open-without-deployment",
            ),
            (
                KubeArgs {
                    watch_pods: true,
                    ..KubeArgs::default()
                },
                "--watch-pods",
            ),
        ] {
            let e = reject_kube_only_flags(&args).expect_err("refused");
            assert!(
                e.to_string().contains(&format!("{flag} needs --kube")),
                "{e}"
            );
        }
    }

    fn series(st: &State, kind: &str, result: &str) -> f64 {
        let text = st.metrics.encode();
        let prefix = format!("outrigger_reloads_total{{kind=\"{kind}\",result=\"{result}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    #[tokio::test]
    async fn configmap_snapshots_swap_and_rejections_keep_the_last_good() {
        let st = state(NativeMode::Disabled, false, None, None);
        let first = st.snapshot.load_full();
        let config = defaults::CONFIG.replacen("policy: enabled", "policy: disabled", 1);
        let disabled = Arc::new(
            Snapshot::load(&config, defaults::VALUES, Some(defaults::MESH)).expect("config"),
        );
        // An emptied `config` key parses (no templates, no policy) but cannot inject pods.
        let empty =
            Arc::new(Snapshot::load("", defaults::VALUES, Some(defaults::MESH)).expect("parses"));
        let events = vec![
            ConfigEvent::Loaded(disabled.clone()),
            ConfigEvent::Rejected {
                error: "failed to read injection config from ConfigMap: bad".into(),
                keeping_last_good: true,
            },
            ConfigEvent::Loaded(empty),
        ];
        apply_config_events(
            st.clone(),
            futures::stream::iter(events),
            "istio-system/istio-sidecar-injector".into(),
        )
        .await;
        let now = st.snapshot.load_full();
        assert!(Arc::ptr_eq(&now, &disabled), "swapped to the loaded one");
        assert!(!Arc::ptr_eq(&now, &first));
        assert_eq!(series(&st, "config", "success"), 1.0);
        assert_eq!(series(&st, "config", "failure"), 2.0, "bad, then unusable");
        assert!(st.config_health.not_ready().is_none());
        let patch = post(&st, "team", pod("a", None, json!({}))).await;
        assert!(patch.is_empty(), "policy disabled is in force: {patch}");
        let opted_in = post(
            &st,
            "team",
            pod("b", None, json!({"sidecar.istio.io/inject": "true"})),
        )
        .await;
        assert!(opted_in.contains("istio-proxy"), "templates still in force");
    }

    #[tokio::test]
    async fn first_configmap_snapshot_is_required() {
        let snap = Arc::new(default_snapshot());
        let mut ok = futures::stream::iter(vec![ConfigEvent::Loaded(snap.clone())]);
        let got = first_snapshot(&mut ok, "ns/cm", Duration::from_secs(1))
            .await
            .expect("loaded");
        assert!(Arc::ptr_eq(&got, &snap));
        let mut bad = futures::stream::iter(vec![ConfigEvent::<Snapshot>::Rejected {
            error: "failed to read injection config from ConfigMap: no ConfigMap found".into(),
            keeping_last_good: false,
        }]);
        let e = first_snapshot(&mut bad, "ns/cm", Duration::from_secs(1))
            .await
            .expect_err("rejected");
        assert!(
            e.to_string().contains("ns/cm") && e.to_string().contains("no ConfigMap found"),
            "{e}"
        );
        let mut pending = futures::stream::pending::<ConfigEvent<Snapshot>>();
        let e = first_snapshot(&mut pending, "ns/cm", Duration::from_millis(20))
            .await
            .expect_err("timeout");
        assert!(e.to_string().contains("no configuration read"), "{e}");
        let mut ended = futures::stream::empty::<ConfigEvent<Snapshot>>();
        assert!(first_snapshot(&mut ended, "ns/cm", Duration::from_secs(1))
            .await
            .is_err());
    }

    #[tokio::test]
    async fn rotated_certificates_reach_the_tls_resolver() {
        let st = state(NativeMode::Disabled, false, None, None);
        let names = vec!["outrigger.outrigger.svc".to_string()];
        let issued = time::OffsetDateTime::now_utc() - time::Duration::days(30);
        let first = CertBundle::generate(&names, issued).expect("generate");
        let (tx, rx) = watch::channel(first);
        let task = tokio::spawn(apply_certificates(st.clone(), rx));
        let before = st.certs.not_after();
        let rotated = CertBundle::generate(&names, time::OffsetDateTime::now_utc()).expect("gen");
        let want = load_bundle(&rotated, "").expect("loads").not_after;
        assert_ne!(want, before);
        tx.send(rotated).expect("send");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while st.certs.not_after() != want && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            st.certs.not_after(),
            want,
            "resolver serves the rotated certificate"
        );
        assert_eq!(series(&st, "certificate", "success"), 1.0);
        let mut broken = CertBundle::generate(&names, time::OffsetDateTime::now_utc()).expect("g");
        broken.key_pem = "not a key".into();
        tx.send(broken).expect("send");
        while series(&st, "certificate", "failure") < 1.0 && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(series(&st, "certificate", "failure"), 1.0);
        assert_eq!(st.certs.not_after(), want, "kept the working certificate");
        task.abort();
    }
}
