//! One render of charts/outrigger installed into the fake API server (`common::kube_api`) and run
//! behind its mutating admission chain (`common::admission`), as a cluster would run it:
//!
//! - **Applied as Helm applies it.** Namespaces first (Helm's `InstallOrder`,
//!   `pkg/releaseutil/kind_sorter.go` in Helm 3), then every object, each namespaced one into a
//!   namespace that exists (kube-apiserver's NamespaceLifecycle admission refuses a create in a
//!   namespace that does not,
//!   `k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go`), each custom
//!   resource only where its CRD is installed (the API server has no REST mapping for a kind
//!   without one: the CRDs of `tests/fixtures/crd-schemas`, against whose schemas `tools/chart.py
//!   validate` checks them). Helm's `--create-namespace` made the release's namespace.
//! - **The server as the Deployment runs it**: the container's `args` and `env` from the render
//!   (`fieldRef`s resolved as the kubelet resolves them), the only changes being the listening
//!   addresses (127.0.0.1, free ports for the webhook, metrics and health ports: each port is
//!   checked to be the container port its name resolves to) and the kube-apiserver address (a
//!   kubeconfig instead of the in-cluster token). Its requests are authorized by the render's RBAC
//!   objects for the Deployment's ServiceAccount (`Cluster::enforce_rbac`): a request the render
//!   does not grant fails the test.
//! - **Behind its Service**: once the readiness probe's path answers 200 on the port the probe
//!   names, the replica is the Service's endpoint (the fake dials the endpoint; the Service's
//!   `port` → `targetPort` → container port mapping is checked here by name, as the endpoints
//!   controller resolves a named `targetPort` to the pod's container port, `k8s.io/api/core/v1`
//!   `ServicePort.targetPort`).
//! - **Certificates.** `certificates.mode=self`: the server bootstraps its Secret (RBAC allowing).
//!   `certManager`: cert-manager's part is played here, as its Certificate controller does it: the
//!   Certificate's Issuer must exist (an Issuer in its namespace; a ClusterIssuer named by the
//!   values is the user's), and the Secret `spec.secretName` is written with `tls.crt`, `tls.key`
//!   and `ca.crt` (type `kubernetes.io/tls`, the `cert-manager.io/certificate-name` annotation) for
//!   exactly the Certificate's `dnsNames`: the fake then verifies the webhook's TLS for
//!   `<service>.<namespace>.svc` against the caBundle the server published, so a Certificate
//!   without that name fails the test.
//! - **Pods**: one in a namespace the values select (injected, with outrigger's marker), one in a
//!   namespace istiod selects (untouched: no entry selects it), one in each excluded namespace and
//!   where the values' extra namespace and object selectors leave it out (untouched), two that
//!   `matchConditions` skip (host network, the opt-out annotation: skipped by the conditions when
//!   the values turn them on, else sent and declined by the server); the `failurePolicy`,
//!   `timeoutSeconds` and `matchConditions` the chain applied (`admission::Applied`) are the
//!   values'; with the replica out of the Service, a pod is refused under `Fail` and admitted
//!   uninjected under `Ignore`.
//! - **The admission probe** (`--probe-interval`): the probe's namespace is one the render creates
//!   and an entry selects (with the probe pod's label); with an interval of 10 s or less the test
//!   waits until a probe pod came back injected (`outrigger_admission_probe_total`).
//! - **Objects the fake does not act on** are checked for what would make them work in a cluster:
//!   the ServiceMonitor (PodMonitor) selects the Service (the pods) in the release's namespace, and
//!   its endpoint's `port` names the Service port (the container port) that reaches the metrics
//!   port, which is scraped here over plain HTTP (Prometheus Operator's API: `endpoints[].port` is
//!   a Service port name, `podMetricsEndpoints[].port` a pod port name, `jobLabel` names the
//!   Service's (pod's) label whose value is the `job` label,
//!   `pkg/apis/monitoring/v1/servicemonitor_types.go`, `podmonitor_types.go`); the PrometheusRule's
//!   `job` and `namespace` matchers name that job and namespace; the dashboard's ConfigMap holds
//!   JSON; the NetworkPolicy selects the pods and lets in the webhook's and the metrics' container
//!   ports (`NetworkPolicyPort.port` is a port on the pod, after the Service's translation,
//!   `k8s.io/api/networking/v1`); the PodDisruptionBudget selects the pods and, with every replica
//!   healthy, allows an eviction while keeping one replica up
//!   (`pkg/controller/disruption/disruption.go`: desired healthy = expected pods −
//!   `maxUnavailable`, disruptions allowed = healthy − desired healthy).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::admission::{selects, Applied};
use crate::common::kube_api::{configmap, node, Cluster, FakeApi};
use crate::common::{eventually, holds_within, Outrigger, Server, EVENTUALLY};

