//! Workloads: the kinds whose pod template is injected and where that template sits, and the
//! workload a pod belongs to as templates see it (`.TypeMeta`, `.DeploymentMeta`).

use serde_json::{Map, Value};

use crate::json::Scan;
use crate::kube::pod::{label, meta_str};

/// Why a document cannot be injected by kube-inject (`outrigger inject`): a document that is
/// not a workload of a supported kind, or whose pod cannot take a sidecar.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The document is not a mapping.
    #[error("expected a Kubernetes object (a mapping), got {0}")]
    NotAnObject(String),
    /// The document has no `kind`.
    #[error("Object 'Kind' is missing")]
    MissingKind,
    /// A kind kube-inject does not inject.
    #[error("unsupported kind {0:?}")]
    UnsupportedKind(String),
    /// A workload without `spec.template` (istioctl's message).
    #[error("spec.template is required value")]
    TemplateRequired,
    /// The templates rendered no sidecar.
    #[error(
        "the injection template(s) {} added no container: a sidecar template must add \
         istio-proxy under spec.containers or spec.initContainers (is the injector config the \
         `config` key of the istio-sidecar-injector ConfigMap?)",
        .templates.join(", ")
    )]
    NoSidecarAdded {
        /// The templates that ran.
        templates: Vec<String>,
    },
    /// The workload has no pod spec or template.
    #[error(
        "no pod {what}: {field} is missing (a pod needs at least one container in \
         {field}.containers); nothing to inject into"
    )]
    NoPod {
        /// `spec` (a Pod) or `template` (a workload).
        what: &'static str,
        /// Dotted path of the pod spec (`spec.template.spec`).
        field: String,
    },
    /// The pod has no container.
    #[error(
        "no containers in {0}.containers (Kubernetes requires at least one); nothing to inject into"
    )]
    NoContainers(String),
}

/// Workload identity seen by templates as `.TypeMeta` and `.DeploymentMeta`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadMeta {
    /// `.TypeMeta.Kind`.
    pub kind: String,
    /// `.TypeMeta.APIVersion`.
    pub api_version: String,
    /// `.DeploymentMeta.Name`.
    pub name: String,
    /// `.DeploymentMeta.Namespace`.
    pub namespace: String,
}

/// `.TypeMeta`/`.DeploymentMeta` of a pod: for a pod with `generateName`, its controller owner
/// reference, with a ReplicaSet of a Deployment or Rollout, a Job of a CronJob and a
/// ReplicationController of a DeploymentConfig named as their owner; else the pod itself.
pub fn workload_from_pod(pod: &Value) -> WorkloadMeta {
    let mut w = WorkloadMeta {
        kind: "Pod".into(),
        api_version: "v1".into(),
        name: meta_str(pod, "name").to_string(),
        namespace: meta_str(pod, "namespace").to_string(),
    };
    if meta_str(pod, "generateName").is_empty() {
        return w;
    }
    let owner = pod
        .scan("metadata")
        .and_then(|m| m.scan("ownerReferences"))
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.scan("controller").and_then(Value::as_bool) == Some(true))
        });
    if let Some(r) = owner {
        let s = |k: &str| r.scan(k).and_then(Value::as_str).unwrap_or("").to_string();
        w.kind = s("kind");
        w.api_version = s("apiVersion");
        w.name = s("name");
        let label_of = |k: &str| label(pod, k).filter(|v| !v.is_empty());
        if w.kind == "ReplicaSet"
            && label_of("pod-template-hash").is_some_and(|h| w.name.ends_with(h))
        {
            let hash = label_of("pod-template-hash").unwrap_or_default();
            w.name = w
                .name
                .strip_suffix(&format!("-{hash}"))
                .unwrap_or(&w.name)
                .to_string();
            w.kind = "Deployment".into();
        } else if w.kind == "ReplicaSet"
            && label_of("rollouts-pod-template-hash").is_some_and(|h| w.name.ends_with(h))
        {
            let hash = label_of("rollouts-pod-template-hash").unwrap_or_default();
            w.name = w
                .name
                .strip_suffix(&format!("-{hash}"))
                .unwrap_or(&w.name)
                .to_string();
            w.kind = "Rollout".into();
            w.api_version = "v1alpha1".into();
        } else if w.kind == "ReplicationController" && label_of("deploymentconfig").is_some() {
            w.name = label_of("deploymentconfig").unwrap_or_default().to_string();
            w.kind = "DeploymentConfig".into();
        } else if w.kind == "Job" {
            if let Some(base) = cronjob_base(&w.name) {
                w.name = base.to_string();
                w.kind = "CronJob".into();
                w.api_version = "batch/v1".into();
            }
        }
    }
    if w.name.is_empty() {
        w.name = meta_str(pod, "name").to_string();
    }
    w
}

/// `^(.+)-\d{8,10}$` → group 1.
fn cronjob_base(name: &str) -> Option<&str> {
    let (base, digits) = name.rsplit_once('-')?;
    let ok = (8..=10).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    (ok && !base.is_empty()).then_some(base)
}

