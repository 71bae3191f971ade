//! The permissions `serve --kube` needs, as it runs (one table, from the Deployment's flags:
//! deploy/base's Role and ClusterRole grant exactly these, which the tests check), asked of the
//! API server with SelfSubjectAccessReviews impersonating the server's service account, as
//! `kubectl auth can-i --as=system:serviceaccount:NS:NAME` asks. The user running `doctor` then
//! needs `impersonate` on serviceaccounts; without it the check is skipped.

use ::kube::Client;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};

use super::facts::{Facts, ServerSettings};
use super::{Check, Verdict};
use crate::kube::inject_source::configmap_name;

/// Name of the check.
pub const RBAC: &str = "rbac";

/// One permission: a verb on a resource, in a namespace (`""`: cluster-wide), on one object
/// (`None`: any).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Need {
    /// The namespace, `""` for cluster-scoped resources or every namespace.
    pub namespace: String,
    /// API group (`""`: core).
    pub group: &'static str,
    /// Resource (plural).
    pub resource: &'static str,
    /// The one object, when the server only touches one.
    pub name: Option<String>,
    /// The verb.
    pub verb: &'static str,
    /// What the server does with it.
    pub why: &'static str,
}

impl Need {
    /// `patch mutatingwebhookconfigurations outrigger-sidecar-injector`, with the namespace.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.verb, self.resource);
        if !self.group.is_empty() {
            s.push('.');
            s.push_str(self.group);
        }
        if let Some(n) = &self.name {
            s.push_str(&format!(" {n}"));
        }
        if !self.namespace.is_empty() {
            s.push_str(&format!(" in {}", self.namespace));
        }
        s
    }
}

/// What the server needs, running with `server` in `namespace`, serving from Secret `secret`
/// and keeping webhook configuration `webhook_config`.
pub fn needs(
    server: &ServerSettings,
    namespace: &str,
    secret: &str,
    webhook_config: &str,
) -> Vec<Need> {
    let mut out = Vec::new();
    let mut add = |ns: &str, group, resource, name: Option<&str>, verbs: &[&'static str], why| {
        for verb in verbs {
            out.push(Need {
                namespace: ns.to_string(),
                group,
                resource,
                name: name.map(str::to_string),
                verb,
                why,
            });
        }
    };
    add(
        namespace,
        "",
        "secrets",
        None,
        &["create"],
        "the serving certificate's Secret",
    );
    add(
        namespace,
        "",
        "secrets",
        Some(secret),
        &["get", "list", "watch", "patch"],
        "the serving certificate's Secret",
    );
    let writes: &[&'static str] = if server.ca_external && !server.activates {
        &["get", "list", "watch"]
    } else {
        &["get", "list", "watch", "patch"]
    };
    add(
        "",
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        Some(webhook_config),
        writes,
        "caBundle sync, activation once ready",
    );
    if server.activates {
        add(
            "",
            "",
            "namespaces",
            Some(namespace),
            &["get"],
            "the owner reference's uid",
        );
    }
    if let Some(ns) = &server.probe_namespace {
        add(
            ns,
            "",
            "pods",
            None,
            &["create"],
            "the admission probe's dry-run creates (--probe-interval)",
        );
    }
    if let Some(deployment) = &server.fail_open_deployment {
        add(
            namespace,
            "apps",
            "deployments",
            Some(deployment),
            &["get"],
            "failing open while the Deployment is deleted or scaled to zero",
        );
    }
    if server
        .native_sidecars
        .as_deref()
        .is_none_or(|m| m == "auto")
    {
        add(
            "",
            "",
            "nodes",
            None,
            &["list", "watch"],
            "native-sidecar auto mode",
        );
    }
    let mut configmaps: Vec<(String, String)> = Vec::new();
    if server.istio_configmaps {
        let ns = server.istio_namespace.clone();
        let rev = server.revision.as_str();
        configmaps.push((
            ns.clone(),
            configmap_name("istio-sidecar-injector", "istio-sidecar-injector", rev),
        ));
        configmaps.push((ns, configmap_name("istio", "istio", rev)));
    }
    for r in [&server.inject_config_map, &server.mesh_config_map]
        .into_iter()
        .flatten()
    {
        if let Some((ns, name)) = r.split_once('/') {
            configmaps.push((ns.to_string(), name.to_string()));
        }
    }
    for (ns, name) in &configmaps {
        add(
            ns,
            "",
            "configmaps",
            Some(name),
            &["list", "watch"],
            "Istio's configuration",
        );
    }
    if server.events {
        add(
            "",
            "events.k8s.io",
            "events",
            None,
            &["create", "patch"],
            "--events",
        );
    }
    if server.openshift {
        add(
            "",
            "",
            "namespaces",
            None,
            &["get", "list", "watch"],
            "OpenShift UID/GID",
        );
    }
    if server.detect_overlaps {
        add(
            "",
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            None,
            &["list"],
            "--detect-overlaps",
        );
        add("", "", "namespaces", None, &["list"], "--detect-overlaps");
    }
    if server.watch_pods {
        add(
            "",
            "",
            "pods",
            None,
            &["list", "watch"],
            "--watch-pods: every pod judged",
        );
        add(
            "",
            "",
            "namespaces",
            None,
            &["list", "watch"],
            "--watch-pods: the namespaces' labels",
        );
    }
    out
}