/// The binary's shared defaults (constants only).
#[path = "../../../outrigger-kube/src/defaults.rs"]
#[allow(dead_code)]
mod defaults;

/// The tag of the proxy image in the ConfigMaps of a non-default revision (so an injected pod
/// tells which revision's configuration served it).
const REVISION_TAG: &str = "revision-under-test";

/// What a render must do, from the values it was rendered with (over the chart's defaults).
struct Expect {
    ns: String,
    takeover: bool,
    selector_revision: String,
    revision: String,
    failure_policy: String,
    timeout_seconds: u64,
    match_conditions: Vec<String>,
    excluded: Vec<String>,
    istio_namespace: String,
    istio_configmaps: bool,
    /// Labels the values' `webhook.namespaceSelector` needs (its matchLabels and `In`s).
    ns_needs: Value,
    /// Labels the values' `webhook.objectSelector` needs, and labels one of its `NotIn`s refuses.
    pod_needs: Value,
    pod_refused: Value,
}

/// The labels `selector`'s `matchLabels` and `In` requirements need (the first value of each),
/// and those its `NotIn` requirements refuse (one label per requirement).
fn needs_and_refuses(selector: &Value) -> (Value, Value) {
    let mut needs = selector["matchLabels"].clone();
    if !needs.is_object() {
        needs = json!({});
    }
    let mut refused = json!({});
    for r in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = r["key"].as_str().unwrap_or("").to_string();
        match r["operator"].as_str().unwrap_or("") {
            "In" => needs[&key] = r["values"][0].clone(),
            "NotIn" => refused[&key] = r["values"][0].clone(),
            _ => {}
        }
    }
    (needs, refused)
}

/// `a` with `b`'s labels added.
fn merged(a: &Value, b: &Value) -> Value {
    let mut out = a.clone();
    for (k, v) in b.as_object().into_iter().flatten() {
        out[k] = v.clone();
    }
    out
}

/// `path` in `values`, else in the chart's `values.yaml`.
fn value<'a>(values: &'a Value, defaults: &'a Value, path: &str) -> &'a Value {
    let pointer = format!("/{}", path.replace('.', "/"));
    values
        .pointer(&pointer)
        .or_else(|| defaults.pointer(&pointer))
        .unwrap_or_else(|| panic!("values.yaml has no {path}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "2",
                     "labels": labels}})
}

fn pod(name: &str, labels: &Value, annotations: Value, host_network: bool) -> Value {
    let labels = merged(&json!({"app": name}), labels);
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    if host_network {
        p["spec"]["hostNetwork"] = json!(true);
    }
    p
}

/// Whether outrigger injected `pod`: its marker and an `istio-proxy` container.
fn injected(pod: &Value) -> bool {
    let proxy = ["containers", "initContainers"].iter().any(|k| {
        pod["spec"][k]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["name"] == "istio-proxy")
    });
    let marked = pod["metadata"]["annotations"]["outrigger.dev/injected-by"] == "outrigger";
    assert_eq!(
        proxy, marked,
        "istio-proxy without the marker or back: {pod}"
    );
    marked
}

fn proxy_image(pod: &Value) -> String {
    ["containers", "initContainers"]
        .iter()
        .flat_map(|k| pod["spec"][k].as_array().cloned().unwrap_or_default())
        .find(|c| c["name"] == "istio-proxy")
        .and_then(|c| c["image"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Kinds without a namespace.
fn cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace" | "ClusterRole" | "ClusterRoleBinding" | "MutatingWebhookConfiguration"
    )
}

/// The one object of `kind` named `name` (any name when `None`).
fn object<'a>(objects: &'a [Value], kind: &str, name: Option<&str>) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && name.is_none_or(|n| o["metadata"]["name"] == n))
}

fn one<'a>(label: &str, objects: &'a [Value], kind: &str) -> &'a Value {
    let all: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(all.len(), 1, "{label}: one {kind}");
    all[0]
}

