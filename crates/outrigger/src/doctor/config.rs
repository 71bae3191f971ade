//! The checks of the webhook configurations: outrigger's exists and injects; which namespaces it
//! selects and which labelled namespaces nothing selects; kube-system and outrigger's own
//! namespace excluded; other injectors selecting the same namespaces (`kube::overlap`, the one
//! implementation `serve --detect-overlaps` uses); the order of the other mutating webhooks and
//! reinvocation; `failurePolicy`; `timeoutSeconds` against the server's deadline.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};
use serde_json::Value;

use super::facts::Facts;
use super::selection::{self, entries, is_injector, Labels};
use super::{service, Check, Verdict};
use crate::kube::overlap;

/// The API server's default `timeoutSeconds`, and the largest it accepts.
const DEFAULT_TIMEOUT: i32 = 10;
const MAX_TIMEOUT: i32 = 30;

/// Names of the checks, in order.
pub const CONFIGURATION: &str = "webhook-configuration";
/// See [`CONFIGURATION`].
pub const SELECTION: &str = "namespace-selection";
/// See [`CONFIGURATION`].
pub const EXCLUSIONS: &str = "excluded-namespaces";
/// See [`CONFIGURATION`].
pub const OVERLAPS: &str = "overlaps";
/// See [`CONFIGURATION`].
pub const ORDER: &str = "webhook-order";
/// See [`CONFIGURATION`].
pub const FAILURE_POLICY: &str = "failure-policy";
/// See [`CONFIGURATION`].
pub const TIMEOUT: &str = "timeout";

