//! `outrigger serve`: the Kubernetes mutating admission webhook (issue 3).
//!
//! HTTPS (rustls, TLS 1.2/1.3, ALPN h2 + http/1.1) on `--port` (default 9443) with routes
//! `/inject`, `/inject/...`, `/healthz`, `/readyz`, `/metrics`. Configuration comes from Istio's
//! mounted layout or the embedded default and is hot-reloaded; certificates are loaded from
//! `--tlsCertFile`/`--tlsKeyFile` (hot-reloaded) or generated at start-up. With `--kube`
//! ([`kube_mode`]), certificates come from a Secret, configuration from ConfigMaps, and cluster
//! facts and Events from the Kubernetes API.

pub mod admit;
pub mod answer;
pub mod args;
pub mod body;
pub mod budget;
pub mod client_auth;
pub mod cluster;
pub mod conn;
pub mod failsafe;
pub mod handler;
pub mod health;
pub mod kube_mode;
pub mod listen;
pub mod log_buffer;
pub mod log_line;
pub mod metrics;
pub mod metrics_port;
pub mod pod_watch;
pub mod probe;
pub mod reload;
pub mod server;
pub mod snapshot;
pub mod tls;
pub mod trust;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use arc_swap::ArcSwap;
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::NativeMode;
use serde_json::{Map, Value};
use tokio::sync::{watch, Semaphore};

use handler::{InjectSettings, Limits, State};

pub use crate::serve::args::{LogFormat, ServeArgs};

/// The log filter: `RUST_LOG` when set, else `--log-level`. Unless one of them names
/// `kube_client`, kube-rs' own failure log (`kube_client::client::builder`: an ERROR line per
/// failed request, `failed with error client error (Connect)`) is off: every failure it reports
/// is returned to outrigger, which logs it once, with what it was doing.
fn log_filter(rust_log: Option<&str>, log_level: &str) -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    let (filter, spec) = match rust_log.map(|v| (EnvFilter::try_new(v), v)) {
        Some((Ok(f), v)) => (f, v),
        _ => match EnvFilter::try_new(log_level) {
            Ok(f) => (f, log_level),
            Err(_) => (EnvFilter::new("info"), "info"),
        },
    };
    if spec.contains("kube_client") {
        return filter;
    }
    match "kube_client::client::builder=off".parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}

/// The log's buffer ([`log_buffer`]), flushed at exit.
static LOG: std::sync::OnceLock<log_buffer::LogBuffer<std::io::Stderr>> =
    std::sync::OnceLock::new();

/// Write every log line still in the buffer (before the process exits).
fn flush_log() {
    if let Some(log) = LOG.get() {
        log.flush();
    }
}

/// Install the log: lines below `WARN` batched ([`log_buffer`]; unbuffered when its thread
/// cannot start). Returns the guard that writes what is pending when dropped.
fn init_logging(args: &ServeArgs) -> Option<log_buffer::Flush<std::io::Stderr>> {
    let rust_log = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let filter = log_filter(rust_log.as_deref(), &args.log_level);
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let buffer = log_buffer::LogBuffer::new(std::io::stderr()).ok();
    let _ = match (args.log_format, buffer.clone()) {
        (LogFormat::Json, Some(b)) => builder
            .with_writer(b)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        (LogFormat::Json, None) => builder
            .with_writer(std::io::stderr)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        // Request values may hold line breaks and escapes: written escaped, one event per line.
        (LogFormat::Text, Some(b)) => builder
            .with_writer(log_line::OneLine(b))
            .with_ansi(false)
            .try_init(),
        (LogFormat::Text, None) => builder
            .with_writer(log_line::OneLine(std::io::stderr))
            .with_ansi(false)
            .try_init(),
    };
    let buffer = buffer?;
    let guard = buffer.flush_on_drop();
    let _ = LOG.set(buffer);
    Some(guard)
}

