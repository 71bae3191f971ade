//! Prometheus metrics with Istio's names (`sidecar_injection_*`), plus a `reason` label on skips and
//! failures, latency buckets from 50 µs, and reload / certificate gauges.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use outrigger_inject::guard::{Adds, Unusable};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// `reason` label of skip and failure counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// Decision reason code or failure code.
    pub reason: String,
}

/// Labels of the reload counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabel {
    /// `config` or `certificate`.
    pub kind: String,
    /// `success` or `failure`.
    pub result: String,
}

/// Labels of per-kind gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// `config` or `certificate`.
    pub kind: String,
}

/// Labels of `outrigger_config_unsupported_features`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FeatureLabel {
    /// The template's name.
    pub template: String,
    /// `sprig:NAME`, `function:NAME` or `syntax` ([`outrigger_inject::unsupported::Finding::feature`]).
    pub feature: String,
}

/// Labels of `outrigger_admission_probe_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// `injected`, `not_injected`, `refused` or `error` (`serve --probe-interval`).
    pub outcome: String,
}

/// All metrics of the server.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `sidecar_injection_requests_total`.
    pub requests: Counter,
    /// `sidecar_injection_success_total` (every admission response written).
    pub success: Counter,
    /// `sidecar_injection_skip_total{reason}`.
    pub skip: Family<ReasonLabel, Counter>,
    /// `sidecar_injection_failure_total{reason}`.
    pub failure: Family<ReasonLabel, Counter>,
    /// `sidecar_injection_time_seconds`.
    pub time: Histogram,
    /// `outrigger_injections_total` (pods that received a patch).
    pub injected: Counter,
    /// `outrigger_reloads_total{kind,result}`.
    pub reloads: Family<ReloadLabel, Counter>,
    /// `outrigger_reload_last_success{kind}`: 1 when the last reload attempt succeeded.
    pub reload_ok: Family<KindLabel, Gauge>,
    /// `outrigger_reload_last_success_timestamp_seconds{kind}`.
    pub reload_time: Family<KindLabel, Gauge<f64, AtomicU64>>,
    /// `outrigger_certificate_expiry_timestamp_seconds`.
    pub cert_expiry: Gauge,
    /// `outrigger_inflight_requests`.
    pub inflight: Gauge,
    /// `outrigger_config_usable`: 1 when the configuration in force can inject pods.
    pub config_usable: Gauge,
    /// `outrigger_config_unsupported_features{template,feature}`: uses, in the templates of the
    /// last configuration read (in force or refused), of what outrigger does not implement.
    pub unsupported: Family<FeatureLabel, Gauge>,
    /// `outrigger_inflight_request_bytes`: request body bytes held by requests in flight.
    pub inflight_bytes: Gauge,
    /// `outrigger_inflight_request_bytes_limit` (`--max-inflight-bytes`).
    pub inflight_bytes_limit: Gauge,
    /// `outrigger_rejected_requests_total{reason}`: requests refused for load (`inflight_bytes`:
    /// 429, `connection_limit`: 503 on a connection of the health reserve).
    pub rejected: Family<ReasonLabel, Counter>,
    /// `outrigger_open_connections`.
    pub open_connections: Gauge,
    /// `outrigger_connections_rejected_total`: connections closed at accept (limit and health
    /// reserve full).
    pub connections_rejected: Counter,
    /// `outrigger_connections_closed_total{reason}`: connections the server closed on a timeout
    /// (`handshake_timeout`, `header_timeout`, `idle_timeout`).
    pub connections_closed: Family<ReasonLabel, Counter>,
    /// `outrigger_admission_probe_total{outcome}` (`--probe-interval`).
    pub probe: Family<OutcomeLabel, Counter>,
    /// `outrigger_admission_probe_last_injected_timestamp_seconds` (`--probe-interval`).
    pub probe_last_injected: Gauge<f64, AtomicU64>,
}

impl Metrics {
    /// Set `outrigger_config_unsupported_features` from the verdict on the configuration just
    /// read: the findings' counts by (template, feature), every other series removed.
    pub fn set_unsupported(&self, verdict: &Result<Adds, Unusable>) {
        self.unsupported.clear();
        if let Err(Unusable::Unsupported(found)) = verdict {
            for f in found {
                let label = FeatureLabel {
                    template: f.template.clone(),
                    feature: f.feature(),
                };
                self.unsupported.get_or_create(&label).inc();
            }
        }
    }

