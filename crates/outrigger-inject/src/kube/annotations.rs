//! Every pod annotation injection validates, writes or takes back, declared once: its name, how
//! the decide stage validates it, who writes it, what re-injection does with it and whether drift
//! compares it ([`ANNOTATIONS`]).
//!
//! The stages read this table and nothing else: the decide stage's validation
//! (`decide::annotations`), re-injection's recovery (`ingest::recover`, for `--reinject` and
//! drift) and drift's comparison (`drift::pod_drift`). A new annotation is one row here; a test
//! over Istio's corpus checks that every annotation the templates and post-processing write is
//! a row.

use super::names::{
    INJECTED_BY_ANNOTATION, INJECT_KEY, NATIVE_SIDECAR_ANNOTATION, OVERRIDES_ANNOTATION,
    PROXY_CONFIG_ANNOTATION, STATUS_ANNOTATION, TEMPLATES_ANNOTATION,
};

/// `prometheus.istio.io/merge-metrics`: whether the agent merges the application's metrics.
pub const MERGE_METRICS_ANNOTATION: &str = "prometheus.istio.io/merge-metrics";
/// `prometheus.istio.io/secure-port`: the sidecar's secure merged-metrics port, published by
/// post-processing.
pub const SECURE_PORT_ANNOTATION: &str = "prometheus.istio.io/secure-port";
/// `sidecar.istio.io/rewriteAppHTTPProbers`: whether probes are rewritten to the agent.
pub const REWRITE_PROBERS_ANNOTATION: &str = "sidecar.istio.io/rewriteAppHTTPProbers";

/// `status.sidecar.istio.io/port`: the agent's status port, set by the user.
pub const STATUS_PORT_ANNOTATION: &str = "status.sidecar.istio.io/port";

/// Who writes an annotation on a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// Only injection (the templates, post-processing or outrigger's webhook).
    Injector,
    /// Only the user (injection reads it).
    User,
    /// Injection writes it, and the user may have set it too (the pod alone cannot tell).
    Both,
}

/// How the decide stage validates an annotation's value before rendering (Istio's
/// `validateAnnotations`); the checks themselves live in `decide::annotations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// Not validated.
    None,
    /// `REDIRECT`, `TPROXY` or `NONE`.
    InterceptionMode,
    /// A port (`status.sidecar.istio.io/port`).
    StatusPort,
    /// An unsigned 32-bit decimal.
    Uint32,
    /// `*` or a list of CIDRs (`includeOutboundIPRanges`).
    IncludeIpRanges,
    /// A list of CIDRs (`excludeOutboundIPRanges`).
    ExcludeIpRanges,
    /// `*` or a list of ports (`includeInboundPorts`).
    IncludeInboundPorts,
    /// A list of ports (`excludeInboundPorts`).
    ExcludeInboundPorts,
    /// A list of ports (`excludeOutboundPorts`).
    ExcludeOutboundPorts,
    /// A list of interface names.
    Interfaces,
    /// Go's `strconv.ParseBool`.
    Bool,
    /// A ProxyConfig (`proxy.istio.io/config`), applied over the default and validated.
    ProxyConfig,
    /// A Kubernetes resource quantity.
    Quantity,
}

/// What re-injection from scratch (`inject --reinject`, drift's expected pod) does with the
/// annotation when it takes a pod back to before its previous injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reinject {
    /// Left as it is: the user's.
    Keep,
    /// Removed outright: injection's own record (the pod before injection had none).
    Remove,
    /// Taken out, and put back when injecting the pod without it does not write it with the
    /// same value (then it was the user's).
    Take,
    /// Restored from the proxy's `ISTIO_PROMETHEUS_ANNOTATIONS` (Prometheus metrics merging
    /// rewrote it).
    Prometheus,
}