/// Run the webhook until SIGTERM/SIGINT.
pub fn run(args: &ServeArgs) -> Result<()> {
    crate::template_env::init(&args.env.template_env)?;
    outrigger_alloc::tune();
    // Dropped last: the log's pending lines are written when the server stops.
    let _log = init_logging(args);
    let argv: Vec<String> = std::env::args().collect();
    for (old, new) in crate::serve::args::former_names_used(&argv) {
        tracing::warn!("--{old} is deprecated: use --{new} (as every other command names it)");
    }
    tracing::debug!(allocator = %outrigger_alloc::describe(), "allocator settings");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(args))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = rt.block_on(run_async(args));
    // Work still on the blocking pool (a review or a configuration check stops at its own
    // deadline) does not hold the process after the drain.
    rt.shutdown_timeout(BLOCKING_SHUTDOWN);
    result
}

/// The runtime's worker threads: `--worker-threads`, else one per CPU.
fn worker_threads(args: &ServeArgs) -> usize {
    args.worker_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1)
}

/// How long the process waits at exit for work still running on the blocking pool.
const BLOCKING_SHUTDOWN: Duration = Duration::from_secs(1);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// The native-sidecar mode from the flag or `ENABLE_NATIVE_SIDECARS`. Without a Kubernetes node
/// client (`--kube`), `auto` cannot inspect kubelets and means "not native" (logged once here).
fn native_mode(flag: Option<NativeMode>, kube: bool) -> NativeMode {
    let env = std::env::var("ENABLE_NATIVE_SIDECARS").ok();
    let (mode, warning) = crate::config_source::native_mode(flag, env.as_deref());
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    if mode == NativeMode::Auto && !kube {
        tracing::warn!("native sidecars: auto detection needs a Kubernetes node client, which this server does not have; native sidecars are off (use --native-sidecars true to enable)");
        return NativeMode::Disabled;
    }
    mode
}

fn certificate_names(args: &ServeArgs) -> Vec<String> {
    let (svc, ns) = (&args.service, &args.namespace);
    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    names.extend(crate::cli::defaults::service_dns_names(svc, ns));
    names.extend(args.dns_names.iter().cloned());
    names.dedup();
    names
}

/// A generated CA bundle still to be written (once the port is bound).
struct PendingCa {
    path: PathBuf,
    pem: String,
    names: Vec<String>,
}

impl PendingCa {
    /// Write the bundle (atomically) and log where.
    fn write(self) -> Result<()> {
        crate::safe_write::write_owned(&self.path, self.pem.as_bytes())
            .with_context(|| format!("writing the CA bundle to {}", self.path.display()))?;
        tracing::info!(ca_bundle = %self.path.display(), names = ?self.names, "generated a self-signed CA and serving certificate; CA bundle written");
        Ok(())
    }
}

/// Load or generate the serving certificate. A generated CA is returned to be written once the
/// port is bound, so a server that cannot listen leaves no fresh CA file behind.
fn initial_certificate(
    args: &ServeArgs,
    compliance: &str,
) -> Result<(tls::Loaded, Option<PendingCa>)> {
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_key_file) {
        let loaded = tls::load_files(cert, key, compliance)?;
        tracing::info!(cert = %cert.display(), not_after = loaded.not_after, "serving certificate loaded");
        return Ok((loaded, None));
    }
    let names = certificate_names(args);
    let generated =
        crate::pki::self_signed(&names, 365).context("generating a self-signed certificate")?;
    let path = args
        .ca_bundle_file
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("outrigger").join("ca.pem"));
    let loaded = tls::load_pem(
        generated.cert_pem.as_bytes(),
        generated.key_pem.as_bytes(),
        compliance,
    )?;
    let pending = PendingCa {
        path,
        pem: generated.ca_pem,
        names,
    };
    Ok((loaded, Some(pending)))
}

