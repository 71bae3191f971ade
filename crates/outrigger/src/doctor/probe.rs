//! The end-to-end probe: a server-side dry-run create (`?dryRun=All`: admission runs, nothing
//! is stored) of a probe pod in the namespace the user names, compared with what outrigger
//! renders for the same pod from the configuration it serves (the ConfigMaps `serve` reads, as
//! the Deployment's flags name them). When they differ, the other mutating webhooks the API
//! server called for the pod are named with the differing fields; when the pod came back
//! uninjected, the entry that should have injected it and why it did not, as far as can be told.

use ::kube::api::{Api, ListParams};
use ::kube::Client;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Node;
use outrigger_inject::config::{defaults, Snapshot};
use outrigger_inject::decide::native::{NativeMode, StaticFacts};
use outrigger_inject::webhook::{self, Outcome};
use serde_json::{json, Map, Value};

use super::facts::{Facts, ServerSettings};
use super::selection::{self, Labels};
use super::{Check, Verdict};
use crate::kube::config_watch::{self, ConfigMapRef, RawConfig};
use crate::kube::inject_source::{configmap_name, read_keys};
use crate::kube::probe::{dry_run_create, injected, probe_pod};

/// Name of the check.
pub const PROBE: &str = "probe";

/// The probe pod's name.
pub const POD_NAME: &str = "outrigger-doctor-probe";

/// The ConfigMap keys of the configuration outrigger serves, read as `serve` reads them; `None`
/// when it serves the embedded default.
pub async fn served_raw(client: &Client, facts: &Facts) -> Result<Option<RawConfig>, String> {
    let s = &facts.server;
    let (inject, mesh) = if let Some(r) = &s.inject_config_map {
        (Some(r.clone()), s.mesh_config_map.clone())
    } else if s.istio_configmaps {
        let ns = &s.istio_namespace;
        (
            Some(format!(
                "{ns}/{}",
                configmap_name(
                    "istio-sidecar-injector",
                    "istio-sidecar-injector",
                    &s.revision
                )
            )),
            Some(format!(
                "{ns}/{}",
                configmap_name("istio", "istio", &s.revision)
            )),
        )
    } else {
        (None, None)
    };
    let Some(inject) = inject else {
        return Ok(None);
    };
    let r = ConfigMapRef::parse(&inject).map_err(|e| e.to_string())?;
    let hint = "the ConfigMap the server reads (its --istio-configmaps / --injectConfigMap)";
    let kv = read_keys(
        client.clone(),
        &r,
        &[config_watch::CONFIG_KEY, config_watch::VALUES_KEY],
        hint,
    )
    .await
    .map_err(|e| crate::report::chain(&e))?;
    let mesh = match mesh {
        Some(m) => {
            let r = ConfigMapRef::parse(&m).map_err(|e| e.to_string())?;
            read_keys(client.clone(), &r, &[config_watch::MESH_KEY], hint)
                .await
                .ok()
                .and_then(|mut v| v.pop())
        }
        None => None,
    };
    Ok(Some(RawConfig {
        config: kv[0].clone(),
        values: kv[1].clone(),
        mesh,
    }))
}

/// The configuration outrigger serves, as [`served_raw`] read it, loaded as `serve` loads it.
fn served_configuration(served: &Result<Option<RawConfig>, String>) -> Result<Snapshot, String> {
    match served.as_ref().map_err(Clone::clone)? {
        None => Snapshot::load(defaults::CONFIG, defaults::VALUES, Some(defaults::MESH))
            .map_err(|e| e.to_string()),
        Some(raw) => config_watch::parse_snapshot(raw),
    }
}

/// What outrigger renders for `pod` in `namespace`: the pod after its patch, and the outcome.
/// `server` says how the server runs (its OpenShift mode and revision).
pub fn render(
    snapshot: &Snapshot,
    native: NativeMode,
    nodes: &StaticFacts,
    server: &ServerSettings,
    namespace: &str,
    pod: &Value,
) -> (Value, Outcome) {
    let mut pod = pod.clone();
    pod["metadata"]["namespace"] = json!(namespace);
    let gvk = json!({"group": "", "version": "v1", "kind": "Pod"});
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "outrigger-doctor", "kind": gvk,
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": pod["metadata"]["name"], "namespace": namespace, "operation": "CREATE",
            "userInfo": {"username": "outrigger-doctor"}, "object": pod, "dryRun": true}});
    let ctx = webhook::Context {
        snapshot,
        native_mode: native,
        cluster: nodes,
        openshift: server.openshift,
        compliance_policy: "",
        revision: &server.revision,
        keep_metadata: false,
        max_list_entries: webhook::MAX_LIST_ENTRIES,
    };
    let body = serde_json::to_vec(&review).unwrap_or_default();
    let reviewed = webhook::review(&body, "/inject", &ctx);
    let response: Value = serde_json::from_slice(&reviewed.response).unwrap_or(Value::Null);
    if let Some(patch) = response["response"]["patch"].as_str() {
        use base64::Engine as _;
        if let Ok(ops) = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
        {
            let _ = outrigger_inject::patch::apply(&mut pod, &ops);
        }
    }
    (pod, reviewed.outcome)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

