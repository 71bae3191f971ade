//! Flags of `outrigger serve` (and its `--kube` group).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::defaults;
use outrigger_inject::decide::native::NativeMode;

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
    /// Also serve `/healthz` and `/readyz` (only) over plain HTTP on this port, for kubelet
    /// probes: connections to the HTTPS port cannot crowd them out, and they need no client
    /// certificate when --clientCaFile is set. The shipped Deployment probes it.
    #[arg(long = "health-port")]
    pub health_port: Option<u16>,
    /// Address to listen on. `::` (the default) listens on IPv6 and IPv4 alike (one socket with
    /// IPV6_V6ONLY off), falling back to 0.0.0.0 where the host has no IPv6.
    #[arg(long = "address", default_value = "::")]
    pub address: IpAddr,
    /// Serving certificate chain (PEM). Without it the certificate comes from the Secret (with
    /// `--kube`) or a self-signed CA and certificate are generated.
    #[arg(long = "tlsCertFile", requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Serving private key (PEM).
    #[arg(long = "tlsKeyFile", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// CA bundle (PEM) of the clients allowed to call: every TLS handshake must present a client
    /// certificate that chains to it (the API server's, from its admission-control kubeconfig;
    /// see docs/serve.md). Reloaded when the file changes. Health probes then need a client
    /// certificate too, or --health-port.
    #[arg(long = "clientCaFile")]
    pub client_ca_file: Option<PathBuf>,
    /// With --clientCaFile: accept only client certificates whose subject common name or a
    /// subject alternative name (DNS, URI, email, IP) is one of these (repeat the flag or
    /// separate with commas).
    #[arg(
        long = "client-allowed-names",
        value_delimiter = ',',
        requires = "client_ca_file"
    )]
    pub client_allowed_names: Vec<String>,
    /// Where the generated CA bundle is written (default: `<temp dir>/outrigger/ca.pem`).
    #[arg(long = "caBundleFile")]
    pub ca_bundle_file: Option<PathBuf>,
    /// Service name the generated certificate covers (`<svc>.<ns>.svc` and variants).
    #[arg(long = "service", default_value = defaults::SERVICE)]
    pub service: String,
    /// Namespace the generated certificate covers (the injector's own: POD_NAMESPACE in a pod).
    #[arg(long = "namespace", env = "POD_NAMESPACE", default_value = defaults::NAMESPACE)]
    pub namespace: String,
    /// Extra DNS names or IP addresses for the generated certificate.
    #[arg(long = "dns-name")]
    pub dns_names: Vec<String>,
    /// Injector config file (the `config` key of the istio-sidecar-injector ConfigMap, or the
    /// whole ConfigMap), as every command names it (`--injectConfig` is its former name)
    /// [default: /etc/istio/inject/config].
    #[arg(long = "injectConfigFile", alias = "injectConfig")]
    pub inject_config: Option<PathBuf>,
    /// Injector values file (the `values` key of the same ConfigMap, or the whole ConfigMap;
    /// `--injectValues` is its former name) [default: /etc/istio/inject/values].
    #[arg(long = "valuesFile", alias = "injectValues")]
    pub inject_values: Option<PathBuf>,
    /// Mesh config file (the `mesh` key of the istio ConfigMap, or the whole ConfigMap;
    /// `--meshConfig` is its former name) [default: /etc/istio/config/mesh].
    #[arg(long = "meshConfigFile", alias = "meshConfig")]
    pub mesh_config: Option<PathBuf>,
    /// Directory holding the three inputs as files named after their ConfigMap keys: `config`,
    /// `values` (both required) and `mesh` (optional: else the embedded mesh config), as
    /// `kubectl get cm istio-sidecar-injector -o jsonpath='{.data.config}' > DIR/config` (and
    /// `{.data.values}`, and `kubectl get cm istio -o jsonpath='{.data.mesh}'`) write them, as
    /// every command takes it; watched like the files. A file flag overrides its input.
    #[arg(long = "config-dir", value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
    /// Native sidecars: true, false or auto (default: ENABLE_NATIVE_SIDECARS, else auto).
    #[arg(long = "native-sidecars", value_parser = crate::cli::values::native_mode())]
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
    #[arg(long = "request-timeout", default_value = defaults::REQUEST_TIMEOUT, value_parser = crate::cli::values::duration)]
    pub request_timeout: Duration,
    /// Most entries a list of a pod to inject may hold (its containers, init and ephemeral
    /// containers counted together; volumes; a container's env; ...): a pod over it is refused
    /// (allowed: false, reason too_large) before rendering. Keeps a review's cost bounded.
    #[arg(long = "max-list-entries", default_value_t = outrigger_inject::webhook::MAX_LIST_ENTRIES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_list_entries: usize,
    /// Admission requests processed at once; more wait (within their deadline).
    #[arg(long = "max-concurrency", default_value_t = 256)]
    pub max_concurrency: usize,
    /// Maximum open connections past their TLS handshake. A connection beyond it, or beyond
    /// its address's share, first closes the connection idle the longest (of that address, for
    /// the share); when none is idle, a reserve of 8 more connections answers only `/healthz`
    /// and `/readyz` (one request each), and further connections are closed at once.
    #[arg(long = "max-connections", default_value_t = 4096)]
    pub max_connections: usize,
    /// Connections past their TLS handshake from one source address (--api-server-cidrs and
    /// client-certificate callers excepted).
    #[arg(long = "max-connections-per-address", default_value_t = 128)]
    pub max_connections_per_address: usize,
    /// Connections still in their TLS handshake, a pool separate from --max-connections. When
    /// it is full, a newcomer takes the place of the oldest handshake of the address holding
    /// the most (if it holds more than the newcomer's); otherwise it is closed at once.
    #[arg(long = "max-handshakes", default_value_t = 256)]
    pub max_handshakes: usize,
    /// Connections still in their TLS handshake from one source address (--api-server-cidrs
    /// excepted).
    #[arg(long = "max-handshakes-per-address", default_value_t = 16)]
    pub max_handshakes_per_address: usize,
    /// Source ranges of the API server (CIDR or address; repeat the flag or separate with
    /// commas): their connections are held to no per-address share, keep a quarter of each
    /// pool reserved and are never closed for others. Callers with a verified client certificate
    /// (--clientCaFile) are treated so once their handshake completes.
    #[arg(long = "api-server-cidrs", value_delimiter = ',')]
    pub api_server_cidrs: Vec<super::admit::Cidr>,
    /// Bound on request body bytes held at once by all requests; a request that does not fit
    /// is answered `429` with `Retry-After`. Reviews over 128 KiB are processed one per worker
    /// thread at a time (each takes about 8 times its size while processed), so the default
    /// (24 MiB) keeps the server well under the deployment's 256Mi memory limit. At least
    /// --max-request-bytes.
    #[arg(long = "max-inflight-bytes", default_value_t = 24 * 1024 * 1024)]
    pub max_inflight_bytes: usize,
    /// Bound on request body bytes held at once by one connection (all its HTTP/2 streams); a
    /// request beyond it is answered `429`. At least --max-request-bytes.
    #[arg(long = "max-connection-bytes", default_value_t = 8 * 1024 * 1024)]
    pub max_connection_bytes: usize,
    /// Time allowed between the end of a request head and the first byte of its body (`408`
    /// beyond).
    #[arg(long = "body-first-byte-timeout", default_value = "2s", value_parser = crate::cli::values::duration)]
    pub body_first_byte_timeout: Duration,
    /// Minimum rate of a request body after its first-byte allowance, in bytes per second: `n`
    /// bytes must have arrived by --body-first-byte-timeout + n / rate after the head (`408`
    /// otherwise). 0 turns the minimum off (--request-timeout still applies).
    #[arg(long = "body-min-rate", default_value_t = 256 * 1024)]
    pub body_min_rate: u64,
    /// HTTP/2: requests in flight at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS);
    /// the API server opens another connection beyond it.
    #[arg(long = "max-concurrent-streams", default_value_t = 100)]
    pub max_concurrent_streams: u32,
    /// HTTP/2: interval of the server's PINGs; a client that does not answer one within 10 s is
    /// disconnected. 0 turns them off.
    #[arg(long = "http2-keepalive-interval", default_value = "30s", value_parser = crate::cli::values::duration)]
    pub http2_keepalive_interval: Duration,
    /// Deadline of the TLS handshake (from accept, the client's first byte included).
    #[arg(long = "handshake-timeout", default_value = "3s", value_parser = crate::cli::values::duration)]
    pub handshake_timeout: Duration,
    /// Time allowed for a request's headers to arrive in full (HTTP/1.1; for the first request,
    /// counted from the handshake).
    #[arg(long = "header-read-timeout", default_value = "10s", value_parser = crate::cli::values::duration)]
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed (HTTP/1.1 with TLS
    /// close_notify, HTTP/2 with GOAWAY). Keep it above the clients' keep-alive so that they
    /// close first: the API server keeps idle connections for 90 s.
    #[arg(long = "idle-timeout", default_value = "90s", value_parser = crate::cli::values::duration)]
    pub idle_timeout: Duration,
    /// An answer that makes no progress for this long (an HTTP/2 stream at flow-control window
    /// 0, a client that does not read) closes its connection, resetting its streams.
    #[arg(long = "write-timeout", default_value = "10s", value_parser = crate::cli::values::duration)]
    pub write_timeout: Duration,
    /// With --events and --watch-pods: how long the Event of a review from a caller that
    /// presented no client certificate waits for the pod it named to be seen created by the pod
    /// watch; written then, dropped after (`outrigger_events_dropped_total{reason="not_created"}`).
    #[arg(long = "events-hold", default_value = "30s", value_parser = crate::cli::values::duration)]
    pub events_hold: Duration,
    /// After SIGTERM, keep serving (but report not ready) this long before closing the listener.
    #[arg(long = "drain-delay", default_value = "5s", value_parser = crate::cli::values::duration)]
    pub drain_delay: Duration,
    /// After closing the listener, time allowed for in-flight requests.
    #[arg(long = "shutdown-grace", default_value = "20s", value_parser = crate::cli::values::duration)]
    pub shutdown_grace: Duration,
    /// Serve, and report ready with, a configuration that cannot inject pods (no templates, or
    /// default templates that add no container or init container to a plain pod, or render a pod
    /// the API server would refuse). Without it such a configuration
    /// keeps `/readyz` failing, and a reload never replaces a usable configuration with one.
    #[arg(long = "allow-empty-config")]
    pub allow_empty_config: bool,
    /// Debounce of file-change events before a reload.
    #[arg(long = "reload-debounce", default_value = "100ms", value_parser = crate::cli::values::duration)]
    pub reload_debounce: Duration,
    /// JSON file `{"<namespace>": {"<annotation>": "<value>"}}`: Namespace annotations used with
    /// `PLATFORM=openshift` (UID/GID ranges) where the server has no Kubernetes API access.
    #[arg(long = "namespace-annotations")]
    pub namespace_annotations: Option<PathBuf>,
    /// Tokio worker threads (default: number of CPUs).
    #[arg(long = "worker-threads")]
    pub worker_threads: Option<usize>,
    /// Serve `/metrics` (only) over plain HTTP on this port too, for Prometheus (istiod's
    /// monitoring port by default); `off` turns it off, 0 picks a free port.
    #[arg(
        long = "metrics-port",
        default_value = "15014",
        value_name = "PORT|off",
        value_parser = super::metrics_port::parse_port
    )]
    pub metrics_port: super::metrics_port::MetricsPort,
    /// What the templates may read of the environment.
    #[command(flatten)]
    pub env: crate::cli::common::TemplateEnvArgs,
    /// Kubernetes API integration (`--kube` and its flags).
    #[command(flatten)]
    pub kube: crate::cli::common::KubeArgs,
}