/// Whether `user` may do `need`: a SelfSubjectAccessReview sent as `user` (impersonation).
async fn allowed(client: &Client, user: &str, need: &Need) -> Result<bool, (u16, String)> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: (!need.namespace.is_empty()).then(|| need.namespace.clone()),
                group: Some(need.group.to_string()),
                resource: Some(need.resource.to_string()),
                name: need.name.clone(),
                verb: Some(need.verb.to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let body = serde_json::to_vec(&review).map_err(|e| (0, e.to_string()))?;
    let req = hyper::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .header("content-type", "application/json")
        .header("Impersonate-User", user)
        .body(body)
        .map_err(|e| (0, e.to_string()))?;
    match client.request::<SelfSubjectAccessReview>(req).await {
        Ok(r) => Ok(r.status.is_some_and(|s| s.allowed)),
        Err(::kube::Error::Api(s)) => Err((s.code, s.message)),
        Err(e) => Err((0, crate::report::chain(&crate::kube::client::api_error(e)))),
    }
}

/// The `rbac` check.
pub async fn check(client: &Client, facts: &Facts) -> Check {
    match &facts.deployment {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Check::with(
                RBAC,
                Verdict::Skipped,
                format!(
                "Deployment {}/{} not found: the server's service account and flags are unknown",
                facts.namespace, facts.deployment_name
            ),
                "name it with --deployment",
            )
        }
        Err(e) => {
            return Check::with(
                RBAC,
                Verdict::Skipped,
                e.clone(),
                "doctor needs get on the Deployment",
            )
        }
    }
    let sa = &facts.server.service_account;
    let user = format!("system:serviceaccount:{}:{sa}", facts.namespace);
    let needs = needs(
        &facts.server,
        &facts.namespace,
        &facts.secret_name,
        &facts.webhook_config_name,
    );
    let mut denied = Vec::new();
    for need in &needs {
        match allowed(client, &user, need).await {
            Ok(true) => {}
            Ok(false) => denied.push(format!("{} ({})", need.describe(), need.why)),
            Err((403, msg)) => {
                return Check::with(
                    RBAC,
                    Verdict::Skipped,
                    format!("cannot ask as {user}: {msg}"),
                    "asking the server's permissions needs impersonate on serviceaccounts \
                     (kubectl auth can-i impersonate serviceaccounts); an administrator can run \
                     doctor",
                )
            }
            Err((_, msg)) => {
                return Check::with(
                    RBAC,
                    Verdict::Skipped,
                    format!("SelfSubjectAccessReview as {user}: {msg}"),
                    "",
                )
            }
        }
    }
    if denied.is_empty() {
        return Check::pass(
            RBAC,
            format!(
                "service account {}/{sa} has the {} permissions the server needs",
                facts.namespace,
                needs.len()
            ),
        );
    }
    Check::with(
        RBAC,
        Verdict::Fail,
        format!(
            "service account {}/{sa} may not: {}",
            facts.namespace,
            denied.join("; ")
        ),
        "apply deploy/base's Role and ClusterRole (and the components' for --events, \
         PLATFORM=openshift, --detect-overlaps, --watch-pods); docs/kubernetes.md lists each \
         rule",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::args::DoctorArgs;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::Value;
    use std::collections::BTreeSet;

    fn deploy(path: &str) -> Vec<Value> {
        let p = format!("{}/../../deploy/{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
        outrigger_go::yaml::split_documents(&text)
            .expect("YAML")
            .iter()
            .map(|d| outrigger_go::yaml::from_str(d).expect("a manifest"))
            .collect()
    }

    fn args() -> DoctorArgs {
        crate::doctor::facts::test_args()
    }

    /// A need as a granted tuple.
    fn grant(n: Need) -> Grant {
        (
            n.namespace,
            n.group.to_string(),
            n.resource.to_string(),
            n.name.unwrap_or_default(),
            n.verb.to_string(),
        )
    }

    /// (namespace, group, resource, name or "", verb).
    type Grant = (String, String, String, String, String);

    /// Every (namespace, group, resource, name, verb) the Roles and ClusterRoles of `docs` grant.
    fn granted(docs: &[Value]) -> BTreeSet<Grant> {
        let mut out = BTreeSet::new();
        for d in docs {
            if !matches!(d["kind"].as_str(), Some("Role" | "ClusterRole")) {
                continue;
            }
            let ns = d["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            for rule in d["rules"].as_array().into_iter().flatten() {
                let list = |k: &str| -> Vec<String> {
                    rule[k]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                };
                let names = list("resourceNames");
                let names = if names.is_empty() {
                    vec![String::new()]
                } else {
                    names
                };
                for g in list("apiGroups") {
                    for r in list("resources") {
                        for n in &names {
                            for v in list("verbs") {
                                out.insert((ns.clone(), g.clone(), r.clone(), n.clone(), v));
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_base_manifests_grant_exactly_what_the_base_deployment_needs() {
        let dep: Deployment =
            serde_json::from_value(deploy("base/deployment.yaml").remove(0)).expect("a Deployment");
        let server = ServerSettings::from_deployment(&dep, &args());
        assert!(server.istio_configmaps && server.activates, "{server:?}");
        let needed: BTreeSet<_> = needs(
            &server,
            "outrigger",
            "outrigger-tls",
            "outrigger-sidecar-injector",
        )
        .into_iter()
        .map(grant)
        .collect();
        let mut docs = deploy("base/rbac.yaml");
        docs.extend(deploy("base/istio-rbac.yaml"));
        assert_eq!(granted(&docs), needed);
    }

    #[test]
    fn each_component_grants_what_its_flag_needs() {
        let dep: Deployment =
            serde_json::from_value(deploy("base/deployment.yaml").remove(0)).expect("a Deployment");
        let base = ServerSettings::from_deployment(&dep, &args());
        let base_needs = needs(
            &base,
            "outrigger",
            "outrigger-tls",
            "outrigger-sidecar-injector",
        );
        for (component, set) in [
            (
                "events",
                (|s: &mut ServerSettings| s.events = true) as fn(&mut ServerSettings),
            ),
            ("openshift", |s| s.openshift = true),
            ("overlap-detection", |s| s.detect_overlaps = true),
            ("pod-watch", |s| s.watch_pods = true),
        ] {
            let mut s = base.clone();
            set(&mut s);
            let extra: BTreeSet<_> = needs(
                &s,
                "outrigger",
                "outrigger-tls",
                "outrigger-sidecar-injector",
            )
            .into_iter()
            .filter(|n| !base_needs.contains(n))
            .map(grant)
            .collect();
            assert!(!extra.is_empty(), "{component}");
            assert_eq!(
                granted(&deploy(&format!("components/{component}/rbac.yaml"))),
                extra,
                "{component}"
            );
        }
    }

    #[test]
    fn a_revision_reads_its_own_configmaps() {
        let mut s = ServerSettings::from_deployment(&Deployment::default(), &args());
        s.istio_configmaps = true;
        s.revision = "canary".into();
        let names: Vec<String> = needs(&s, "o", "t", "w")
            .into_iter()
            .filter(|n| n.resource == "configmaps" && n.verb == "list")
            .filter_map(|n| n.name)
            .collect();
        assert_eq!(names, ["istio-sidecar-injector-canary", "istio-canary"]);
    }
}