/// Install the render `objects` (rendered with `values` into namespace `ns`) into a fake cluster,
/// run its server, and create pods through the admission chain (the module's documentation).
pub fn install_and_admit(label: &str, values: &Value, ns: &str, objects: &[Value], root: &Path) {
    let defaults_text =
        std::fs::read_to_string(root.join("charts/outrigger/values.yaml")).expect("values.yaml");
    let chart_defaults: Value = outrigger_go::yaml::from_str(&defaults_text).expect("YAML");
    let v = |path: &str| value(values, &chart_defaults, path).clone();
    let conditions_text =
        std::fs::read_to_string(root.join("charts/outrigger/files/match-conditions.yaml"))
            .expect("match-conditions.yaml");
    let conditions: Value = outrigger_go::yaml::from_str(&conditions_text).expect("YAML");
    let expect = Expect {
        ns: ns.to_string(),
        takeover: v("takeover.enabled") == true,
        selector_revision: v("selectorRevision").as_str().unwrap_or("").to_string(),
        revision: v("revision").as_str().unwrap_or("").to_string(),
        failure_policy: v("webhook.failurePolicy")
            .as_str()
            .unwrap_or("")
            .to_string(),
        timeout_seconds: v("webhook.timeoutSeconds")
            .as_u64()
            .expect("timeoutSeconds"),
        match_conditions: if v("webhook.matchConditions") == true {
            conditions
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        } else {
            Vec::new()
        },
        excluded: strings(&v("webhook.excludeNamespaces")),
        istio_namespace: v("istio.namespace").as_str().unwrap_or("").to_string(),
        istio_configmaps: v("istio.configMaps") == true,
        ns_needs: needs_and_refuses(&v("webhook.namespaceSelector")).0,
        pod_needs: needs_and_refuses(&v("webhook.objectSelector")).0,
        pod_refused: needs_and_refuses(&v("webhook.objectSelector")).1,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(label, &expect, objects, root));
}

/// The labels that select a namespace for outrigger, and those of a namespace istiod selects
/// that outrigger must not.
fn selecting_labels(e: &Expect) -> (Value, Value) {
    if e.takeover {
        (
            json!({"istio-injection": "enabled"}),
            json!({"istio.io/rev": "canary"}),
        )
    } else {
        (
            json!({"istio.io/rev": e.selector_revision}),
            json!({"istio-injection": "enabled"}),
        )
    }
}

/// The fake cluster before the install: the release's namespace, kube-system, Istio's namespace
/// with its ConfigMaps (the revision's too), one node, the namespaces the pods go to.
fn cluster(e: &Expect) -> Cluster {
    use outrigger_inject::config::defaults as istio;
    let mut c = Cluster::default();
    let (selecting, istiod) = selecting_labels(e);
    c.put(namespace(&e.ns, json!({})));
    c.put(namespace("kube-system", selecting.clone()));
    c.put(namespace(&e.istio_namespace, json!({})));
    c.put(namespace("selected", merged(&selecting, &e.ns_needs)));
    // Selected by the chart's own selection, not by the values' extra namespace selector.
    c.put(namespace("narrowed-out", selecting.clone()));
    c.put(namespace("istiod-selected", istiod));
    for excluded in &e.excluded {
        c.put(namespace(excluded, selecting.clone()));
    }
    let mut values: Value = serde_json::from_str(istio::VALUES).expect("values JSON");
    let suffix = match e.revision.as_str() {
        "default" | "" => String::new(),
        rev => {
            values["global"]["tag"] = json!(REVISION_TAG);
            format!("-{rev}")
        }
    };
    let values = values.to_string();
    c.put(configmap(
        &e.istio_namespace,
        &format!("istio-sidecar-injector{suffix}"),
        "1",
        &[("config", istio::CONFIG), ("values", values.as_str())],
    ));
    c.put(configmap(
        &e.istio_namespace,
        &format!("istio{suffix}"),
        "1",
        &[("mesh", istio::MESH)],
    ));
    c.put(node("node-1", "v1.33.2"));
    c
}

/// Apply `objects` as Helm does (the module's documentation); panics naming what the API server
/// would refuse.
fn apply(label: &str, c: &mut Cluster, objects: &[Value], ns: &str, root: &Path) {
    let mut ordered: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .collect();
    ordered.extend(objects.iter().filter(|o| o["kind"] != "Namespace"));
    for (i, o) in ordered.into_iter().enumerate() {
        let mut o = o.clone();
        let kind = o["kind"].as_str().unwrap_or("").to_string();
        let name = o["metadata"]["name"].as_str().unwrap_or("").to_string();
        if !cluster_scoped(&kind) {
            if o["metadata"]["namespace"].is_null() {
                o["metadata"]["namespace"] = json!(ns);
            }
            let in_ns = o["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            assert!(
                c.get("namespaces", "", &in_ns).is_some(),
                "{label}: {kind} {name}: namespaces {in_ns:?} not found (NamespaceLifecycle)"
            );
        }
        assert_eq!(
            crate::common::kube_api::invalid_webhook_configuration(&o),
            None,
            "{label}: the API server refuses {kind} {name}"
        );
        let api_version = o["apiVersion"].as_str().unwrap_or("");
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        if group.ends_with("monitoring.coreos.com") || group == "cert-manager.io" {
            let crd = root.join(format!("tests/fixtures/crd-schemas/{group}_{kind}.json"));
            assert!(
                crd.exists(),
                "{label}: no matches for kind {kind:?} in version {api_version:?} (no CRD)"
            );
        }
        o["metadata"]["uid"] = json!(format!("applied-{i}"));
        o["metadata"]["resourceVersion"] = json!("3");
        c.put(o);
    }
}