/// One pod annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotation {
    /// Its name.
    pub name: &'static str,
    /// How the decide stage validates it.
    pub validation: Validation,
    /// Who writes it.
    pub writer: Writer,
    /// What re-injection does with it.
    pub reinject: Reinject,
    /// Whether drift compares the pod's value with the expected pod's (a difference makes the
    /// pod stale).
    pub drift: bool,
}

const fn row(
    name: &'static str,
    validation: Validation,
    writer: Writer,
    reinject: Reinject,
    drift: bool,
) -> Annotation {
    Annotation {
        name,
        validation,
        writer,
        reinject,
        drift,
    }
}

/// An annotation Istio's templates or post-processing write and the user may also set:
/// re-injection takes it, drift compares it.
const fn written(name: &'static str, validation: Validation) -> Annotation {
    row(name, validation, Writer::Both, Reinject::Take, true)
}

/// An annotation only the user writes and injection validates.
const fn user(name: &'static str, validation: Validation) -> Annotation {
    row(name, validation, Writer::User, Reinject::Keep, false)
}

/// The table. Re-injection takes the [`Reinject::Take`] and [`Reinject::Prometheus`] rows in
/// this order.
pub const ANNOTATIONS: &[Annotation] = &[
    // Written by Istio's templates and post-processing (the user may have set them too).
    written("istio.io/rev", Validation::None),
    written("kubectl.kubernetes.io/default-container", Validation::None),
    written(
        "kubectl.kubernetes.io/default-logs-container",
        Validation::None,
    ),
    written("k8s.v1.cni.cncf.io/networks", Validation::None),
    written(
        "sidecar.istio.io/interceptionMode",
        Validation::InterceptionMode,
    ),
    written(REWRITE_PROBERS_ANNOTATION, Validation::None),
    written(MERGE_METRICS_ANNOTATION, Validation::Bool),
    written(SECURE_PORT_ANNOTATION, Validation::None),
    written(
        "traffic.sidecar.istio.io/includeOutboundIPRanges",
        Validation::IncludeIpRanges,
    ),
    written(
        "traffic.sidecar.istio.io/excludeOutboundIPRanges",
        Validation::ExcludeIpRanges,
    ),
    written(
        "traffic.sidecar.istio.io/includeInboundPorts",
        Validation::IncludeInboundPorts,
    ),
    written(
        "traffic.sidecar.istio.io/excludeInboundPorts",
        Validation::ExcludeInboundPorts,
    ),
    written(
        "traffic.sidecar.istio.io/includeOutboundPorts",
        Validation::None,
    ),
    written(
        "traffic.sidecar.istio.io/excludeOutboundPorts",
        Validation::ExcludeOutboundPorts,
    ),
    // Injection's own record.
    row(
        STATUS_ANNOTATION,
        Validation::None,
        Writer::Injector,
        Reinject::Remove,
        true,
    ),
    row(
        OVERRIDES_ANNOTATION,
        Validation::None,
        Writer::Injector,
        Reinject::Remove,
        false,
    ),
    row(
        INJECTED_BY_ANNOTATION,
        Validation::None,
        Writer::Injector,
        Reinject::Remove,
        false,
    ),
    // Rewritten by Prometheus metrics merging (drift compares every `prometheus.io/*` name by
    // its sanitised form, `kube::prometheus`).
    row(
        "prometheus.io/port",
        Validation::None,
        Writer::Both,
        Reinject::Prometheus,
        true,
    ),
    row(
        "prometheus.io/path",
        Validation::None,
        Writer::Both,
        Reinject::Prometheus,
        true,
    ),
    row(
        "prometheus.io/scrape",
        Validation::None,
        Writer::Both,
        Reinject::Prometheus,
        true,
    ),
    // The user's, validated before rendering.
    user(STATUS_PORT_ANNOTATION, Validation::StatusPort),
    user(
        "readiness.status.sidecar.istio.io/initialDelaySeconds",
        Validation::Uint32,
    ),
    user(
        "readiness.status.sidecar.istio.io/periodSeconds",
        Validation::Uint32,
    ),
    user(
        "readiness.status.sidecar.istio.io/failureThreshold",
        Validation::Uint32,
    ),
    user(
        "traffic.sidecar.istio.io/excludeInterfaces",
        Validation::Interfaces,
    ),
    user(
        "traffic.sidecar.istio.io/kubevirtInterfaces",
        Validation::Interfaces,
    ),
    user(
        "istio.io/reroute-virtual-interfaces",
        Validation::Interfaces,
    ),
    user(PROXY_CONFIG_ANNOTATION, Validation::ProxyConfig),
    user("sidecar.istio.io/proxyCPU", Validation::Quantity),
    user("sidecar.istio.io/proxyMemory", Validation::Quantity),
    user("sidecar.istio.io/proxyCPULimit", Validation::Quantity),
    user("sidecar.istio.io/proxyMemoryLimit", Validation::Quantity),
    // The user's, read by the decision and template selection.
    user(INJECT_KEY, Validation::None),
    user(TEMPLATES_ANNOTATION, Validation::None),
    user(NATIVE_SIDECAR_ANNOTATION, Validation::None),
];