/// Read and parse the configuration files (or the embedded default).
async fn file_config(paths: &snapshot::Paths) -> Result<(Snapshot, snapshot::Texts)> {
    let texts = snapshot::read(paths)?;
    let (t, p) = (texts.clone(), paths.clone());
    let snap = tokio::task::spawn_blocking(move || snapshot::build(&t, &p))
        .await
        .context("loading the configuration")??;
    for w in &snap.config.warnings {
        tracing::warn!("{w}");
    }
    if texts.embedded {
        tracing::warn!(
            path = %paths.config.display(),
            "no injector configuration is mounted and no configuration flag is given: serving the \
             embedded default configuration, not Istio's"
        );
    }
    for note in &texts.notes {
        tracing::info!("{}", note.trim_start_matches("note: "));
    }
    tracing::info!(source = %texts.describe(paths), "configuration loaded");
    Ok((snap, texts))
}

async fn run_async(args: &ServeArgs) -> Result<()> {
    if args.max_inflight_bytes < args.max_request_bytes {
        bail!(
            "--max-inflight-bytes ({}) must be at least --max-request-bytes ({})",
            args.max_inflight_bytes,
            args.max_request_bytes
        );
    }
    if args.max_connection_bytes < args.max_request_bytes {
        bail!(
            "--max-connection-bytes ({}) must be at least --max-request-bytes ({})",
            args.max_connection_bytes,
            args.max_request_bytes
        );
    }
    if !crate::kube::webhook_object::is_dns1123_label(&args.kube.revision) {
        bail!(
            "--revision {:?}: not a revision name (a DNS-1123 label, as Istio requires)",
            args.kube.revision
        );
    }
    let compliance = env("COMPLIANCE_POLICY");
    let paths = args.config_paths()?;
    let native = native_mode(args.native_sidecars, args.kube.kube);
    let openshift = env("PLATFORM").eq_ignore_ascii_case("openshift");
    let mut cluster = match args.kube.kube {
        true => Some(kube_mode::start(args, native, openshift).await?),
        false => {
            kube_mode::reject_kube_only_flags(&args.kube)?;
            None
        }
    };
    // With --injectConfigMap the configuration comes from the API only (no file watch).
    let from_api = match cluster.as_mut() {
        Some(c) => c.first_config().await,
        None => kube_mode::FirstConfig::NotFromCluster,
    };
    let (snap, file_texts, waiting) = match from_api {
        kube_mode::FirstConfig::Loaded(s) => (s, None, None),
        kube_mode::FirstConfig::Waiting(why) => {
            // A placeholder that injects nothing; requests are refused while it is in place.
            let empty = Snapshot::load("", "{}", None).context("the empty configuration")?;
            (Arc::new(empty), None, Some(why))
        }
        kube_mode::FirstConfig::NotFromCluster => {
            let (s, texts) = file_config(&paths).await?;
            (Arc::new(s), Some(texts), None)
        }
    };

    let health = match waiting {
        Some(why) => failsafe::ConfigHealth::waiting(args.allow_empty_config, why),
        None => {
            failsafe::initial(
                &snap,
                native,
                args.allow_empty_config,
                "start-up",
                failsafe::CHECK_TIME,
            )
            .await
        }
    };
    let metrics = metrics::Metrics::new();
    metrics
        .inflight_bytes_limit
        .set(i64::try_from(args.max_inflight_bytes).unwrap_or(i64::MAX));
    let loaded = health.pending().is_none();
    metrics.reload("config", loaded);
    metrics
        .config_usable
        .set(i64::from(loaded && health.verdict().is_ok()));
    metrics.set_unsupported(&health.verdict());
    let (cert, pending_ca) = match cluster.as_ref().and_then(|c| c.services.certs.as_ref()) {
        Some(rx) => (
            kube_mode::load_bundle(&rx.borrow(), &compliance)
                .context("loading the certificate from the Secret")?,
            None,
        ),
        None => initial_certificate(args, &compliance)?,
    };
    metrics.cert_expiry.set(cert.not_after);
    metrics.reload("certificate", true);
    let certs = tls::CertStore::new(cert);
    let client_auth = match &args.client_ca_file {
        Some(file) => {
            let auth = client_auth::ClientAuth::load(
                file,
                args.client_allowed_names.clone(),
                Arc::new(tls::provider(&compliance)),
            )?;
            tracing::info!(client_ca = %file.display(), allowed_names = ?args.client_allowed_names, "client certificates required");
            Some(auth)
        }
        None => None,
    };
    let tls_config = tls::server_config(certs.clone(), &compliance, client_auth.clone())?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls_config));

    let hold = args.kube.watch_pods.then_some(args.events_hold);
    let (facts, events) = match &cluster {
        Some(c) => (Some(c.facts()), c.events(hold)),
        None => (None, None),
    };
    if events.is_some() && client_auth.is_none() {
        if hold.is_some() {
            tracing::info!(hold = ?args.events_hold, "--events: callers present no client certificate (no --clientCaFile): each Event is written once the pod watch sees its pod created");
        } else {
            tracing::warn!("--events: Events are written only for callers authenticated by a client certificate (--clientCaFile), or with --watch-pods once their pod is seen created; without either, none are written");
        }
    }
    let workers = args
        .worker_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let budget = budget::ByteBudget::new(
        args.max_inflight_bytes,
        args.max_connection_bytes,
        workers,
        metrics.inflight_bytes.clone(),
    );
    let state = Arc::new(State {
        snapshot: ArcSwap::new(snap),
        certs,
        metrics,
        limits: Limits {
            max_body: args.max_request_bytes,
            body: body::BodyLimits {
                max: args.max_request_bytes,
                first_byte: args.body_first_byte_timeout,
                min_rate: args.body_min_rate,
            },
            deadline: args.request_timeout,
        },
        inject: InjectSettings {
            native_mode: native,
            openshift,
            compliance_policy: compliance.clone(),
            revision: args.kube.revision.to_string(),
            namespaces: load_namespaces(args.namespace_annotations.as_deref())?,
            max_list_entries: args.max_list_entries,
        },
        permits: Semaphore::new(args.max_concurrency.max(1)),
        review_slots: Arc::new(Semaphore::new(
            args.max_concurrency.clamp(1, Semaphore::MAX_PERMITS),
        )),
        quick_reviews: Semaphore::new(worker_threads(args)),
        budget,
        draining: AtomicBool::new(false),
        cluster: facts,
        events,
        config_health: health,
        trust: trust::Trust::default(),
    });
    if let Some(c) = cluster.as_mut() {
        c.spawn_updates(state.clone());
    }

    let cert_files = match (&args.tls_cert_file, &args.tls_key_file) {
        (Some(cert), Some(key)) => Some(reload::CertFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    let _watcher = reload::spawn(
        state.clone(),
        file_texts.map(|t| (paths, t)),
        cert_files,
        client_auth,
        args.reload_debounce,
    )?;

    let addr = SocketAddr::new(args.address, args.port);
    let listener = listen::bind(args.address, args.port)?;
    let metrics_listener = metrics_port::bind(args.address, args.metrics_port)?;
    let local = listener.local_addr().unwrap_or(addr);
    if let Some(ca) = pending_ca {
        ca.write()?;
    }
    tracing::info!(address = %local, "outrigger webhook listening (HTTPS, h2 + http/1.1)");

    let (stop_tx, stop_rx) = watch::channel(false);
    if let Some(port) = args.health_port {
        let addr = SocketAddr::new(args.address, port);
        let health = listen::bind(args.address, port).context("--health-port")?;
        let local = health.local_addr().unwrap_or(addr);
        tracing::info!(address = %local, "health endpoints listening (plain HTTP: /healthz, /readyz)");
        tokio::spawn(health::serve(health, state.clone(), stop_rx.clone()));
    }
    let admission = admit::Admission::new(admit::AdmitLimits {
        handshakes: args.max_handshakes.max(1),
        handshakes_per_address: args.max_handshakes_per_address.max(1),
        connections: args.max_connections.max(1),
        connections_per_address: args.max_connections_per_address.max(1),
        trusted: args.api_server_cidrs.clone(),
        reserve: !args.api_server_cidrs.is_empty() || args.client_ca_file.is_some(),
    });
    let opts = server::ConnOptions {
        health_reserve: HEALTH_RESERVE,
        handshake_timeout: args.handshake_timeout,
        header_read_timeout: args.header_read_timeout,
        idle_timeout: args.idle_timeout,
        write_timeout: args.write_timeout,
        grace: args.shutdown_grace,
        h2: conn::Http2Limits::new(args.max_concurrent_streams, args.http2_keepalive_interval),
    };
    if let Some(c) = cluster.as_mut() {
        c.spawn_trust_check(state.clone(), args.kube.webhook_config_name.clone());
        c.spawn_activation(state.clone(), args.kube.activation_delay);
        if let (Some(every), Some(ns)) = (args.kube.probe_interval, &args.kube.probe_namespace) {
            c.spawn_probe(state.clone(), ns.clone(), every);
        }
        if args.kube.watch_pods {
            c.spawn_pod_watch(state.clone(), args.kube.webhook_config_name.clone());
        }
    }
    if let Some(l) = metrics_listener {
        metrics_port::spawn(l, state.metrics.clone(), stop_rx.clone())?;
    }
    let server = tokio::spawn(server::serve(
        listener,
        acceptor,
        state.clone(),
        stop_rx,
        opts,
        admission,
    ));

    let mut signals = Signals::install()?;
    let signal = signals.next().await;
    state.draining.store(true, Ordering::Relaxed);
    // A second SIGTERM or SIGINT ends the process at once (the same streams: none is missed).
    tokio::spawn(async move {
        let again = signals.next().await;
        tracing::warn!(signal = again, "second signal: exiting without draining");
        flush_log();
        std::process::exit(1);
    });
    // Said at once, with what is left to wait for and how to skip it.
    let open = state.metrics.open_connections.get();
    tracing::info!(
        signal,
        open_connections = open,
        drain_delay = ?args.drain_delay,
        shutdown_grace = ?args.shutdown_grace,
        "shutdown requested: not ready, still serving during the drain delay, then draining {} \
         (up to {:?} in all; a second {signal} exits at once)",
        crate::print::count(open.max(0) as usize, "open connection", "open connections"),
        args.drain_delay + args.shutdown_grace,
    );
    let drained = tokio::time::sleep(args.drain_delay);
    if let Some(c) = &cluster {
        c.on_shutdown(SHUTDOWN_API_LIMIT).await;
    }
    drained.await;
    let _ = stop_tx.send(true);
    if let Err(e) = server.await {
        bail!("server task failed: {e}");
    }
    state.permits.close();
    if let Some(c) = cluster {
        c.abort();
    }
    tracing::info!("shutdown complete");
    Ok(())
}

/// How long the API calls made when told to stop may take (they run during the drain delay).
const SHUTDOWN_API_LIMIT: Duration = Duration::from_secs(5);

/// Connections accepted beyond `--max-connections` that answer only the health endpoints.
const HEALTH_RESERVE: usize = 8;

/// Read `--namespace-annotations`.
fn load_namespaces(
    path: Option<&std::path::Path>,
) -> Result<Option<BTreeMap<String, Map<String, Value>>>> {
    let Some(path) = path else { return Ok(None) };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: BTreeMap<String, Map<String, Value>> =
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: expected {{\"<namespace>\": {{\"<annotation>\": \"<value>\"}}}}",
                path.display()
            )
        })?;
    Ok(Some(v))
}

/// SIGTERM and SIGINT, received from installation on.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    /// The next signal's name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

#[cfg(test)]
mod log_tests {
    use super::*;

    #[test]
    fn kube_rs_failure_log_is_off_unless_asked_for() {
        let quiet = log_filter(None, "info").to_string();
        assert!(
            quiet.contains("kube_client::client::builder=off"),
            "{quiet}"
        );
        let asked = log_filter(Some("kube_client=debug"), "info").to_string();
        assert!(!asked.contains("=off"), "{asked}");
        let level = log_filter(None, "debug").to_string();
        assert!(level.contains("debug"), "{level}");
    }
}