/// The container port named `name`.
fn container_port(label: &str, container: &Value, name: &str) -> u64 {
    container["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_u64())
        .unwrap_or_else(|| panic!("{label}: no container port named {name}"))
}

/// The value of `--NAME=VALUE` in `args`.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    args.iter().find_map(|a| a.strip_prefix(prefix.as_str()))
}

/// A CA and a certificate it signed for `dns_names`, as cert-manager's CA issuer writes them:
/// (CA PEM, certificate PEM, key PEM).
fn issue(dns_names: Vec<String>) -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.distinguished_name.push(DnType::CommonName, "chart-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    let mut leaf = CertificateParams::new(dns_names).expect("params");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("key");
    let cert = leaf.signed_by(&key, &issuer).expect("leaf");
    (ca_pem, cert.pem(), key.serialize_pem())
}

/// cert-manager's part for the Certificate `cert` (the module's documentation).
fn cert_manager_issues(label: &str, c: &mut Cluster, objects: &[Value], cert: &Value) {
    let ns = cert["metadata"]["namespace"].as_str().unwrap_or("");
    let issuer = &cert["spec"]["issuerRef"];
    let issuer_name = issuer["name"].as_str().unwrap_or("");
    match issuer["kind"].as_str().unwrap_or("Issuer") {
        "Issuer" => {
            let found = object(objects, "Issuer", Some(issuer_name));
            assert!(
                found.is_some_and(|i| i["metadata"]["namespace"] == ns),
                "{label}: Certificate {}: Issuer {issuer_name} not found in {ns}",
                cert["metadata"]["name"]
            );
            // A CA Issuer signs with the CA Certificate's Secret: that Certificate is a CA.
            if let Some(secret) = found.and_then(|i| i["spec"]["ca"]["secretName"].as_str()) {
                let ca_cert = objects
                    .iter()
                    .find(|o| o["kind"] == "Certificate" && o["spec"]["secretName"] == secret);
                assert!(
                    ca_cert.is_some_and(|o| o["spec"]["isCA"] == true),
                    "{label}: Issuer {issuer_name}'s CA Secret {secret} is no CA Certificate's"
                );
            }
        }
        "ClusterIssuer" => {}
        other => panic!("{label}: issuerRef kind {other}"),
    }
    let dns_names = strings(&cert["spec"]["dnsNames"]);
    let (ca, crt, key) = issue(dns_names);
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let name = cert["spec"]["secretName"].as_str().unwrap_or("");
    c.put(
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": "4",
            "annotations": {"cert-manager.io/certificate-name": cert["metadata"]["name"],
                            "cert-manager.io/issuer-name": issuer_name}},
        "data": {"tls.crt": b64(&crt), "tls.key": b64(&key), "ca.crt": b64(&ca)}}),
    );
}

/// The address the server logged with a message starting with `prefix`.
fn logged_address(server: &Server, prefix: &str) -> Option<String> {
    server.logs.lock().expect("log lock").iter().find_map(|l| {
        let v: Value = serde_json::from_str(l).ok()?;
        (v["message"].as_str()?.starts_with(prefix))
            .then(|| v["address"].as_str().map(str::to_string))?
    })
}

