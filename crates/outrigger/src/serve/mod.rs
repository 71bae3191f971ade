//! `outrigger serve`: the Kubernetes mutating admission webhook (issue 3).
//!
//! HTTPS (rustls, TLS 1.2/1.3, ALPN h2 + http/1.1) on `--port` (default 9443) with routes
//! `/inject`, `/inject/...`, `/healthz`, `/readyz`, `/metrics`. Configuration comes from Istio's
//! mounted layout or the embedded default and is hot-reloaded; certificates are loaded from
//! `--tlsCertFile`/`--tlsKeyFile` (hot-reloaded) or generated at start-up. With `--kube`
//! ([`kube_mode`]), certificates come from a Secret, configuration from ConfigMaps, and cluster
//! facts and Events from the Kubernetes API.

pub mod body;
pub mod cluster;
pub mod conn;
pub mod failsafe;
pub mod handler;
pub mod kube_mode;
pub mod metrics;
pub mod reload;
pub mod server;
pub mod snapshot;
pub mod tls;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use arc_swap::ArcSwap;
use outrigger_inject::config::Snapshot;
use outrigger_inject::webhook::NativeMode;
use serde_json::{Map, Value};
use tokio::sync::{watch, Semaphore};

use crate::settings;
use handler::{InjectSettings, Limits, State};

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Flags of `outrigger serve` (Istio's names where Istio has one).
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// HTTPS port.
    #[arg(long = "port", default_value_t = 9443)]
    pub port: u16,
    /// Address to listen on.
    #[arg(long = "address", default_value = "0.0.0.0")]
    pub address: IpAddr,
    /// Serving certificate chain (PEM). Without it the certificate comes from the Secret (with
    /// `--kube`) or a self-signed CA and certificate are generated.
    #[arg(long = "tlsCertFile", requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Serving private key (PEM).
    #[arg(long = "tlsKeyFile", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Where the generated CA bundle is written (default: <temp dir>/outrigger/ca.pem).
    #[arg(long = "caBundleFile")]
    pub ca_bundle_file: Option<PathBuf>,
    /// Service name the generated certificate covers (`<svc>.<ns>.svc` and variants).
    #[arg(long = "service", default_value = "outrigger")]
    pub service: String,
    /// Namespace the generated certificate covers.
    #[arg(
        long = "namespace",
        env = "POD_NAMESPACE",
        default_value = "istio-system"
    )]
    pub namespace: String,
    /// Extra DNS names or IP addresses for the generated certificate.
    #[arg(long = "dns-name")]
    pub dns_names: Vec<String>,
    /// Injector config (the `config` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "injectConfig", default_value = "/etc/istio/inject/config")]
    pub inject_config: PathBuf,
    /// Injector values (the `values` key).
    #[arg(long = "injectValues", default_value = "/etc/istio/inject/values")]
    pub inject_values: PathBuf,
    /// Mesh config (the `mesh` key of the istio ConfigMap).
    #[arg(long = "meshConfig", default_value = "/etc/istio/config/mesh")]
    pub mesh_config: PathBuf,
    /// Native sidecars: true, false or auto (default: ENABLE_NATIVE_SIDECARS, else auto).
    #[arg(long = "native-sidecars", value_parser = settings::native_mode_flag())]
    pub native_sidecars: Option<NativeMode>,
    /// Log format.
    #[arg(long = "log-format", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Log filter (`RUST_LOG` syntax); RUST_LOG wins when set.
    #[arg(long = "log-level", default_value = "info")]
    pub log_level: String,
    /// Maximum request body in bytes (413 beyond).
    #[arg(long = "max-request-bytes", default_value_t = 3 * 1024 * 1024)]
    pub max_request_bytes: usize,
    /// Deadline for one admission request (keep it below the webhook's timeoutSeconds).
    #[arg(long = "request-timeout", default_value = "8s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Admission requests processed at once; more wait (within their deadline).
    #[arg(long = "max-concurrency", default_value_t = 256)]
    pub max_concurrency: usize,
    /// Maximum open connections. Beyond it, a reserve of 8 more connections answers only
    /// `/healthz` and `/readyz` (one request each); further connections are closed at once.
    #[arg(long = "max-connections", default_value_t = 4096)]
    pub max_connections: usize,
    /// Bound on request body bytes held at once by all requests; a request that does not fit
    /// is answered `429` with `Retry-After`. Reviews over 128 KiB are processed one per worker
    /// thread at a time (each takes about 8 times its size while processed), so the default
    /// (24 MiB) keeps the server well under the deployment's 256Mi memory limit. At least
    /// --max-request-bytes.
    #[arg(long = "max-inflight-bytes", default_value_t = 24 * 1024 * 1024)]
    pub max_inflight_bytes: usize,
    /// Deadline of the TLS handshake.
    #[arg(long = "handshake-timeout", default_value = "10s", value_parser = parse_duration)]
    pub handshake_timeout: Duration,
    /// Time allowed for a request's headers to arrive in full (HTTP/1.1; for the first request,
    /// counted from the handshake).
    #[arg(long = "header-read-timeout", default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed (HTTP/1.1 with TLS
    /// close_notify, HTTP/2 with GOAWAY). Keep it above the clients' keep-alive so that they
    /// close first: the API server keeps idle connections for 90 s.
    #[arg(long = "idle-timeout", default_value = "90s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// After SIGTERM, keep serving (but report not ready) this long before closing the listener.
    #[arg(long = "drain-delay", default_value = "5s", value_parser = parse_duration)]
    pub drain_delay: Duration,
    /// After closing the listener, time allowed for in-flight requests.
    #[arg(long = "shutdown-grace", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,
    /// Serve, and report ready with, a configuration that cannot inject pods (no templates, or
    /// default templates that render no istio-proxy container). Without it such a configuration
    /// keeps `/readyz` failing, and a reload never replaces a usable configuration with one.
    #[arg(long = "allow-empty-config")]
    pub allow_empty_config: bool,
    /// Debounce of file-change events before a reload.
    #[arg(long = "reload-debounce", default_value = "100ms", value_parser = parse_duration)]
    pub reload_debounce: Duration,
    /// JSON file `{"<namespace>": {"<annotation>": "<value>"}}`: Namespace annotations used with
    /// `PLATFORM=openshift` (UID/GID ranges) where the server has no Kubernetes API access.
    #[arg(long = "namespace-annotations")]
    pub namespace_annotations: Option<PathBuf>,
    /// Tokio worker threads (default: number of CPUs).
    #[arg(long = "worker-threads")]
    pub worker_threads: Option<usize>,
    /// Kubernetes API integration (`--kube` and its flags).
    #[command(flatten)]
    pub kube: crate::kube::runtime::KubeArgs,
}

