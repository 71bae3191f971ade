//! The Service outrigger's entries call: it exists, has the port the entries call, and has
//! ready endpoints (its EndpointSlices, as the API server's service resolver reads them).

use k8s_openapi::api::admissionregistration::v1::ServiceReference;

use super::facts::Facts;
use super::{selection, Check, Verdict};

/// Name of the check.
pub const ENDPOINTS: &str = "service-endpoints";

/// The ready endpoint addresses (`ip:port`, or the address alone without a port) of the
/// Service's EndpointSlices; an endpoint without a `ready` condition counts as ready, as the
/// API documents.
pub fn ready_addresses(facts: &Facts) -> Result<Vec<String>, String> {
    let slices = facts.endpoint_slices.as_ref().map_err(Clone::clone)?;
    let mut out = Vec::new();
    for s in slices {
        let port = s.ports.iter().flatten().find_map(|p| p.port);
        for e in &s.endpoints {
            if e.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
                continue;
            }
            for a in &e.addresses {
                out.push(match port {
                    Some(p) => format!("{a}:{p}"),
                    None => a.clone(),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The service references of outrigger's injecting entries.
fn references(facts: &Facts) -> Vec<(String, ServiceReference)> {
    facts
        .ours()
        .into_iter()
        .flat_map(selection::entries)
        .filter(|e| selection::is_injector(e))
        .filter_map(|e| Some((e.name.clone(), e.client_config.service.clone()?)))
        .collect()
}

/// A half-removed install: the Deployment is gone (a SIGKILL, an OOM or a lost node after a
/// delete kept the last replica from failing the configuration open) while outrigger's
/// configuration still has `failurePolicy: Fail` entries, so every pod they select is refused.
fn half_removed(facts: &Facts) -> Option<Check> {
    if !matches!(facts.deployment, Ok(None)) {
        return None;
    }
    let failing: Vec<String> = facts
        .ours()
        .into_iter()
        .flat_map(selection::entries)
        .filter(|e| selection::is_injector(e) && e.failure_policy.as_deref() != Some("Ignore"))
        .map(|e| e.name.clone())
        .collect();
    if failing.is_empty() {
        return None;
    }
    Some(Check::with(
        ENDPOINTS,
        Verdict::Fail,
        format!(
            "half-removed install: Deployment {}/{} is gone but MutatingWebhookConfiguration {} \
             still has failurePolicy Fail on {}: no replica answers, so every pod it selects is \
             refused",
            facts.namespace,
            facts.deployment_name,
            facts.webhook_config_name,
            failing.join(", ")
        ),
        format!(
            "kubectl delete mutatingwebhookconfiguration {} (finishing the removal), or \
             kubectl apply -k deploy/base (reinstalling)",
            facts.webhook_config_name
        ),
    ))
}

/// The `service-endpoints` check.
pub fn endpoints(facts: &Facts) -> Check {
    if let Some(c) = half_removed(facts) {
        return c;
    }
    let svc_name = format!("{}/{}", facts.namespace, facts.service_name);
    let service = match &facts.service {
        Err(e) => {
            return Check::with(
                ENDPOINTS,
                Verdict::Skipped,
                e.clone(),
                "doctor needs get on services",
            )
        }
        Ok(None) => {
            return Check::with(
                ENDPOINTS,
                Verdict::Fail,
                format!("Service {svc_name} not found: every call to the injector fails"),
                "install it (kubectl apply -k deploy/base), or name it with --service",
            )
        }
        Ok(Some(s)) => s,
    };
    let ports: Vec<i32> = service
        .spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| p.port)
        .collect();
    for (entry, r) in references(facts) {
        if r.namespace != facts.namespace || r.name != facts.service_name {
            return Check::with(
                ENDPOINTS,
                Verdict::Fail,
                format!(
                    "entry {entry} calls Service {}/{}, not {svc_name}",
                    r.namespace, r.name
                ),
                "point clientConfig.service at outrigger's Service (or pass --outrigger-namespace / \
                 --service)",
            );
        }
        let port = r.port.unwrap_or(443);
        if !ports.contains(&port) {
            return Check::with(
                ENDPOINTS,
                Verdict::Fail,
                format!(
                    "entry {entry} calls port {port} of Service {svc_name}, which has ports {ports:?}"
                ),
                "make clientConfig.service.port one of the Service's ports",
            );
        }
    }
    match ready_addresses(facts) {
        Err(e) => Check::with(
            ENDPOINTS,
            Verdict::Skipped,
            e,
            "doctor needs list on endpointslices",
        ),
        Ok(ready) if ready.is_empty() => Check::with(
            ENDPOINTS,
            Verdict::Fail,
            format!(
                "Service {svc_name} has no ready endpoints: every call to the injector fails \
                 (failurePolicy Fail refuses the pods it selects, Ignore admits them uninjected)"
            ),
            format!(
                "kubectl -n {} get pods,endpointslices -l app.kubernetes.io/name=outrigger; a \
                 replica that is not ready says why on /readyz and in its log",
                facts.namespace
            ),
        ),
        Ok(ready) => Check::pass(
            ENDPOINTS,
            format!(
                "Service {svc_name}: {} ready endpoint(s) ({})",
                ready.len(),
                super::config::short_list(&ready)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::facts::test_facts;
    use crate::kube::webhook_object::{build, FailurePolicy, WebhookOptions};

    #[test]
    fn a_fail_configuration_without_its_deployment_is_named_with_the_fix() {
        let failing = build(&WebhookOptions::default());
        let c = endpoints(&test_facts(vec![failing], None));
        assert_eq!(c.verdict, Verdict::Fail);
        assert_eq!(
            c.finding,
            "half-removed install: Deployment outrigger/outrigger is gone but \
             MutatingWebhookConfiguration outrigger-sidecar-injector still has failurePolicy \
             Fail on rev.namespace.sidecar-injector.istio.io, \
             rev.object.sidecar-injector.istio.io: no replica answers, so every pod it selects \
             is refused"
        );
        assert!(c.hint.is_some_and(|h| h.starts_with(
            "kubectl delete mutatingwebhookconfiguration outrigger-sidecar-injector"
        )));
        // Failing open (as the shipped configuration and the removal leave it): not this state.
        let open = build(&WebhookOptions {
            failure_policy: FailurePolicy::Ignore,
            ..Default::default()
        });
        let c = endpoints(&test_facts(vec![open], None));
        assert!(!c.finding.contains("half-removed"), "{}", c.finding);
    }
}