/// A workload kind whose pod template is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadKind {
    /// `kind`.
    pub kind: &'static str,
    /// Go type of the document in the schema tables.
    pub schema_type: &'static str,
    /// JSON pointer of the pod template the controller creates pods from (empty: the document
    /// is the pod).
    pub pod_template: &'static str,
}

/// The one table of workload kinds (istioctl kube-inject's list): `inject`, `check` and the
/// tests read it.
pub const WORKLOAD_KINDS: [WorkloadKind; 9] = {
    const fn k(
        kind: &'static str,
        schema_type: &'static str,
        pod_template: &'static str,
    ) -> WorkloadKind {
        WorkloadKind {
            kind,
            schema_type,
            pod_template,
        }
    }
    [
        k("Pod", "corev1.Pod", ""),
        k(
            "ReplicationController",
            "corev1.ReplicationController",
            "/spec/template",
        ),
        k("Deployment", "appsv1.Deployment", "/spec/template"),
        k("DaemonSet", "appsv1.DaemonSet", "/spec/template"),
        k("ReplicaSet", "appsv1.ReplicaSet", "/spec/template"),
        k("StatefulSet", "appsv1.StatefulSet", "/spec/template"),
        k("Job", "batchv1.Job", "/spec/template"),
        k(
            "CronJob",
            "batchv1.CronJob",
            "/spec/jobTemplate/spec/template",
        ),
        k(
            "DeploymentConfig",
            "appsopenshiftv1.DeploymentConfig",
            "/spec/template",
        ),
    ]
};

/// The entry of [`WORKLOAD_KINDS`] for `kind`.
pub fn workload_kind(kind: &str) -> Option<&'static WorkloadKind> {
    WORKLOAD_KINDS.iter().find(|w| w.kind == kind)
}

/// Go type in the schema tables of a workload of `kind`.
pub fn schema_type(kind: &str) -> Option<&'static str> {
    workload_kind(kind).map(|w| w.schema_type)
}

/// Whether kube-inject processes documents of this kind (`List` included).
pub fn is_supported_kind(kind: &str) -> bool {
    kind == "List" || schema_type(kind).is_some()
}

/// JSON pointers of (pod metadata, pod spec) inside a workload of `kind`.
pub fn template_pointers(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "Pod" => ("/metadata", "/spec"),
        "CronJob" => (
            "/spec/jobTemplate/metadata",
            "/spec/jobTemplate/spec/template/spec",
        ),
        _ => ("/spec/template/metadata", "/spec/template/spec"),
    }
}

/// Take the value at a JSON pointer out of `doc` (leaving `null`), if there is one.
pub fn take_pointer(doc: &mut Value, ptr: &str) -> Option<Value> {
    doc.pointer_mut(ptr).map(Value::take)
}

/// Set the value at a JSON pointer, creating intermediate objects.
pub fn set_pointer(doc: &mut Value, ptr: &str, value: Value) {
    let mut cur = doc;
    let parts: Vec<&str> = ptr.split('/').skip(1).collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let m = cur.as_object_mut().expect("just made an object");
        if i + 1 == parts.len() {
            m.insert((*p).to_string(), value);
            return;
        }
        cur = m
            .entry((*p).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_pointer_creates_path() {
        let mut v = json!({"spec": {}});
        set_pointer(&mut v, "/spec/template/metadata", json!({"a": 1}));
        assert_eq!(v, json!({"spec": {"template": {"metadata": {"a": 1}}}}));
    }

    #[test]
    fn supported_kinds_match_istioctl() {
        for k in [
            "Pod",
            "Deployment",
            "CronJob",
            "DeploymentConfig",
            "List",
            "Job",
        ] {
            assert!(is_supported_kind(k), "{k}");
        }
        assert!(!is_supported_kind("Service"));
        assert_eq!(template_pointers("CronJob").0, "/spec/jobTemplate/metadata");
    }

    use serde_json::json;

    use super::*;

    #[test]
    fn deploy_meta_heuristics() {
        let pod = json!({"metadata": {"name": "", "generateName": "hello-7d4f9-", "namespace": "ns",
            "labels": {"pod-template-hash": "7d4f9"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "hello-7d4f9", "controller": true}]}});
        let w = workload_from_pod(&pod);
        assert_eq!(
            (w.kind.as_str(), w.api_version.as_str(), w.name.as_str()),
            ("Deployment", "apps/v1", "hello")
        );
        let pod = json!({"metadata": {"name": "foo"}});
        let w = workload_from_pod(&pod);
        assert_eq!(
            (w.kind.as_str(), w.api_version.as_str(), w.name.as_str()),
            ("Pod", "v1", "foo")
        );
        let pod = json!({"metadata": {"generateName": "x-", "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "backup-28001234", "controller": true}]}});
        let w = workload_from_pod(&pod);
        assert_eq!((w.kind.as_str(), w.name.as_str()), ("CronJob", "backup"));
    }

    #[test]
    fn cronjob_names() {
        assert_eq!(cronjob_base("a-b-12345678"), Some("a-b"));
        assert_eq!(cronjob_base("a-1234567"), None);
        assert_eq!(cronjob_base("-12345678"), None);
    }
}