/// Parse `500ms`, `8s`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("invalid duration unit in {s:?} (use ms, s or m)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {s:?}: {e}"))
}

fn init_logging(args: &ServeArgs) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&args.log_level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match args.log_format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
}

/// Run the webhook until SIGTERM/SIGINT.
pub fn run(args: &ServeArgs) -> Result<()> {
    outrigger_alloc::tune();
    init_logging(args);
    tracing::debug!(allocator = %outrigger_alloc::describe(), "allocator settings");
    let threads = args
        .worker_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(run_async(args))
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// The native-sidecar mode from the flag or `ENABLE_NATIVE_SIDECARS`. Without a Kubernetes node
/// client (`--kube`), `auto` cannot inspect kubelets and means "not native" (logged once here).
fn native_mode(flag: Option<NativeMode>, kube: bool) -> NativeMode {
    let env = std::env::var("ENABLE_NATIVE_SIDECARS").ok();
    let (mode, warning) = settings::native_mode(flag, env.as_deref());
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
        svc.clone(),
        format!("{svc}.{ns}"),
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.cluster.local"),
    ];
    names.extend(args.dns_names.iter().cloned());
    names.dedup();
    names
}

/// Load or generate the serving certificate.
fn initial_certificate(args: &ServeArgs, compliance: &str) -> Result<tls::Loaded> {
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_key_file) {
        let loaded = tls::load_files(cert, key, compliance)?;
        tracing::info!(cert = %cert.display(), not_after = loaded.not_after, "serving certificate loaded");
        return Ok(loaded);
    }
    let names = certificate_names(args);
    let generated = tls::generate(&names, 365).context("generating a self-signed certificate")?;
    let bundle = args
        .ca_bundle_file
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("outrigger").join("ca.pem"));
    tls::write_atomic(&bundle, generated.ca_pem.as_bytes())
        .with_context(|| format!("writing the CA bundle to {}", bundle.display()))?;
    tracing::info!(ca_bundle = %bundle.display(), names = ?names, "generated a self-signed CA and serving certificate; CA bundle written");
    tls::load_pem(
        generated.cert_pem.as_bytes(),
        generated.key_pem.as_bytes(),
        compliance,
    )
}