    /// Register every metric.
    pub fn new() -> Arc<Metrics> {
        let mut registry = Registry::default();
        let requests = Counter::default();
        let success = Counter::default();
        let skip = Family::<ReasonLabel, Counter>::default();
        let failure = Family::<ReasonLabel, Counter>::default();
        let time = Histogram::new(exponential_buckets(0.000_05, 2.0, 20));
        let injected = Counter::default();
        let reloads = Family::<ReloadLabel, Counter>::default();
        let reload_ok = Family::<KindLabel, Gauge>::default();
        let reload_time = Family::<KindLabel, Gauge<f64, AtomicU64>>::default();
        let cert_expiry = Gauge::default();
        let inflight = Gauge::default();
        let config_usable = Gauge::default();
        let unsupported = Family::<FeatureLabel, Gauge>::default();
        let inflight_bytes = Gauge::default();
        let inflight_bytes_limit = Gauge::default();
        let rejected = Family::<ReasonLabel, Counter>::default();
        let open_connections = Gauge::default();
        let connections_rejected = Counter::default();
        let connections_closed = Family::<ReasonLabel, Counter>::default();
        let probe = Family::<OutcomeLabel, Counter>::default();
        let probe_last_injected = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "sidecar_injection_requests",
            "Total number of sidecar injection requests",
            requests.clone(),
        );
        registry.register(
            "sidecar_injection_success",
            "Total number of successful sidecar injection requests",
            success.clone(),
        );
        registry.register(
            "sidecar_injection_skip",
            "Total number of skipped sidecar injection requests, by reason",
            skip.clone(),
        );
        registry.register(
            "sidecar_injection_failure",
            "Total number of failed sidecar injection requests, by reason",
            failure.clone(),
        );
        registry.register(
            "sidecar_injection_time_seconds",
            "Total time taken for injection in seconds",
            time.clone(),
        );
        registry.register(
            "outrigger_injections",
            "Pods that received a sidecar patch",
            injected.clone(),
        );
        registry.register(
            "outrigger_reloads",
            "Configuration and certificate reload attempts",
            reloads.clone(),
        );
        registry.register(
            "outrigger_reload_last_success",
            "1 when the last reload attempt of this kind succeeded",
            reload_ok.clone(),
        );
        registry.register(
            "outrigger_reload_last_success_timestamp_seconds",
            "Unix time of the last successful load of this kind",
            reload_time.clone(),
        );
        registry.register(
            "outrigger_certificate_expiry_timestamp_seconds",
            "Unix time at which the serving certificate expires",
            cert_expiry.clone(),
        );
        registry.register(
            "outrigger_inflight_requests",
            "Admission requests being processed",
            inflight.clone(),
        );
        registry.register(
            "outrigger_config_usable",
            "1 when the default templates of the configuration in force add a container or init container to a plain pod",
            config_usable.clone(),
        );
        registry.register(
            "outrigger_config_unsupported_features",
            "Uses, in the templates of the last configuration read (in force or refused), of functions or syntax outrigger does not implement, by template and feature",
            unsupported.clone(),
        );
        registry.register(
            "outrigger_overlapping_injector_namespaces",
            "Namespaces another injecting webhook configuration selects together with this injector's, by configuration (--detect-overlaps, at start-up)",
            crate::kube::overlap::OVERLAPS.clone(),
        );
        let events = &crate::kube::events::EVENT_STATS;
        registry.register(
            "outrigger_events_published",
            "Kubernetes Events written (--events)",
            events.published.clone(),
        );
        registry.register(
            "outrigger_events_aggregated",
            "Repeated Events folded into one already written (--events)",
            events.aggregated.clone(),
        );
        registry.register(
            "outrigger_events_dropped",
            "Events not recorded, by reason: unauthenticated, queue_full, rate_limited, too_many_keys, not_created, hold_full (--events)",
            events.dropped.clone(),
        );
        registry.register(
            "outrigger_inflight_request_bytes",
            "Request body bytes held by requests being read or processed",
            inflight_bytes.clone(),
        );
        registry.register(
            "outrigger_inflight_request_bytes_limit",
            "Bound on request body bytes in flight (--max-inflight-bytes)",
            inflight_bytes_limit.clone(),
        );
        registry.register(
            "outrigger_rejected_requests",
            "Requests refused to protect the server, by reason",
            rejected.clone(),
        );
        registry.register(
            "outrigger_open_connections",
            "Open client connections",
            open_connections.clone(),
        );
        registry.register(
            "outrigger_connections_rejected",
            "Connections closed at accept because the connection limit and its health reserve were full",
            connections_rejected.clone(),
        );
        registry.register(
            "outrigger_connections_closed",
            "Connections closed by the server on a timeout, by reason",
            connections_closed.clone(),
        );
        registry.register(
            "outrigger_admission_probe",
            "Dry-run creates of a probe pod through the API server (--probe-interval), by outcome: injected, not_injected, refused, error",
            probe.clone(),
        );
        registry.register(
            "outrigger_admission_probe_last_injected_timestamp_seconds",
            "Unix time of the last probe pod that came back injected (--probe-interval)",
            probe_last_injected.clone(),
        );
        registry.register(
            "outrigger_webhook_failure_policy",
            "failurePolicy of each injector entry of the webhook configuration as last read or patched in the cluster (--kube with an activation flag): 1 for the policy in force, 0 for the other",
            crate::kube::activation::POLICIES.clone(),
        );
        registry.register(
            "outrigger_webhook_failure_policy_desired",
            "failurePolicy this replica brings the injector's entries to (--failure-policy-once-ready; Ignore while the install is deleted): 1 for it, 0 for the other",
            crate::kube::activation::DESIRED.clone(),
        );
        registry.register(
            "outrigger_pods",
            "Pods outrigger's webhook selects, by namespace, state (current, stale, missing: admitted without a sidecar while the webhook failed open) and cause class of stale pods (--watch-pods)",
            super::pod_watch::PODS.clone(),
        );
        Arc::new(Metrics {
            registry,
            requests,
            success,
            skip,
            failure,
            time,
            injected,
            reloads,
            reload_ok,
            reload_time,
            cert_expiry,
            inflight,
            config_usable,
            unsupported,
            inflight_bytes,
            inflight_bytes_limit,
            rejected,
            open_connections,
            connections_rejected,
            connections_closed,
            probe,
            probe_last_injected,
        })
    }

    /// Count a request refused for load with its reason.
    pub fn reject(&self, reason: &str) {
        self.rejected
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Count a connection closed on a timeout.
    pub fn connection_closed(&self, reason: &str) {
        self.connections_closed
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Count a failure with its reason.
    pub fn fail(&self, reason: &str) {
        self.failure
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Count a skip with its reason.
    pub fn skipped(&self, reason: &str) {
        self.skip
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Record the outcome of an admission probe (`outcome`: the label's value).
    pub fn probed(&self, outcome: &str) {
        self.probe
            .get_or_create(&OutcomeLabel {
                outcome: outcome.to_string(),
            })
            .inc();
        if outcome == "injected" {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or(Duration::ZERO);
            self.probe_last_injected.set(now.as_secs_f64());
        }
    }

    /// Record the outcome of a config or certificate (re)load.
    pub fn reload(&self, kind: &str, ok: bool) {
        let result = if ok { "success" } else { "failure" };
        self.reloads
            .get_or_create(&ReloadLabel {
                kind: kind.into(),
                result: result.into(),
            })
            .inc();
        self.reload_ok
            .get_or_create(&KindLabel { kind: kind.into() })
            .set(i64::from(ok));
        if ok {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or(Duration::ZERO);
            self.reload_time
                .get_or_create(&KindLabel { kind: kind.into() })
                .set(now.as_secs_f64());
        }
    }

    /// OpenMetrics text exposition (what prometheus-client writes).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(4096);
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.push_str("# metrics encoding failed\n");
        }
        out
    }

    /// The exposition in `format`.
    pub fn encode_as(&self, format: Format) -> String {
        match format {
            Format::OpenMetrics => self.encode(),
            Format::Prometheus => to_prometheus_text(&self.encode()),
        }
    }
}

/// Exposition format of `/metrics`, chosen by the scraper's `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 text (`# EOF`-terminated), asked for with
    /// `Accept: application/openmetrics-text`.
    OpenMetrics,
    /// Prometheus text format 0.0.4, for every other client (curl, older scrapers).
    Prometheus,
}

impl Format {
    /// OpenMetrics when `accept` lists `application/openmetrics-text` with a non-zero quality
    /// (as Prometheus asks), else the Prometheus text format.
    pub fn negotiate(accept: Option<&hyper::header::HeaderValue>) -> Format {
        let Some(accept) = accept.and_then(|v| v.to_str().ok()) else {
            return Format::Prometheus;
        };
        let wants_openmetrics = accept.split(',').any(|range| {
            let mut params = range.split(';').map(str::trim);
            let media = params.next().unwrap_or("");
            media.eq_ignore_ascii_case("application/openmetrics-text")
                && !params.any(|p| {
                    p.strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f64>().ok())
                        .is_some_and(|q| q <= 0.0)
                })
        });
        if wants_openmetrics {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The `Content-Type` of the format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Convert prometheus-client's OpenMetrics text to the Prometheus text format 0.0.4: counter
/// families are named with their `_total` suffix in `# HELP`/`# TYPE` (as client_golang names
/// them; the samples already carry it), `unknown` becomes `untyped`, and what 0.0.4 does not
/// have is dropped: `# UNIT` lines, `_created` samples of counters, exemplars and `# EOF`.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let is_counter = |name: &str| counters.contains(&name);
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let suffix = if is_counter(name) { "_total" } else { "" };
            out.push_str(&format!("# HELP {name}{suffix} {help}\n"));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (suffix, kind) = match kind {
                "counter" => ("_total", "counter"),
                "unknown" => ("", "untyped"),
                other => ("", other),
            };
            out.push_str(&format!("# TYPE {name}{suffix} {kind}\n"));
            continue;
        }
        if line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        if line[..name_end]
            .strip_suffix("_created")
            .is_some_and(is_counter)
        {
            continue;
        }
        // An exemplar follows the value as ` # {labels} value`.
        let sample = match line.find(" # {") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(sample);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposes_istio_names_with_reasons() {
        let m = Metrics::new();
        m.requests.inc();
        m.success.inc();
        m.skipped("policy_disabled");
        m.fail("template");
        m.time.observe(0.00007);
        m.reload("config", false);
        m.cert_expiry.set(1_900_000_000);
        m.reject("inflight_bytes");
        m.connection_closed("idle_timeout");
        m.inflight_bytes_limit.set(1024);
        let text = m.encode();
        for want in [
            "sidecar_injection_requests_total 1",
            "sidecar_injection_success_total 1",
            "sidecar_injection_skip_total{reason=\"policy_disabled\"} 1",
            "sidecar_injection_failure_total{reason=\"template\"} 1",
            "sidecar_injection_time_seconds_bucket{le=\"0.00005\"} 0",
            "sidecar_injection_time_seconds_bucket{le=\"0.0001\"} 1",
            "outrigger_reloads_total{kind=\"config\",result=\"failure\"} 1",
            "outrigger_reload_last_success{kind=\"config\"} 0",
            "outrigger_certificate_expiry_timestamp_seconds 1900000000",
            "# TYPE outrigger_events_dropped counter",
            "outrigger_events_published_total",
            "outrigger_rejected_requests_total{reason=\"inflight_bytes\"} 1",
            "outrigger_connections_closed_total{reason=\"idle_timeout\"} 1",
            "outrigger_inflight_request_bytes_limit 1024",
            "outrigger_open_connections 0",
            "outrigger_connections_rejected_total 0",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }

    #[test]
    fn accept_negotiates_the_format() {
        use hyper::header::HeaderValue;
        let f = |a: &'static str| Format::negotiate(Some(&HeaderValue::from_static(a)));
        // What Prometheus 2.x/3.x sends.
        assert_eq!(
            f(
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
               version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            ),
            Format::OpenMetrics
        );
        assert_eq!(f("application/openmetrics-text"), Format::OpenMetrics);
        assert_eq!(f("*/*"), Format::Prometheus);
        assert_eq!(f("text/plain;version=0.0.4"), Format::Prometheus);
        assert_eq!(f("application/openmetrics-text;q=0"), Format::Prometheus);
        assert_eq!(Format::negotiate(None), Format::Prometheus);
    }

    #[test]
    fn prometheus_text_is_a_faithful_conversion() {
        let m = Metrics::new();
        m.requests.inc();
        m.skipped("policy_disabled");
        m.time.observe(0.00007);
        m.cert_expiry.set(1_900_000_000);
        let om = m.encode();
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert!(
            om.contains("# TYPE sidecar_injection_requests counter\n"),
            "{om}"
        );
        let text = to_prometheus_text(&om);
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );
        for want in [
            "# HELP sidecar_injection_requests_total ",
            "# TYPE sidecar_injection_requests_total counter\n",
            "sidecar_injection_requests_total 1\n",
            "# TYPE sidecar_injection_skip_total counter\n",
            "sidecar_injection_skip_total{reason=\"policy_disabled\"} 1\n",
            "# TYPE sidecar_injection_time_seconds histogram\n",
            "sidecar_injection_time_seconds_bucket{le=\"0.0001\"} 1\n",
            "sidecar_injection_time_seconds_count 1\n",
            "# TYPE outrigger_certificate_expiry_timestamp_seconds gauge\n",
            "outrigger_certificate_expiry_timestamp_seconds 1900000000\n",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        // Every sample of the OpenMetrics text is kept, in order.
        let samples = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(samples(&text), samples(&om));
        // OpenMetrics-only syntax is dropped.
        let extra = "# HELP x_seconds X.\n# TYPE x_seconds counter\n# UNIT x_seconds seconds\n\
                     x_seconds_total 3 # {trace_id=\"a\"} 1.0\nx_seconds_created 1.7e9\n\
                     # TYPE y unknown\ny 1\n# EOF\n";
        assert_eq!(
            to_prometheus_text(extra),
            "# HELP x_seconds_total X.\n# TYPE x_seconds_total counter\nx_seconds_total 3\n\
             # TYPE y untyped\ny 1\n"
        );
    }
}