/// `GET path` over plain HTTP/1.1: status and body.
async fn plain_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .ok()?;
    let mut raw = Vec::new();
    tokio::time::timeout(EVENTUALLY, tcp.read_to_end(&mut raw))
        .await
        .ok()?
        .ok()?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw.split_whitespace().nth(1)?.parse().ok()?;
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// The server as the Deployment runs it (the module's documentation); the ports the render's
/// flags named, by flag.
fn start_server(label: &str, api: &FakeApi, deployment: &Value) -> (Server, BTreeMap<String, u64>) {
    let pod_spec = &deployment["spec"]["template"]["spec"];
    let containers = pod_spec["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "{label}: one container");
    let container = &containers[0];
    let args = strings(&container["args"]);
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{label}");
    let ns = deployment["metadata"]["namespace"].as_str().unwrap_or("");
    let mut b = Outrigger::builder(&format!("chart-install-{label}")).kube_env(api.port);
    for e in container["env"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().expect("env name");
        let value = match (
            &e["value"],
            e["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        ) {
            (Value::String(v), _) => v.clone(),
            (_, Some("metadata.namespace")) => ns.to_string(),
            (_, Some("metadata.name")) => format!(
                "{}-5d8c7b9f4-x2x7q",
                deployment["metadata"]["name"].as_str().unwrap_or("")
            ),
            other => panic!("{label}: env {name}: {other:?}"),
        };
        b = b.env(name, &value);
    }
    let mut ports = BTreeMap::new();
    let mut kept = Vec::new();
    for a in &args[1..] {
        let (name, value) = a.split_once('=').unwrap_or((a.as_str(), ""));
        match name {
            "--port" | "--metrics-port" | "--health-port" => {
                ports.insert(name.to_string(), value.parse().expect("a port number"));
                if name != "--port" {
                    kept.push(format!("{name}=0"));
                }
            }
            "--log-format" => assert_eq!(value, "json", "{label}: the test reads JSON logs"),
            _ => kept.push(a.clone()),
        }
    }
    (b.flags(&kept).start(), ports)
}

async fn run(label: &str, e: &Expect, objects: &[Value], root: &Path) {
    let deployment = one(label, objects, "Deployment");
    let service = one(label, objects, "Service");
    let mwc = one(label, objects, "MutatingWebhookConfiguration");
    let mwc_name = mwc["metadata"]["name"].as_str().unwrap_or("").to_string();
    let svc_name = service["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let template = &deployment["spec"]["template"];
    let pod_labels = &template["metadata"]["labels"];
    let container = &template["spec"]["containers"][0];
    let args = strings(&container["args"]);
    let sa = template["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or("default");

    // Names that must agree for the install to work at all.
    assert_eq!(flag(&args, "--service"), Some(svc_name.as_str()), "{label}");
    assert_eq!(
        flag(&args, "--webhook-config-name"),
        Some(mwc_name.as_str()),
        "{label}"
    );
    assert_eq!(
        flag(&args, "--fail-open-without-deployment"),
        deployment["metadata"]["name"].as_str(),
        "{label}"
    );
    assert_eq!(
        flag(&args, "--failure-policy-once-ready"),
        Some(e.failure_policy.as_str()),
        "{label}"
    );
    assert!(
        selects(
            &json!({"matchLabels": service["spec"]["selector"]}),
            pod_labels
        ),
        "{label}: the Service selects the pods"
    );
    for entry in mwc["webhooks"].as_array().expect("entries") {
        let svc = &entry["clientConfig"]["service"];
        assert_eq!(svc["name"], svc_name.as_str(), "{label}");
        assert_eq!(svc["namespace"], e.ns.as_str(), "{label}");
        let port = service["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"] == svc["port"])
            .unwrap_or_else(|| panic!("{label}: no Service port {}", svc["port"]));
        let target = port["targetPort"].as_str().expect("a named targetPort");
        assert_eq!(
            Some(container_port(label, container, target)),
            flag(&args, "--port").and_then(|p| p.parse().ok()),
            "{label}: the webhook's Service port reaches --port"
        );
    }

    let mut c = cluster(e);
    c.user = format!("system:serviceaccount:{}:{sa}", e.ns);
    c.enforce_rbac = true;
    apply(label, &mut c, objects, &e.ns, root);
    let tls_secret = flag(&args, "--tls-secret").unwrap_or("").to_string();
    let certificates: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Certificate")
        .collect();
    for cert in &certificates {
        cert_manager_issues(label, &mut c, objects, cert);
    }
    if !certificates.is_empty() {
        assert!(
            certificates
                .iter()
                .any(|c| c["spec"]["secretName"] == tls_secret.as_str()),
            "{label}: no Certificate writes --tls-secret {tls_secret}"
        );
    }
    // RBAC is enforced: the ServiceAccount cannot read Secrets it was not granted.
    assert!(!crate::common::rbac::allows(
        &c,
        &c.user,
        &json!({"group": "", "resource": "secrets", "verb": "list", "namespace": "kube-system"})
    ));
    let api = FakeApi::start(c);

    let (server, ports) = start_server(label, &api, deployment);
    for (flag_name, port_name) in [
        ("--metrics-port", "http-monitoring"),
        ("--health-port", "health"),
    ] {
        assert_eq!(
            ports.get(flag_name).copied(),
            Some(container_port(label, container, port_name)),
            "{label}: {flag_name} is the container port {port_name}"
        );
    }
    let health = holds_within(EVENTUALLY, || async {
        logged_address(&server, "health endpoints listening").is_some()
    })
    .await;
    assert!(health, "{label}: no health port:\n{}", server.log_text());
    let health = logged_address(&server, "health endpoints listening").expect("health");
    let readiness = &container["readinessProbe"]["httpGet"];
    assert_eq!(readiness["port"], "health", "{label}");
    let path = readiness["path"]
        .as_str()
        .expect("readiness path")
        .to_string();
    for probe in ["startupProbe", "livenessProbe"] {
        assert_eq!(
            container[probe]["httpGet"]["port"], "health",
            "{label}: {probe}"
        );
    }
    eventually(&format!("{label}: ready ({path})"), || async {
        plain_get(&health, &path)
            .await
            .is_some_and(|(s, _)| s == 200)
    })
    .await;
    api.lock()
        .endpoints
        .insert((e.ns.clone(), svc_name.clone()), vec![server.addr]);
    // Activated: every entry at the values' failure policy, with a caBundle (after the
    // Deployment's activation delay, 10 s by default: waited for up to three times the usual
    // bound, eight servers starting side by side).
    let activated = holds_within(3 * EVENTUALLY, || async {
        let a = api.lock();
        a.get("mutatingwebhookconfigurations", "", &mwc_name)
            .and_then(|m| m["webhooks"].as_array().cloned())
            .is_some_and(|w| {
                w.iter().all(|x| {
                    x["failurePolicy"] == e.failure_policy.as_str()
                        && x["clientConfig"]["caBundle"].is_string()
                })
            })
    })
    .await;
    assert!(
        activated,
        "{label}: the webhook configuration was not activated:\n{}",
        server.log_text()
    );

    // What the chain applied to each entry it called: the values', and a server that answers
    // within the call's bound.
    let request_timeout: u64 = flag(&args, "--request-timeout")
        .unwrap_or(defaults::REQUEST_TIMEOUT)
        .trim_end_matches('s')
        .parse()
        .expect("--request-timeout in seconds");
    let check_applied = |applied: &[Applied], what: &str| {
        assert!(!applied.is_empty(), "{label}: {what}: no entry selected it");
        for a in applied {
            assert!(
                a.webhook.starts_with(&format!("{mwc_name}/")),
                "{label}: {a:?}"
            );
            assert_eq!(a.failure_policy, e.failure_policy, "{label}: {what}");
            assert_eq!(a.timeout_seconds, e.timeout_seconds, "{label}: {what}");
            assert_eq!(a.match_conditions, e.match_conditions, "{label}: {what}");
            assert!(
                request_timeout < a.timeout_seconds,
                "{label}: the server answers within {request_timeout}s, the API server waits {}s",
                a.timeout_seconds
            );
        }
    };
    let a = api
        .create_pod(
            "selected",
            pod("injected", &e.pod_needs, json!({}), false),
            false,
        )
        .await
        .unwrap_or_else(|r| panic!("{label}: refused: {r:?}\n{}", server.log_text()));
    assert!(injected(&a.pod), "{label}: not injected: {:?}", a.calls);
    check_applied(&a.applied, "the selected pod");
    assert!(
        a.applied.iter().all(|x| x.outcome == "called"),
        "{label}: {:?}",
        a.applied
    );
    if !matches!(e.revision.as_str(), "default" | "") && e.istio_configmaps {
        assert!(
            proxy_image(&a.pod).ends_with(&format!(":{REVISION_TAG}")),
            "{label}: the proxy of revision {}'s ConfigMaps: {}",
            e.revision,
            proxy_image(&a.pod)
        );
    }
    let mut untouched = vec![
        "istiod-selected".to_string(),
        "kube-system".to_string(),
        e.ns.clone(),
    ];
    untouched.extend(e.excluded.iter().cloned());
    if e.ns_needs.as_object().is_some_and(|m| !m.is_empty()) {
        untouched.push("narrowed-out".to_string());
    }
    let mut untouched: Vec<(String, Value)> = untouched
        .into_iter()
        .map(|ns| (ns, e.pod_needs.clone()))
        .collect();
    if e.pod_needs.as_object().is_some_and(|m| !m.is_empty()) {
        untouched.push(("selected".to_string(), json!({})));
    }
    if e.pod_refused.as_object().is_some_and(|m| !m.is_empty()) {
        untouched.push(("selected".to_string(), merged(&e.pod_needs, &e.pod_refused)));
    }
    for (i, (ns, labels)) in untouched.iter().enumerate() {
        let a = api
            .create_pod(
                ns,
                pod(&format!("untouched-{i}"), labels, json!({}), false),
                false,
            )
            .await
            .unwrap_or_else(|r| panic!("{label}: {ns}: refused: {r:?}"));
        assert!(a.calls.is_empty(), "{label}: {ns} {labels}: {:?}", a.calls);
        assert!(!injected(&a.pod), "{label}: {ns} {labels}");
    }
    for (name, annotations, host_network) in [
        ("host-network", json!({}), true),
        (
            "opted-out",
            json!({"sidecar.istio.io/inject": "false"}),
            false,
        ),
    ] {
        let a = api
            .create_pod(
                "selected",
                pod(name, &e.pod_needs, annotations, host_network),
                false,
            )
            .await
            .unwrap_or_else(|r| panic!("{label}: {name}: refused: {r:?}"));
        assert!(!injected(&a.pod), "{label}: {name}");
        check_applied(&a.applied, name);
        let skipped = a
            .applied
            .iter()
            .all(|x| x.outcome == "skipped by matchConditions");
        assert_eq!(
            skipped,
            !e.match_conditions.is_empty(),
            "{label}: {name}: {:?}",
            a.applied
        );
    }
    // The replica out of the Service: the values' failure policy decides.
    let endpoints = api
        .lock()
        .endpoints
        .remove(&(e.ns.clone(), svc_name.clone()));
    let outcome = api
        .create_pod(
            "selected",
            pod("no-replica", &e.pod_needs, json!({}), false),
            false,
        )
        .await;
    match e.failure_policy.as_str() {
        "Fail" => {
            let r = outcome.expect_err("refused without a replica under Fail");
            assert_eq!(r.code, 500, "{label}: {}", r.message);
            assert!(
                r.message.contains("failed calling webhook"),
                "{label}: {}",
                r.message
            );
        }
        _ => {
            let a = outcome.expect("admitted without a replica under Ignore");
            assert!(!injected(&a.pod), "{label}");
            assert!(
                a.applied.iter().all(|x| x.outcome == "failed open"),
                "{label}"
            );
        }
    }
    api.lock().endpoints.insert(
        (e.ns.clone(), svc_name.clone()),
        endpoints.expect("endpoints"),
    );

    // Metrics: the plain-HTTP port, the failure policy gauge of each entry.
    let metrics = logged_address(&server, "metrics listening").expect("metrics port logged");
    let (status, text) = plain_get(&metrics, "/metrics").await.expect("scraped");
    assert_eq!(status, 200, "{label}");
    for entry in mwc["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["name"].as_str())
    {
        let series = format!(
            "outrigger_webhook_failure_policy{{configuration=\"{mwc_name}\",webhook=\"{entry}\",policy=\"{}\"}} 1",
            e.failure_policy
        );
        assert!(
            text.lines().any(|l| l == series),
            "{label}: {series} not in\n{text}"
        );
    }
    // The admission probe: its namespace is the render's and selected; a short interval is
    // awaited until a probe pod came back injected.
    if let Some(interval) = flag(&args, "--probe-interval") {
        let probe_ns = flag(&args, "--probe-namespace").expect("--probe-namespace");
        let namespace = object(objects, "Namespace", Some(probe_ns))
            .unwrap_or_else(|| panic!("{label}: the render creates no namespace {probe_ns}"));
        let mut labels = namespace["metadata"]["labels"].clone();
        labels["kubernetes.io/metadata.name"] = json!(probe_ns);
        let probe_pod = json!({"app": "outrigger-probe"});
        assert!(
            mwc["webhooks"].as_array().into_iter().flatten().any(|w| {
                selects(&w["namespaceSelector"], &labels)
                    && selects(&w["objectSelector"], &probe_pod)
            }),
            "{label}: no entry selects the probe's pod in {probe_ns} ({labels})"
        );
        let seconds = interval
            .strip_suffix('s')
            .and_then(|n| n.parse::<u64>().ok());
        if seconds.is_some_and(|s| s <= 10) {
            let series = r#"outrigger_admission_probe_total{outcome="injected"}"#;
            eventually(&format!("{label}: a probe pod injected"), || async {
                plain_get(&metrics, "/metrics")
                    .await
                    .is_some_and(|(_, text)| {
                        crate::common::metric(&text, series).is_some_and(|v| v >= 1.0)
                    })
            })
            .await;
        }
    }
    let metrics_port = ports["--metrics-port"];
    scrape_objects(label, e, objects, service, template, metrics_port);
    not_modelled_objects(label, objects, deployment, template, &args);

    let denied = api.lock().denied.clone();
    assert!(
        denied.is_empty(),
        "{label}: RBAC refused the server: {denied:#?}"
    );
    drop(server);
}

/// ServiceMonitor, PodMonitor and PrometheusRule (the module's documentation).
fn scrape_objects(
    label: &str,
    e: &Expect,
    objects: &[Value],
    service: &Value,
    template: &Value,
    metrics_port: u64,
) {
    let container = &template["spec"]["containers"][0];
    let mut jobs = Vec::new();
    if let Some(sm) = object(objects, "ServiceMonitor", None) {
        assert!(
            selects(&sm["spec"]["selector"], &service["metadata"]["labels"]),
            "{label}"
        );
        assert_eq!(
            strings(&sm["spec"]["namespaceSelector"]["matchNames"]),
            [e.ns.as_str()]
        );
        for ep in sm["spec"]["endpoints"].as_array().expect("endpoints") {
            let port = service["spec"]["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == ep["port"])
                .unwrap_or_else(|| panic!("{label}: no Service port named {}", ep["port"]));
            let target = port["targetPort"].as_str().expect("named targetPort");
            assert_eq!(
                container_port(label, container, target),
                metrics_port,
                "{label}"
            );
            assert_eq!(ep["path"], "/metrics", "{label}");
        }
        let job_label = sm["spec"]["jobLabel"].as_str().expect("jobLabel");
        jobs.push(service["metadata"]["labels"][job_label].clone());
    }
    if let Some(pm) = object(objects, "PodMonitor", None) {
        let pod_labels = &template["metadata"]["labels"];
        assert!(selects(&pm["spec"]["selector"], pod_labels), "{label}");
        assert_eq!(
            strings(&pm["spec"]["namespaceSelector"]["matchNames"]),
            [e.ns.as_str()]
        );
        for ep in pm["spec"]["podMetricsEndpoints"]
            .as_array()
            .expect("endpoints")
        {
            let port = ep["port"].as_str().expect("port name");
            assert_eq!(
                container_port(label, container, port),
                metrics_port,
                "{label}"
            );
            assert_eq!(ep["path"], "/metrics", "{label}");
        }
        let job_label = pm["spec"]["jobLabel"].as_str().expect("jobLabel");
        jobs.push(pod_labels[job_label].clone());
    }
    if let Some(rule) = object(objects, "PrometheusRule", None) {
        let text = serde_json::to_string(&rule["spec"]).expect("JSON");
        assert!(
            text.contains(&format!("namespace=\\\"{}\\\"", e.ns)),
            "{label}"
        );
        for job in &jobs {
            let job = job.as_str().expect("job label value");
            assert!(
                text.contains(&format!("job=\\\"{job}\\\"")),
                "{label}: job {job}"
            );
        }
    }
}

/// NetworkPolicy, PodDisruptionBudget, the dashboard's ConfigMap (the module's documentation).
fn not_modelled_objects(
    label: &str,
    objects: &[Value],
    deployment: &Value,
    template: &Value,
    args: &[String],
) {
    let pod_labels = &template["metadata"]["labels"];
    let container = &template["spec"]["containers"][0];
    if let Some(np) = object(objects, "NetworkPolicy", None) {
        assert!(selects(&np["spec"]["podSelector"], pod_labels), "{label}");
        assert!(strings(&np["spec"]["policyTypes"]).contains(&"Ingress".to_string()));
        let open: Vec<u64> = np["spec"]["ingress"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| r["ports"].as_array().cloned().unwrap_or_default())
            .map(|p| match &p["port"] {
                Value::String(name) => container_port(label, container, name),
                other => other.as_u64().expect("a port"),
            })
            .collect();
        for name in ["https", "http-monitoring"] {
            let port = container_port(label, container, name);
            assert!(
                open.contains(&port),
                "{label}: the NetworkPolicy closes {name} ({port})"
            );
        }
        for f in ["--port", "--metrics-port"] {
            let port: u64 = flag(args, f).and_then(|p| p.parse().ok()).expect("port");
            assert!(
                open.contains(&port),
                "{label}: the NetworkPolicy closes {f} {port}"
            );
        }
    }
    if let Some(pdb) = object(objects, "PodDisruptionBudget", None) {
        assert!(selects(&pdb["spec"]["selector"], pod_labels), "{label}");
        let replicas = deployment["spec"]["replicas"].as_i64().unwrap_or(1);
        let max_unavailable = pdb["spec"]["maxUnavailable"]
            .as_i64()
            .expect("maxUnavailable");
        let desired_healthy = (replicas - max_unavailable).max(0);
        let allowed_all_healthy = (replicas - desired_healthy).max(0);
        assert!(
            allowed_all_healthy >= 1,
            "{label}: no eviction allowed: a drain blocks"
        );
        // One replica cannot be both evictable and kept up: the budget protects from two on.
        if replicas >= 2 {
            assert!(
                desired_healthy >= 1,
                "{label}: every replica may be evicted at once"
            );
        }
    }
    if let Some(cm) = objects.iter().find(|o| {
        o["kind"] == "ConfigMap"
            && o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("-dashboard"))
    }) {
        let data = cm["data"].as_object().expect("data");
        for (key, text) in data {
            let dashboard: Value =
                serde_json::from_str(text.as_str().unwrap_or("")).expect("dashboard JSON");
            assert!(dashboard["panels"].is_array(), "{label}: {key}");
        }
    }
}