/// Read and parse the configuration files (or the embedded default).
async fn file_config(paths: &snapshot::Paths) -> Result<(Snapshot, snapshot::Texts)> {
    let texts = snapshot::read(paths)?;
    let t = texts.clone();
    let snap = tokio::task::spawn_blocking(move || snapshot::build(&t))
        .await
        .context("loading the configuration")??;
    for w in &snap.config.warnings {
        tracing::warn!("{w}");
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
    let compliance = env("COMPLIANCE_POLICY");
    let paths = snapshot::Paths {
        config: args.inject_config.clone(),
        values: args.inject_values.clone(),
        mesh: args.mesh_config.clone(),
    };
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
        Some(c) => c.first_config().await?,
        None => None,
    };
    let (snap, file_texts) = match from_api {
        Some(s) => (s, None),
        None => {
            let (s, texts) = file_config(&paths).await?;
            (Arc::new(s), Some(texts))
        }
    };

    let health = failsafe::initial(&snap, native, args.allow_empty_config, "start-up");
    let metrics = metrics::Metrics::new();
    metrics
        .inflight_bytes_limit
        .set(i64::try_from(args.max_inflight_bytes).unwrap_or(i64::MAX));
    metrics.reload("config", true);
    metrics
        .config_usable
        .set(i64::from(health.verdict().is_ok()));
    let cert = match cluster.as_ref().and_then(|c| c.services.certs.as_ref()) {
        Some(rx) => kube_mode::load_bundle(&rx.borrow(), &compliance)
            .context("loading the certificate from the Secret")?,
        None => initial_certificate(args, &compliance)?,
    };
    metrics.cert_expiry.set(cert.not_after);
    metrics.reload("certificate", true);
    let certs = tls::CertStore::new(cert);
    let tls_config = tls::server_config(certs.clone(), &compliance)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls_config));

    let (facts, events) = match &cluster {
        Some(c) => (Some(c.facts()), c.events()),
        None => (None, None),
    };
    let workers = args
        .worker_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let budget = body::ByteBudget::new(
        args.max_inflight_bytes,
        workers,
        metrics.inflight_bytes.clone(),
    );
    let state = Arc::new(State {
        snapshot: ArcSwap::new(snap),
        certs,
        metrics,
        limits: Limits {
            max_body: args.max_request_bytes,
            deadline: args.request_timeout,
        },
        inject: InjectSettings {
            native_mode: native,
            openshift,
            compliance_policy: compliance.clone(),
            namespaces: load_namespaces(args.namespace_annotations.as_deref())?,
        },
        permits: Semaphore::new(args.max_concurrency.max(1)),
        budget,
        draining: AtomicBool::new(false),
        cluster: facts,
        events,
        config_health: health,
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
        args.reload_debounce,
    )?;

    let addr = SocketAddr::new(args.address, args.port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener.local_addr().unwrap_or(addr);
    tracing::info!(address = %local, "outrigger webhook listening (HTTPS, h2 + http/1.1)");

    let (stop_tx, stop_rx) = watch::channel(false);
    let opts = server::ConnOptions {
        max_connections: args.max_connections.max(1),
        health_reserve: HEALTH_RESERVE,
        handshake_timeout: args.handshake_timeout,
        header_read_timeout: args.header_read_timeout,
        idle_timeout: args.idle_timeout,
        grace: args.shutdown_grace,
        max_streams: 256,
    };
    let server = tokio::spawn(server::serve(
        listener,
        acceptor,
        state.clone(),
        stop_rx,
        opts,
    ));

    let mut signals = Signals::install()?;
    let signal = signals.next().await;
    state.draining.store(true, Ordering::Relaxed);
    // A second SIGTERM or SIGINT ends the process at once (the same streams: none is missed).
    tokio::spawn(async move {
        let again = signals.next().await;
        tracing::warn!(signal = again, "second signal: exiting without draining");
        std::process::exit(1);
    });
    tracing::info!(signal, drain_delay = ?args.drain_delay, "shutdown requested: not ready, still serving during the drain delay");
    tokio::time::sleep(args.drain_delay).await;
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
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("8s"), Ok(Duration::from_secs(8)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("5h").is_err());
        assert!(parse_duration("x").is_err());
    }
}