impl ServeArgs {
    /// The configuration files to read and watch: the flags, with `--config-dir`'s files for
    /// the inputs not given (read as every command reads `--config-dir`:
    /// [`crate::config_source::ConfigPaths::resolved`]), else Istio's mount paths.
    pub fn config_paths(&self) -> anyhow::Result<super::snapshot::Paths> {
        let files = crate::config_source::ConfigPaths {
            inject_config_file: self.inject_config.clone(),
            values_file: self.inject_values.clone(),
            mesh_config_file: self.mesh_config.clone(),
            config_dir: self.config_dir.clone(),
        }
        .resolved()?;
        let or = |p: Option<PathBuf>, default: &str| p.unwrap_or_else(|| PathBuf::from(default));
        // The directory's mesh file is watched even while absent (a mesh config added later is
        // read), never Istio's mount path.
        let mesh = files.mesh_config_file.or_else(|| {
            self.config_dir
                .as_ref()
                .map(|d| d.join(crate::config_source::CONFIG_DIR_FILES[2]))
        });
        Ok(super::snapshot::Paths::new(
            or(files.inject_config_file, super::snapshot::DEFAULT_CONFIG),
            or(files.values_file, super::snapshot::DEFAULT_VALUES),
            or(mesh, super::snapshot::DEFAULT_MESH),
        ))
    }
}

