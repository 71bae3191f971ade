//! `serve --kube`: connect to the API server, start the kube-rs services
//! ([`crate::kube::runtime::start`]) and feed what they produce into the running server:
//! certificate rotations into the TLS resolver, ConfigMap snapshots into the configuration swap,
//! the node and namespace caches and the Event recorder into the admission handler.

use std::sync::Arc;
use std::time::Duration;

use ::kube::Client;
use anyhow::{anyhow, bail, Context, Result};
use futures::{Stream, StreamExt};
use outrigger_inject::admission::NativeMode;
use outrigger_inject::config::Snapshot;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::cluster::{ClusterFacts, EventSink, KubeEvents, KubeFacts};
use super::handler::State;
use super::{tls, ServeArgs};
use crate::kube::certs::CertBundle;
use crate::kube::config_watch::ConfigEvent;
use crate::kube::nodes;
use crate::kube::runtime::{self, KubeArgs, KubeContext, KubeServices};

/// How long start-up waits for the API server (version check, certificate bootstrap, first
/// ConfigMap read) before giving up.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The running Kubernetes integration.
#[derive(Debug)]
pub struct Cluster {
    /// What [`runtime::start`] returned (the config stream is taken by [`Cluster::first_config`]).
    pub services: KubeServices,
    /// `--injectConfigMap` (for log lines).
    source: String,
    /// Tasks spawned here (certificate and configuration updates).
    tasks: Vec<JoinHandle<()>>,
}

/// Flags that only make sense with `--kube` are refused without it (instead of being ignored).
pub fn reject_kube_only_flags(k: &KubeArgs) -> Result<()> {
    let set = [
        ("--injectConfigMap", k.inject_config_map.is_some()),
        ("--meshConfigMap", k.mesh_config_map.is_some()),
        ("--events", k.events),
        (
            "--ca-bundle-managed-externally",
            k.ca_bundle_managed_externally,
        ),
    ];
    match set.iter().find(|(_, on)| *on) {
        Some((flag, _)) => bail!("{flag} needs --kube (it uses the Kubernetes API)"),
        None => Ok(()),
    }
}

fn detector_mode(mode: NativeMode) -> nodes::NativeMode {
    match mode {
        NativeMode::Enabled => nodes::NativeMode::Enabled,
        NativeMode::Disabled => nodes::NativeMode::Disabled,
        NativeMode::Auto => nodes::NativeMode::Auto,
    }
}

/// The start-up context from the serve flags and the environment.
pub fn context(args: &ServeArgs, native: NativeMode, openshift: bool) -> KubeContext {
    KubeContext {
        namespace: args.namespace.clone(),
        service: args.service.clone(),
        extra_dns_names: args.dns_names.clone(),
        pod_name: std::env::var("POD_NAME").ok().filter(|s| !s.is_empty()),
        native_mode: detector_mode(native),
        openshift,
        manage_certs: args.tls_cert_file.is_none(),
    }
}

/// Build a client (in-cluster service account, else kubeconfig) and check that the API server
/// answers.
pub async fn connect() -> Result<Client> {
    let client = Client::try_default().await.map_err(|e| {
        anyhow!("--kube: no usable Kubernetes configuration (in-cluster service account or KUBECONFIG): {e}")
    })?;
    let version = tokio::time::timeout(START_TIMEOUT, client.apiserver_version())
        .await
        .map_err(|_| {
            anyhow!("--kube: the Kubernetes API server did not answer within {START_TIMEOUT:?}")
        })?
        .map_err(|e| anyhow!("--kube: cannot reach the Kubernetes API server: {e}"))?;
    tracing::info!(version = %version.git_version, "connected to the Kubernetes API server");
    Ok(client)
}

/// Connect and start the services; fails with a clear message when the cluster is unreachable
/// or the certificate bootstrap fails.
pub async fn start(args: &ServeArgs, native: NativeMode, openshift: bool) -> Result<Cluster> {
    let k = &args.kube;
    if k.mesh_config_map.is_some() && k.inject_config_map.is_none() {
        bail!("--meshConfigMap needs --injectConfigMap (the mesh ConfigMap is read together with the injector ConfigMap)");
    }
    let client = connect().await?;
    let ctx = context(args, native, openshift);
    let services = tokio::time::timeout(START_TIMEOUT, runtime::start(client, k, &ctx))
        .await
        .map_err(|_| anyhow!("--kube: start-up did not finish within {START_TIMEOUT:?}"))?
        .context("--kube: starting the Kubernetes integration")?;
    wait_for_caches(&services).await?;
    if ctx.manage_certs {
        tracing::info!(secret = %format!("{}/{}", ctx.namespace, k.tls_secret),
            ca_bundle_managed_externally = k.ca_bundle_managed_externally,
            "serving certificate from the Secret");
    }
    Ok(Cluster {
        services,
        source: k.inject_config_map.clone().unwrap_or_default(),
        tasks: Vec::new(),
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

/// The first configuration of a ConfigMap stream: start-up fails when it is rejected or does
/// not arrive in time (the server does not serve a configuration it was not given).
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
            bail!("--injectConfigMap {source}: {error}")
        }
        Ok(None) => bail!("--injectConfigMap {source}: the ConfigMap watch ended"),
        Err(_) => bail!("--injectConfigMap {source}: no configuration read within {wait:?}"),
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
                for w in &snap.config.warnings {
                    tracing::warn!("{w}");
                }
                state.snapshot.store(snap);
                state.metrics.reload("config", true);
                tracing::info!(source = %format!("ConfigMap {source}"), "configuration reloaded");
            }
            ConfigEvent::Rejected {
                error,
                keeping_last_good,
            } => {
                state.metrics.reload("config", false);
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
                    "certificate rotation failed: {e:#}; keeping the current certificate"
                );
            }
        }
    }
}

impl Cluster {
    /// With `--injectConfigMap`, wait for the first configuration from the API.
    pub async fn first_config(&mut self) -> Result<Option<Arc<Snapshot>>> {
        match self.services.config.as_mut() {
            Some(stream) => first_snapshot(stream, &self.source, START_TIMEOUT)
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    /// The per-request cluster facts for the handler.
    pub fn facts(&self) -> Arc<dyn ClusterFacts> {
        Arc::new(KubeFacts {
            native: self.services.native.clone(),
            namespaces: self.services.namespaces.clone(),
        })
    }

    /// The Event sink (with `--events`).
    pub fn events(&self) -> Option<Arc<dyn EventSink>> {
        self.services
            .events
            .clone()
            .map(|r| Arc::new(KubeEvents::new(r)) as Arc<dyn EventSink>)
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

    /// Stop every background task.
    pub fn abort(self) {
        for t in self.tasks.iter().chain(&self.services.tasks) {
            t.abort();
        }
    }
}