/// Lists whose extra elements are not a difference: the API server's own admission adds
/// volumes and mounts (the service account token).
fn extras_allowed(path: &str) -> bool {
    path.ends_with(".volumes") || path.ends_with(".volumeMounts") || path.starts_with("metadata.")
}

/// The fields where `actual` differs from `expected` (every field `expected` has must be in
/// `actual` with its value; `actual` may carry fields the API server defaults).
fn subset(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match a.get(k) {
                    Some(av) => subset(&p, ev, av, out),
                    None => out.push(format!("{p}: rendered {}, absent", short(ev))),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            let named = |l: &Vec<Value>| !l.is_empty() && l.iter().all(|x| x["name"].is_string());
            if named(e) && (a.is_empty() || named(a)) {
                for ev in e {
                    let n = &ev["name"];
                    let p = format!("{path}[{}]", n.as_str().unwrap_or(""));
                    match a.iter().find(|x| &x["name"] == n) {
                        Some(av) => subset(&p, ev, av, out),
                        None => out.push(format!("{p}: rendered, absent")),
                    }
                }
                if !extras_allowed(path) {
                    for av in a {
                        if !e.iter().any(|x| x["name"] == av["name"]) {
                            out.push(format!(
                                "{path}[{}]: added, not rendered by outrigger",
                                av["name"].as_str().unwrap_or("")
                            ));
                        }
                    }
                }
            } else if e.len() != a.len() && !extras_allowed(path) || e.len() > a.len() {
                out.push(format!(
                    "{path}: rendered {}, got {}",
                    short(expected),
                    short(actual)
                ));
            } else {
                for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                    subset(&format!("{path}[{i}]"), ev, av, out);
                }
            }
        }
        (e, a) if e != a => out.push(format!("{path}: rendered {}, got {}", short(e), short(a))),
        _ => {}
    }
}

/// The injected parts of `expected` missing from or changed in `actual`, and containers
/// `actual` has that `expected` does not.
pub fn differences(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for k in ["annotations", "labels"] {
        subset(
            &format!("metadata.{k}"),
            &expected["metadata"][k]
                .as_object()
                .map(|m| Value::Object(m.clone()))
                .unwrap_or(json!({})),
            &actual["metadata"][k]
                .as_object()
                .map(|m| Value::Object(m.clone()))
                .unwrap_or(json!({})),
            &mut out,
        );
    }
    for k in ["containers", "initContainers", "volumes"] {
        let e = expected["spec"][k].clone();
        let a = actual["spec"][k].clone();
        let e = if e.is_null() { json!([]) } else { e };
        let a = if a.is_null() { json!([]) } else { a };
        subset(&format!("spec.{k}"), &e, &a, &mut out);
    }
    out
}

/// The webhook a refusal names (`failed calling webhook "X"`, `admission webhook "X" ...`).
fn named_webhook(message: &str) -> Option<&str> {
    let start = message.find("webhook \"").map(|i| i + "webhook \"".len())?;
    let end = message[start..].find('"')? + start;
    Some(&message[start..end])
}

fn refusal_hint(message: &str) -> &'static str {
    if message.contains("no ready endpoints") || message.contains("no endpoints") {
        "the Service has no ready endpoints: see service-endpoints"
    } else if message.contains("connection refused")
        || message.contains("dial tcp")
        || message.contains("i/o timeout")
    {
        "the Service's endpoints do not accept connections on the port the API server calls: \
         check the Service's targetPort against the container's port, and NetworkPolicies \
         between the API server and the injector (deploy/components/network-policy admits 9443)"
    } else if message.contains("x509") || message.contains("certificate") || message.contains("tls")
    {
        "the API server does not trust the serving certificate: see ca-bundle"
    } else if message.contains("deadline") || message.contains("timeout") {
        "the webhook did not answer within timeoutSeconds: see timeout, and the server's latency"
    } else {
        "see the other checks and the named webhook's log"
    }
}