/// The former names of `serve`'s configuration flags (hidden aliases now) and their names, as
/// every command spells them.
pub const RENAMED: [(&str, &str); 3] = [
    ("injectConfig", "injectConfigFile"),
    ("injectValues", "valuesFile"),
    ("meshConfig", "meshConfigFile"),
];

/// The former names given on the command line `argv` (`--injectConfig X` or
/// `--injectConfig=X`), with their names now, for a deprecation warning.
pub fn former_names_used<S: AsRef<str>>(argv: &[S]) -> Vec<(&'static str, &'static str)> {
    RENAMED
        .into_iter()
        .filter(|(old, _)| {
            argv.iter().any(|a| {
                a.as_ref()
                    .strip_prefix("--")
                    .and_then(|rest| rest.strip_prefix(old))
                    .is_some_and(|tail| tail.is_empty() || tail.starts_with('='))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn former_names_are_found_in_both_forms() {
        let argv = [
            "serve",
            "--injectConfig=/a",
            "--meshConfig",
            "/m",
            "--injectConfigFile",
        ];
        assert_eq!(
            former_names_used(&argv),
            [
                ("injectConfig", "injectConfigFile"),
                ("meshConfig", "meshConfigFile")
            ]
        );
        assert!(former_names_used(&["serve", "--valuesFile", "v"]).is_empty());
    }
}
