//! What the fake API server ([`super::kube_api`]) answers `outrigger doctor` beyond stored
//! objects: EndpointSlices made from [`Cluster::endpoints`], and SelfSubjectAccessReviews
//! evaluated against the stored RBAC objects.
//!
//! - **EndpointSlices** (`discovery.k8s.io/v1`): one slice per Service of the namespace that has
//!   an entry in [`Cluster::endpoints`], labelled `kubernetes.io/service-name`, with one ready
//!   endpoint per address and its port (as the EndpointSlice controller writes them for ready
//!   pods); `labelSelector=kubernetes.io/service-name=NAME` selects by Service. An entry with no
//!   address is a slice without endpoints (a Service whose pods are all unready). Unsure: the
//!   real controller names the port after the Service's `targetPort` name; here it is unnamed.
//! - **SelfSubjectAccessReview** (`authorization.k8s.io/v1`): the RBAC authorizer's rules, as
//!   documented ("Using RBAC Authorization"): a request in a namespace is allowed by a
//!   RoleBinding there (to a Role of that namespace or a ClusterRole) or by a
//!   ClusterRoleBinding; a cluster-wide request only by a ClusterRoleBinding. A rule matches when
//!   `apiGroups`, `resources` and `verbs` contain the request's (or `*`), and `resourceNames` is
//!   empty or contains the request's name (a request without a name never matches a rule with
//!   `resourceNames`). Subjects: `User` by name, `ServiceAccount` by name and namespace,
//!   `Group` by name; a service account `system:serviceaccount:NS:NAME` is in the groups
//!   `system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`, as the
//!   API server's impersonation filter and token authenticator put it. The user is the
//!   `Impersonate-User` header's (the fake lets every caller impersonate: unsure how a refused
//!   impersonation would be worded, it is not modelled), else [`Cluster::user`].
//!   Aggregated ClusterRoles and subresources are not modelled.

use serde_json::{json, Value};

use super::kube_api::Cluster;

/// The `EndpointSliceList` of namespace `ns` the query selects.
pub fn endpoint_slices(c: &Cluster, ns: &str, query: &str) -> Value {
    let wanted = query.split('&').find_map(|kv| {
        let v = kv.strip_prefix("labelSelector=")?;
        let v = v
            .replace("%2F", "/")
            .replace("%2f", "/")
            .replace("%3D", "=")
            .replace("%3d", "=");
        v.strip_prefix("kubernetes.io/service-name=")
            .map(str::to_string)
    });
    let items: Vec<Value> = c
        .endpoints
        .iter()
        .filter(|((n, svc), _)| n == ns && wanted.as_deref().is_none_or(|w| w == svc))
        .map(|((n, svc), addrs)| {
            let endpoints: Vec<Value> = addrs
                .iter()
                .map(|a| json!({"addresses": [a.ip().to_string()], "conditions": {"ready": true}}))
                .collect();
            let port = addrs.first().map_or(443, |a| a.port());
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": format!("{svc}-fake"), "namespace": n,
                                "labels": {"kubernetes.io/service-name": svc}},
                   "addressType": "IPv4", "endpoints": endpoints,
                   "ports": [{"port": port, "protocol": "TCP"}]})
        })
        .collect();
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSliceList",
           "metadata": {"resourceVersion": "1"}, "items": items})
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn subject_matches(s: &Value, user: &str, groups: &[String]) -> bool {
    let name = s["name"].as_str().unwrap_or("");
    match s["kind"].as_str().unwrap_or("") {
        "User" => name == user,
        "Group" => groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            user == format!(
                "system:serviceaccount:{}:{name}",
                s["namespace"].as_str().unwrap_or("")
            )
        }
        _ => false,
    }
}

fn rule_allows(rule: &Value, attrs: &Value) -> bool {
    let has = |field: &str, want: &str| {
        strings(&rule[field])
            .iter()
            .any(|v| *v == want || *v == "*")
    };
    let names = strings(&rule["resourceNames"]);
    let name = attrs["name"].as_str().unwrap_or("");
    has("apiGroups", attrs["group"].as_str().unwrap_or(""))
        && has("resources", attrs["resource"].as_str().unwrap_or(""))
        && has("verbs", attrs["verb"].as_str().unwrap_or(""))
        && (names.is_empty() || (!name.is_empty() && names.contains(&name)))
}

/// Whether `user` may do what `attrs` (a `ResourceAttributes`) says.
pub fn allows(c: &Cluster, user: &str, attrs: &Value) -> bool {
    let mut groups = vec!["system:authenticated".to_string()];
    if let Some(rest) = user.strip_prefix("system:serviceaccount:") {
        groups.push("system:serviceaccounts".into());
        if let Some((ns, _)) = rest.split_once(':') {
            groups.push(format!("system:serviceaccounts:{ns}"));
        }
    }
    let ns = attrs["namespace"].as_str().unwrap_or("");
    let role_rules = |kind: &str, role_ns: &str, name: &str| -> Vec<Value> {
        let found = match kind {
            "ClusterRole" => c.get("clusterroles", "", name),
            _ => c.get("roles", role_ns, name),
        };
        found
            .and_then(|r| r["rules"].as_array().cloned())
            .unwrap_or_default()
    };
    let mut bindings: Vec<(Value, String)> = c
        .all("clusterrolebindings")
        .into_iter()
        .map(|b| (b, String::new()))
        .collect();
    if !ns.is_empty() {
        bindings.extend(
            c.all("rolebindings")
                .into_iter()
                .filter(|b| b["metadata"]["namespace"] == ns)
                .map(|b| (b, ns.to_string())),
        );
    }
    bindings.iter().any(|(b, bns)| {
        b["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| subject_matches(s, user, &groups))
            && role_rules(
                b["roleRef"]["kind"].as_str().unwrap_or(""),
                bns,
                b["roleRef"]["name"].as_str().unwrap_or(""),
            )
            .iter()
            .any(|r| rule_allows(r, attrs))
    })
}

/// The review `review` with its `status` filled in for `user`.
pub fn access_review(c: &Cluster, user: &str, mut review: Value) -> Value {
    let allowed = allows(c, user, &review["spec"]["resourceAttributes"]);
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review["status"] = if allowed {
        json!({"allowed": true, "reason": "RBAC: allowed by the fake's bindings"})
    } else {
        json!({"allowed": false})
    };
    review
}