/// The `probe` check: dry-run create in `namespace` (`None`: skipped).
/// `served` is the configuration outrigger serves, as [`served_raw`] read it.
pub async fn check(
    client: &Client,
    facts: &Facts,
    served: &Result<Option<RawConfig>, String>,
    namespace: Option<&str>,
) -> Check {
    let Some(ns) = namespace else {
        return Check::with(
            PROBE,
            Verdict::Skipped,
            "no --probe-namespace given: the end-to-end probe was not run",
            "outrigger doctor --probe-namespace NAME (a namespace outrigger injects; a server-side \
             dry run stores nothing and needs create on pods there)",
        );
    };
    let Some(ours) = facts.ours() else {
        return Check::with(PROBE, Verdict::Skipped, "no webhook configuration", "");
    };
    let configs: &[MutatingWebhookConfiguration] = facts.configurations.as_deref().unwrap_or(&[]);
    let snapshot = match served_configuration(served) {
        Ok(s) => s,
        Err(e) => {
            return Check::with(
                PROBE,
                Verdict::Fail,
                format!("cannot read the configuration outrigger serves: {e}"),
                "the server cannot either: it stays not ready (see its /readyz)",
            )
        }
    };
    let native = NativeMode::parse(facts.server.native_sidecars.as_deref().unwrap_or("auto")).0;
    let nodes = match native {
        NativeMode::Auto => StaticFacts {
            nodes: Api::<Node>::all(client.clone())
                .list(&ListParams::default())
                .await
                .ok()
                .map(|l| l.items.into_iter().map(crate::kube::nodes::facts).collect()),
            ..StaticFacts::default()
        },
        _ => StaticFacts::default(),
    };
    let pod = probe_pod(POD_NAME);
    let (expected, outcome) = render(&snapshot, native, &nodes, &facts.server, ns, &pod);
    let ns_labels = selection::labels_of(facts.namespaces.as_deref().unwrap_or(&[]), ns);
    let pod_labels: Labels = pod["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_else(Map::new);
    let ours_entries = selection::injecting_entries_selecting(ours, &ns_labels, &pod_labels);
    let others: Vec<String> = selection::call_order(configs, &ns_labels, &pod_labels)
        .into_iter()
        .filter(|(c, _)| c != &facts.webhook_config_name)
        .map(|(c, e)| format!("{c}/{e}"))
        .collect();
    let others_text = if others.is_empty() {
        "no other mutating webhook is called for it".to_string()
    } else {
        format!("other webhooks called for it: {}", others.join(", "))
    };

    let actual = match dry_run_create(client, ns, &pod).await {
        Ok(p) => p,
        Err((403, msg)) => {
            return Check::with(
                PROBE,
                Verdict::Warn,
                format!("not allowed to probe in {ns}: {msg}"),
                "a dry-run create needs create on pods in the probe namespace",
            )
        }
        Err((404, msg)) => {
            return Check::with(
                PROBE,
                Verdict::Fail,
                format!("cannot probe in {ns}: {msg}"),
                "--probe-namespace must name an existing namespace",
            )
        }
        Err((code, msg)) => {
            let whose = refused_by(configs, &ns_labels, &pod_labels, &msg);
            return Check::with(
                PROBE,
                Verdict::Fail,
                format!(
                    "a dry-run create of pod {POD_NAME} in {ns} was refused ({code}){}: {msg}",
                    if whose.is_empty() {
                        String::new()
                    } else {
                        format!(" by {}", whose.join(" or "))
                    }
                ),
                refusal_hint(&msg),
            );
        }
    };
    let expect_injection = matches!(outcome, Outcome::Injected) && !ours_entries.is_empty();
    let got = injected(&actual);
    match (expect_injection, got) {
        (true, true) => {
            let diffs = differences(&expected, &actual);
            if diffs.is_empty() {
                return Check::pass(
                    PROBE,
                    format!(
                        "a dry-run create in {ns} came back injected exactly as outrigger \
                         renders it (via {}); {others_text}",
                        ours_entries.join(", ")
                    ),
                );
            }
            let shown: Vec<String> = diffs.iter().take(4).cloned().collect();
            let more = diffs.len().saturating_sub(shown.len());
            let at_fault = match others.len() {
                0 => "no other webhook is called for it: the server serves another configuration \
                      than its ConfigMaps hold (a replica not yet reloaded?)"
                    .to_string(),
                1 => format!("changed by {}", others[0]),
                _ => format!("changed by one of {}", others.join(", ")),
            };
            Check::with(
                PROBE,
                Verdict::Fail,
                format!(
                    "the pod a dry-run create in {ns} returns differs from what outrigger \
                     renders: {}{}; {at_fault}",
                    shown.join("; "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ),
                "exclude the namespace from the other webhook's selectors, or order it before \
                 outrigger's configuration (the API server calls configurations by name)",
            )
        }
        (true, false) => {
            let ours_cfg: Vec<String> = selection::entries(ours)
                .filter(|e| ours_entries.contains(&e.name.as_str()))
                .map(|e| {
                    format!(
                        "{} (failurePolicy {})",
                        e.name,
                        e.failure_policy.as_deref().unwrap_or("Fail")
                    )
                })
                .collect();
            let why = if selection::entries(ours)
                .filter(|e| ours_entries.contains(&e.name.as_str()))
                .any(|e| e.failure_policy.as_deref() == Some("Ignore"))
            {
                "its call failed and failurePolicy Ignore admitted the pod without a sidecar"
            } else {
                "the server answered without injecting, or a later webhook removed the sidecar"
            };
            Check::with(
                PROBE,
                Verdict::Fail,
                format!(
                    "a dry-run create in {ns} came back without a sidecar although {} selects \
                     it and outrigger would inject it: {why}; {others_text}",
                    ours_cfg.join(", ")
                ),
                "see service-endpoints and ca-bundle; with failurePolicy Ignore the API server \
                 swallows the cause (its log has it)",
            )
        }
        (false, true) => Check::with(
            PROBE,
            Verdict::Warn,
            format!(
                "pods in {ns} are injected, but not by outrigger ({}); {others_text}",
                if ours_entries.is_empty() {
                    format!("{} does not select them", facts.webhook_config_name)
                } else {
                    "its decision is not to inject".to_string()
                }
            ),
            "probe a namespace outrigger injects",
        ),
        (false, false) => Check::with(
            PROBE,
            Verdict::Warn,
            format!(
                "nothing to compare in {ns}: {}",
                if ours_entries.is_empty() {
                    format!("{} does not select its pods", facts.webhook_config_name)
                } else {
                    format!("outrigger's decision is not to inject ({outcome:?})")
                }
            ),
            "probe a namespace outrigger injects (labelled istio-injection=enabled or istio.io/rev)",
        ),
    }
}

/// `CONFIGURATION/ENTRY` of the entries a refusal names: called for the pod, with the entry's
/// name, narrowed to those whose Service (`NAME.NAMESPACE.svc`) the message names when it
/// names one (entry names repeat across configurations: istiod's and outrigger's alike).
fn refused_by(
    configs: &[MutatingWebhookConfiguration],
    ns_labels: &Labels,
    pod_labels: &Labels,
    message: &str,
) -> Vec<String> {
    let Some(hook) = named_webhook(message) else {
        return Vec::new();
    };
    let mut sorted: Vec<&MutatingWebhookConfiguration> = configs.iter().collect();
    sorted.sort_by(|a, b| selection::name(a).cmp(selection::name(b)));
    let called: Vec<(String, String, bool)> = sorted
        .into_iter()
        .flat_map(|c| {
            selection::entries(c)
                .filter(|e| e.name == hook && selection::entry_selects(e, ns_labels, pod_labels))
                .map(move |e| {
                    let host = e
                        .client_config
                        .service
                        .as_ref()
                        .map(|s| format!("{}.{}.svc", s.name, s.namespace));
                    let named = host.is_some_and(|h| message.contains(&format!("//{h}")));
                    (selection::name(c).to_string(), e.name.clone(), named)
                })
        })
        .collect();
    let narrowed = called.iter().any(|(_, _, n)| *n);
    called
        .into_iter()
        .filter(|(_, _, n)| *n || !narrowed)
        .map(|(c, e, _)| format!("{c}/{e}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_injectors_image_is_a_difference_and_defaults_are_not() {
        let expected = json!({"metadata": {"annotations": {"sidecar.istio.io/status": "x"}},
            "spec": {"containers": [{"name": "app"}, {"name": "istio-proxy", "image": "a", "args": ["p"]}]}});
        let mut actual = expected.clone();
        actual["spec"]["containers"][1]["imagePullPolicy"] = json!("IfNotPresent");
        actual["spec"]["volumes"] = json!([{"name": "kube-api-access-x"}]);
        assert_eq!(differences(&expected, &actual), Vec::<String>::new());
        actual["spec"]["containers"][1]["image"] = json!("b");
        actual["spec"]["containers"]
            .as_array_mut()
            .expect("list")
            .push(json!({"name": "extra"}));
        assert_eq!(
            differences(&expected, &actual),
            [
                "spec.containers[istio-proxy].image: rendered \"a\", got \"b\"",
                "spec.containers[extra]: added, not rendered by outrigger"
            ]
        );
    }

    #[test]
    fn refusals_name_the_webhook() {
        let m = "Internal error occurred: failed calling webhook \"namespace.sidecar-injector.istio.io\": x";
        assert_eq!(
            named_webhook(m),
            Some("namespace.sidecar-injector.istio.io")
        );
        assert_eq!(named_webhook("nothing"), None);
    }
}