/// Every configuration check, in order.
pub fn checks(facts: &Facts) -> Vec<Check> {
    let names = [
        SELECTION,
        EXCLUSIONS,
        OVERLAPS,
        ORDER,
        FAILURE_POLICY,
        TIMEOUT,
    ];
    let configs = match &facts.configurations {
        Ok(c) => c,
        Err(e) => {
            let mut out = vec![Check::with(
                CONFIGURATION,
                Verdict::Fail,
                e.clone(),
                "doctor needs list on mutatingwebhookconfigurations",
            )];
            out.extend(
                names
                    .iter()
                    .map(|n| skipped(n, "the webhook configurations were not read")),
            );
            return out;
        }
    };
    let Some(ours) = facts.ours() else {
        let mut out = vec![Check::with(
            CONFIGURATION,
            Verdict::Fail,
            format!(
                "MutatingWebhookConfiguration {} not found: no pod is sent to outrigger",
                facts.webhook_config_name
            ),
            "install it (kubectl apply -k deploy/base), or name it with --webhook-config-name",
        )];
        out.extend(names.iter().map(|n| skipped(n, "no webhook configuration")));
        return out;
    };
    let injecting: Vec<&MutatingWebhook> = entries(ours).filter(|e| is_injector(e)).collect();
    if injecting.is_empty() {
        let mut out = vec![Check::with(
            CONFIGURATION,
            Verdict::Fail,
            format!(
                "MutatingWebhookConfiguration {} has no injecting entry (*{})",
                facts.webhook_config_name,
                crate::kube::webhook_object::ENTRY_SUFFIX
            ),
            "regenerate it with outrigger webhook-config",
        )];
        out.extend(names.iter().map(|n| skipped(n, "no injecting entry")));
        return out;
    }
    let names_of = |es: &[&MutatingWebhook]| {
        es.iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let namespaces = facts.namespaces.as_deref().unwrap_or(&[]);
    vec![
        Check::pass(
            CONFIGURATION,
            format!(
                "MutatingWebhookConfiguration {}: {} injecting entries ({})",
                facts.webhook_config_name,
                injecting.len(),
                names_of(&injecting)
            ),
        ),
        match &facts.namespaces {
            Ok(_) => selection_check(facts, configs, ours),
            Err(e) => Check::with(
                SELECTION,
                Verdict::Skipped,
                e.clone(),
                "doctor needs list on namespaces",
            ),
        },
        exclusions(facts, ours, namespaces),
        match &facts.namespaces {
            Ok(_) => overlaps(facts, configs, namespaces),
            Err(e) => Check::with(
                OVERLAPS,
                Verdict::Skipped,
                e.clone(),
                "doctor needs list on namespaces",
            ),
        },
        match &facts.namespaces {
            Ok(_) => order(facts, configs, ours, namespaces),
            Err(e) => Check::with(
                ORDER,
                Verdict::Skipped,
                e.clone(),
                "doctor needs list on namespaces",
            ),
        },
        failure_policy(facts, &injecting),
        timeout(facts, &injecting),
    ]
}

fn skipped(name: &'static str, why: &str) -> Check {
    Check {
        name,
        verdict: Verdict::Skipped,
        finding: why.to_string(),
        hint: None,
    }
}

/// A short list: the first few names and how many more.
pub fn short_list(names: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut s = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

fn configuration_selects(c: &MutatingWebhookConfiguration, ns: &Labels, pod: &Labels) -> bool {
    !selection::injecting_entries_selecting(c, ns, pod).is_empty()
}

/// The injection labels a namespace asks for injection with.
fn injection_label(labels: &Labels) -> Option<String> {
    if labels.get("istio-injection").and_then(Value::as_str) == Some("enabled") {
        return Some("istio-injection=enabled".into());
    }
    labels
        .get("istio.io/rev")
        .and_then(Value::as_str)
        .map(|r| format!("istio.io/rev={r}"))
}

fn selection_check(
    facts: &Facts,
    configs: &[MutatingWebhookConfiguration],
    ours: &MutatingWebhookConfiguration,
) -> Check {
    let empty = Labels::new();
    let mut selected = Vec::new();
    let mut gaps = Vec::new();
    for ns in facts.namespaces.as_deref().unwrap_or(&[]) {
        let (name, labels) = selection::namespace_labels(ns);
        if configuration_selects(ours, &labels, &empty) {
            selected.push(name.clone());
        }
        if let Some(label) = injection_label(&labels) {
            if !configs
                .iter()
                .any(|c| configuration_selects(c, &labels, &empty))
            {
                gaps.push(format!("{name} ({label})"));
            }
        }
    }
    if !gaps.is_empty() {
        return Check::with(
            SELECTION,
            Verdict::Fail,
            format!(
                "labelled for injection but selected by no webhook configuration, so their pods \
                 are not injected: {}",
                short_list(&gaps)
            ),
            format!(
                "label them for a revision a configuration serves (outrigger: {}), or install \
                 that revision",
                if outrigger_inject::decide::selection::is_default_revision(&facts.server.revision)
                {
                    "istio-injection=enabled".to_string()
                } else {
                    format!("istio.io/rev={}", facts.server.revision)
                }
            ),
        );
    }
    if selected.is_empty() {
        return Check::with(
            SELECTION,
            Verdict::Warn,
            format!("{} selects no namespace", facts.webhook_config_name),
            "label a namespace for injection: kubectl label namespace NAME istio-injection=enabled",
        );
    }
    Check::pass(
        SELECTION,
        format!(
            "{} selects pods of {} namespace(s): {}",
            facts.webhook_config_name,
            selected.len(),
            short_list(&selected)
        ),
    )
}

/// kube-system and outrigger's namespace must never be sent to the injector, however they
/// are labelled: a pod of the injector would wait for the injector.
fn exclusions(
    facts: &Facts,
    ours: &MutatingWebhookConfiguration,
    namespaces: &[k8s_openapi::api::core::v1::Namespace],
) -> Check {
    let mut own = vec![facts.namespace.clone()];
    if facts.namespace != "kube-system" {
        own.push("kube-system".into());
    }
    // As labelled, then labelled as any namespace of the library's label table (whatever
    // value the entries select: istio-injection, the revision, outrigger's own), with any pod.
    let table = outrigger_inject::decide::selection::label_combinations();
    let mut found = Vec::new();
    for ns in &own {
        let labels = selection::labels_of(namespaces, ns);
        let as_labelled = [(Labels::new(), Labels::new()), {
            let mut p = Labels::new();
            p.insert(
                "sidecar.istio.io/inject".into(),
                Value::String("true".into()),
            );
            (Labels::new(), p)
        }];
        let hit = as_labelled
            .iter()
            .chain(table.iter())
            .find_map(|(extra, pod)| {
                let mut l = labels.clone();
                l.extend(extra.clone());
                let entry = selection::injecting_entries_selecting(ours, &l, pod)
                    .first()
                    .map(|e| e.to_string())?;
                let how = if extra.is_empty() {
                    "as labelled".to_string()
                } else {
                    let text: Vec<String> = extra
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect();
                    format!("if labelled {}", text.join(","))
                };
                Some((how, entry))
            });
        if let Some((how, entry)) = hit {
            found.push(format!("{ns} ({how}, by entry {entry})"));
        }
    }
    if found.is_empty() {
        Check::pass(
            EXCLUSIONS,
            format!(
                "{} never selects pods of {}",
                facts.webhook_config_name,
                own.join(" or ")
            ),
        )
    } else {
        Check::with(
            EXCLUSIONS,
            Verdict::Fail,
            format!(
                "{} would send pods of {} to the injector: a restart of the injector or of the \
                 control plane would wait for the injector",
                facts.webhook_config_name,
                found.join("; ")
            ),
            format!(
                "add kubernetes.io/metadata.name NotIn [{}] to every entry's namespaceSelector \
                 (outrigger webhook-config does)",
                own.join(", ")
            ),
        )
    }
}

fn overlaps(
    facts: &Facts,
    configs: &[MutatingWebhookConfiguration],
    namespaces: &[k8s_openapi::api::core::v1::Namespace],
) -> Check {
    let found = overlap::find(&facts.webhook_config_name, configs, namespaces);
    if let Some(shared) = shared_selection(&facts.webhook_config_name, configs) {
        let named = found
            .iter()
            .map(|o| {
                format!(
                    "{} (namespaces {})",
                    o.configuration,
                    short_list(&o.namespaces)
                )
            })
            .collect::<Vec<_>>();
        return Check::with(
            OVERLAPS,
            Verdict::Fail,
            format!(
                "{shared}{}: every such pod goes through both injectors, the last one called \
                 wins, and either being down refuses it",
                if named.is_empty() {
                    String::new()
                } else {
                    format!("; selected together now: {}", named.join("; "))
                }
            ),
            "remove istiod's injector webhooks before taking over (docs/kubernetes.md, \
             \"Taking over from istiod\": helm upgrade istiod with \
             --set global.operatorManageWebhooks=true, then kubectl delete \
             mutatingwebhookconfiguration of istiod and its revision tags), or install \
             deploy/base, which selects only istio.io/rev=outrigger",
        );
    }
    if found.is_empty() {
        return Check::pass(
            OVERLAPS,
            format!(
                "no other injecting configuration selects the namespaces {} selects",
                facts.webhook_config_name
            ),
        );
    }
    let text = found
        .iter()
        .map(|o| {
            format!(
                "{} (namespaces {})",
                o.configuration,
                short_list(&o.namespaces)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Check::with(
        OVERLAPS,
        Verdict::Fail,
        format!(
            "another injector selects the same pods as {}: {text}; both are called and the last \
             one called wins",
            facts.webhook_config_name
        ),
        "move each namespace to one injector (docs/kubernetes.md, migration): change its \
         injection label, or the other configuration's namespaceSelector",
    )
}

/// Whether another injecting configuration selects some pod outrigger's configuration `ours`
/// selects, over the library's table of namespace and pod label combinations
/// ([`outrigger_inject::decide::selection::label_combinations`]), whatever namespaces exist
/// today: a takeover of istiod's selectors while istiod's webhooks remain. Names the first
/// pair of entries per other configuration, and how many combinations both select.
fn shared_selection(ours: &str, configs: &[MutatingWebhookConfiguration]) -> Option<String> {
    use outrigger_inject::decide::selection as sel;
    let objects = selection::as_json(configs);
    let all: Vec<sel::Configuration<'_>> = objects.iter().map(sel::Configuration::of).collect();
    let own = all.iter().find(|c| c.name == ours)?;
    let table = sel::label_combinations();
    let mut found = Vec::new();
    for other in all.iter().filter(|c| c.name != ours) {
        let mut first = None;
        let mut count = 0;
        for (ns, pod) in &table {
            let ns = sel::namespace_labels("apps", ns);
            let (Some(a), Some(b)) = (
                sel::selecting_entry(own.webhooks, &ns, pod),
                sel::selecting_entry(other.webhooks, &ns, pod),
            ) else {
                continue;
            };
            count += 1;
            first.get_or_insert_with(|| {
                let text = |m: &Labels| {
                    let l: Vec<String> = m
                        .iter()
                        .filter(|(k, _)| k.as_str() != "kubernetes.io/metadata.name")
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect();
                    if l.is_empty() {
                        "none".to_string()
                    } else {
                        l.join(",")
                    }
                };
                format!(
                    "{ours}/{} and {}/{} both select a pod (namespace labels {}, pod labels {})",
                    a["name"].as_str().unwrap_or_default(),
                    other.name,
                    b["name"].as_str().unwrap_or_default(),
                    text(&ns),
                    text(pod)
                )
            });
        }
        if let Some(first) = first {
            found.push(format!(
                "{first}: {count} of {} label combinations",
                table.len()
            ));
        }
    }
    (!found.is_empty()).then(|| found.join("; "))
}

/// Other mutating webhooks called for pods of outrigger's namespaces, in the API server's call
/// order, and whether outrigger sees their changes (reinvocation).
fn order(
    facts: &Facts,
    configs: &[MutatingWebhookConfiguration],
    ours: &MutatingWebhookConfiguration,
    namespaces: &[k8s_openapi::api::core::v1::Namespace],
) -> Check {
    let ours_name = facts.webhook_config_name.as_str();
    let empty = Labels::new();
    let mut before: Vec<String> = Vec::new();
    let mut after: Vec<String> = Vec::new();
    for ns in namespaces {
        let (_, labels) = selection::namespace_labels(ns);
        if !configuration_selects(ours, &labels, &empty) {
            continue;
        }
        for (config, entry) in selection::call_order(configs, &labels, &empty) {
            if config == ours_name {
                continue;
            }
            let item = format!("{config}/{entry}");
            let list = if config.as_str() < ours_name {
                &mut before
            } else {
                &mut after
            };
            if !list.contains(&item) {
                list.push(item);
            }
        }
    }
    if before.is_empty() && after.is_empty() {
        return Check::pass(
            ORDER,
            format!("no other mutating webhook is called for the pods {ours_name} selects"),
        );
    }
    let reinvoked = entries(ours)
        .filter(|e| is_injector(e))
        .all(|e| e.reinvocation_policy.as_deref() == Some("IfNeeded"));
    let order = format!(
        "call order for its pods: {}{ours_name}{}",
        before.iter().map(|b| format!("{b} → ")).collect::<String>(),
        after.iter().map(|a| format!(" → {a}")).collect::<String>()
    );
    if !after.is_empty() && !reinvoked {
        return Check::with(
            ORDER,
            Verdict::Warn,
            format!(
                "{order}; {} called after outrigger may change injected pods, and outrigger is \
                 not reinvoked (reinvocationPolicy Never)",
                after.join(", ")
            ),
            "if those webhooks add containers or volumes the sidecar must know of, set \
             reinvocationPolicy: IfNeeded on outrigger's entries",
        );
    }
    Check::pass(ORDER, order)
}

fn failure_policy(facts: &Facts, injecting: &[&MutatingWebhook]) -> Check {
    let ignore: Vec<&str> = injecting
        .iter()
        .filter(|e| e.failure_policy.as_deref() == Some("Ignore"))
        .map(|e| e.name.as_str())
        .collect();
    if ignore.is_empty() {
        return Check::pass(
            FAILURE_POLICY,
            format!(
                "failurePolicy Fail on every injecting entry of {}: a pod the injector cannot \
                 answer is refused, never admitted without its sidecar",
                facts.webhook_config_name
            ),
        );
    }
    let ready = service::ready_addresses(facts)
        .map(|a| a.len())
        .unwrap_or(0);
    let what = format!(
        "{}: failurePolicy Ignore on {}: a pod whose call fails is admitted without its sidecar",
        facts.webhook_config_name,
        ignore.join(", ")
    );
    let activation = "a ready replica sets Fail (serve --failure-policy-once-ready=Fail) within \
                      --activation-delay and checks every 30 s";
    if ready > 0 {
        Check::with(
            FAILURE_POLICY,
            Verdict::Fail,
            format!("{what}, although {ready} endpoint(s) are ready"),
            format!(
                "{activation}: see the server's log for why it did not (its patch permission, \
                 or the flag missing), or: kubectl patch mutatingwebhookconfiguration {} --type \
                 json -p '[{{\"op\":\"replace\",\"path\":\"/webhooks/0/failurePolicy\",\"value\":\"Fail\"}}]' \
                 for each entry",
                facts.webhook_config_name
            ),
        )
    } else {
        Check::with(
            FAILURE_POLICY,
            Verdict::Warn,
            format!("{what} (expected while no replica is ready)"),
            activation,
        )
    }
}

fn timeout(facts: &Facts, injecting: &[&MutatingWebhook]) -> Check {
    let deadline = facts.server.request_timeout;
    let mut wrong = Vec::new();
    for e in injecting {
        let t = e.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT);
        if !(1..=MAX_TIMEOUT).contains(&t) {
            wrong.push(format!(
                "{}: timeoutSeconds {t} is outside the API server's 1-{MAX_TIMEOUT}",
                e.name
            ));
        } else if Duration::from_secs(t.unsigned_abs().into()) <= deadline {
            wrong.push(format!(
                "{}: timeoutSeconds {t} is not above the injector's request deadline {} \
                 (--request-timeout)",
                e.name,
                humantime(deadline)
            ));
        }
    }
    if wrong.is_empty() {
        let ts: Vec<i32> = injecting
            .iter()
            .map(|e| e.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT))
            .collect();
        let (lo, hi) = (
            ts.iter().min().copied().unwrap_or(DEFAULT_TIMEOUT),
            ts.iter().max().copied().unwrap_or(DEFAULT_TIMEOUT),
        );
        let range = if lo == hi {
            format!("{lo}s")
        } else {
            format!("{lo}-{hi}s")
        };
        let source = match &facts.deployment {
            Ok(Some(_)) => String::new(),
            _ => format!(
                " (serve's default: Deployment {}/{} not read)",
                facts.namespace, facts.deployment_name
            ),
        };
        return Check::pass(
            TIMEOUT,
            format!(
                "timeoutSeconds {range}, above the injector's request deadline {}{source}: a slow \
                 review is answered by the injector (504, named) before the API server gives up",
                humantime(deadline)
            ),
        );
    }
    Check::with(
        TIMEOUT,
        Verdict::Fail,
        format!(
            "{}: {}; the API server gives up first (context deadline exceeded) and applies \
             failurePolicy",
            facts.webhook_config_name,
            wrong.join("; ")
        ),
        format!(
            "set timeoutSeconds between {} and {MAX_TIMEOUT} (outrigger webhook-config \
             --timeout), or lower serve --request-timeout",
            deadline.as_secs() + 1
        ),
    )
}

/// `8s`, `1.5s`, `2m0s`-style text of a duration.
pub fn humantime(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_does_for_seconds() {
        assert_eq!(humantime(Duration::from_secs(8)), "8s");
        assert_eq!(humantime(Duration::from_millis(1500)), "1.5s");
    }

    #[test]
    fn short_lists_say_how_many_more() {
        let names: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
        assert_eq!(short_list(&names[..2]), "n0, n1");
        assert!(
            short_list(&names).ends_with("n7 and 2 more"),
            "{}",
            short_list(&names)
        );
    }
}