/// How many rows are validated (their [`Annotation::validation`] is not [`Validation::None`]).
const VALIDATED_COUNT: usize = {
    let (mut i, mut n) = (0, 0);
    while i < ANNOTATIONS.len() {
        if !matches!(ANNOTATIONS[i].validation, Validation::None) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The validated rows, in the table's order: what the decide stage looks a pod's annotations up
/// in (built from [`ANNOTATIONS`] at compile time, so the admission path scans only these).
pub const VALIDATED: [Annotation; VALIDATED_COUNT] = {
    let mut out = [ANNOTATIONS[0]; VALIDATED_COUNT];
    let (mut i, mut n) = (0, 0);
    while i < ANNOTATIONS.len() {
        if !matches!(ANNOTATIONS[i].validation, Validation::None) {
            out[n] = ANNOTATIONS[i];
            n += 1;
        }
        i += 1;
    }
    out
};

/// The row of annotation `name`.
pub fn annotation(name: &str) -> Option<&'static Annotation> {
    ANNOTATIONS.iter().find(|a| a.name == name)
}

/// The names re-injection handles by `what`, in the table's order.
pub fn on_reinject(what: Reinject) -> impl Iterator<Item = &'static str> {
    ANNOTATIONS
        .iter()
        .filter(move |a| a.reinject == what)
        .map(|a| a.name)
}

/// Whether drift compares annotation `name` (a row with [`Annotation::drift`]).
pub fn compared_by_drift(name: &str) -> bool {
    annotation(name).is_some_and(|a| a.drift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_annotation_is_declared_once() {
        let mut names: Vec<&str> = ANNOTATIONS.iter().map(|a| a.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a name declared twice");
    }

    #[test]
    fn the_rows_agree_with_themselves() {
        for a in ANNOTATIONS {
            // Injection's record and what it writes are what drift and re-injection handle;
            // the user's own are never taken back.
            match a.writer {
                Writer::User => assert!(a.reinject == Reinject::Keep && !a.drift, "{}", a.name),
                Writer::Injector => assert_eq!(a.reinject, Reinject::Remove, "{}", a.name),
                Writer::Both => assert_ne!(a.reinject, Reinject::Keep, "{}", a.name),
            }
        }
        assert_eq!(
            annotation(STATUS_ANNOTATION).map(|a| a.writer),
            Some(Writer::Injector)
        );
        assert!(compared_by_drift("istio.io/rev") && !compared_by_drift(INJECT_KEY));
        assert_eq!(on_reinject(Reinject::Take).count(), 14);
        let validated: Vec<&Annotation> = ANNOTATIONS
            .iter()
            .filter(|a| a.validation != Validation::None)
            .collect();
        assert_eq!(validated, VALIDATED.iter().collect::<Vec<_>>());
        assert_eq!(VALIDATED.len(), 19);
    }
}
