//! The injection pipeline: strip a previous injection, render the selected templates,
//! strategic-merge them onto the pod, re-apply user overrides, post-process, and diff.
//!
//! [`inject_pod`] is the one entry point shared by the webhook and `outrigger inject`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::config::Snapshot;
use crate::decide::annotations;
use crate::finish::{self, PostProcess};
use crate::ingest::previous::strip_pod;
use crate::ingest::workload::WorkloadMeta;
use crate::kube::names::{DEFAULT_PROXY_ID, POD_TYPE, PROXY_CONFIG_ANNOTATION};
use crate::kube::pod::{annotation, int_of, label, meta_str, potential_name};
use crate::kube::typed;
use crate::merge::overrides::reapply_overwritten_containers;
use crate::merge::pod::{move_native_proxy, names_overlay, typed_template_pod};
use crate::merge::strategic;
use crate::render::{images, select_templates, RenderError};
use crate::template::TemplateData;
use crate::{mesh, Result};

/// Which caller runs the pipeline; the two differ in a few places (kube-inject applies the
/// pod's `proxy.istio.io/config` to the mesh it finishes with and fails on an invalid one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The admission webhook.
    Webhook,
    /// Offline manifest injection (`outrigger inject`, like `istioctl kube-inject`).
    KubeInject,
}

/// Everything a single injection needs besides the pod.
#[derive(Debug, Clone)]
pub struct InjectParams<'a> {
    /// Configuration snapshot.
    pub snapshot: &'a Snapshot,
    /// Caller.
    pub mode: Mode,
    /// Workload identity.
    pub workload: WorkloadMeta,
    /// Revision (`.Revision`); the status annotation writes `default` when empty.
    pub revision: &'a str,
    /// Global native-sidecar decision.
    pub native_sidecars: bool,
    /// Proxy environment from the webhook path.
    pub proxy_envs: BTreeMap<String, String>,
    /// Proxy UID/GID (OpenShift namespaces); `None` means 1337.
    pub proxy_uid_gid: Option<(i64, i64)>,
    /// `COMPLIANCE_POLICY` of the injecting process.
    pub compliance_policy: &'a str,
}

/// The outcome of an injection.
#[derive(Debug, Clone)]
pub struct Injected {
    /// The injected pod. The JSON Patch for a webhook answer is
    /// [`crate::patch::create`] from the pod as received to this one (computed by the caller,
    /// which knows which form of the original its client holds).
    pub pod: Value,
    /// Non-fatal warnings.
    pub warnings: Vec<String>,
}

/// Effective mesh config for this pod: the `proxy.istio.io/config` annotation applied.
fn mesh_for_pod<'a>(snapshot: &'a Snapshot, pod: &Value, mode: Mode) -> Result<Cow<'a, Value>> {
    match annotation(pod, PROXY_CONFIG_ANNOTATION) {
        Some(text) => match mesh::apply_proxy_config(text, &snapshot.mesh) {
            Ok(m) => Ok(Cow::Owned(m)),
            Err(e) if mode == Mode::KubeInject => Err(e),
            Err(_) => Ok(Cow::Borrowed(&snapshot.mesh)),
        },
        None => Ok(Cow::Borrowed(&snapshot.mesh)),
    }
}

/// Inject `pod` (a Kubernetes Pod JSON tree). Errors carry Istio's wrapping
/// (`failed to run injection template: ...`).
pub fn inject_pod(pod: &Value, p: &InjectParams<'_>) -> Result<Injected> {
    inject_pod_owned(pod.clone(), p)
}

/// [`inject_pod`] taking the pod by value, for callers that no longer need it (one copy of the
/// pod fewer: kube-inject of very large pods).
pub fn inject_pod_owned(pod: Value, p: &InjectParams<'_>) -> Result<Injected> {
    let mut original = pod;
    normalize_pod(&mut original)?;
    inject_normalized(&original, p)
}

/// The typed round-trip of a pod that [`inject_pod`] starts with (Go decoding the pod into its
/// struct: omitempty, canonical quantities), with Istio's error wrapping.
pub fn normalize_pod(pod: &mut Value) -> Result<()> {
    typed::normalize(POD_TYPE, pod).map_err(|e| e.context("could not decode pod"))
}

/// [`inject_pod`] for a pod that [`normalize_pod`] has already normalised, without copying it
/// (the webhook keeps one tree when the pod it received is already in normal form).
pub fn inject_normalized(original: &Value, p: &InjectParams<'_>) -> Result<Injected> {
    let snapshot = p.snapshot;
    let mut warnings = Vec::new();

    if let Some(dns) = original
        .get("spec")
        .and_then(|s| s.get("dnsPolicy"))
        .and_then(Value::as_str)
    {
        if !dns.is_empty() && dns != "ClusterFirst" {
            warnings.push(format!(
                "\"{}/{}\"'s DNSPolicy is not \"ClusterFirst\". The Envoy sidecar may not able to connect to Istio Pilot",
                meta_str(original, "namespace"),
                potential_name(original)
            ));
        }
    }

    let mesh_eff = mesh_for_pod(snapshot, original, p.mode)?;
    let no_proxy_config = json!({});
    let proxy_config = mesh_eff.get("defaultConfig").unwrap_or(&no_proxy_config);
    let mut proxy_envs = p.proxy_envs.clone();
    let (merged, template_pod) =
        run_templates(original, p, &mesh_eff, proxy_config, &mut proxy_envs)
            .map_err(|e| e.context("failed to run injection template"))?;
    let mut merged = merged;
    reapply_overwritten_containers(
        &mut merged,
        original,
        &template_pod,
        proxy_config,
        &mut warnings,
    )
    .map_err(|e| e.context("failed to re apply container"))?;

    // The container order step reads the mesh config with the pod's own proxy.istio.io/config
    // applied: that is `mesh_eff` (an invalid annotation has failed validation by now).
    let annotation_mesh = annotation(original, PROXY_CONFIG_ANNOTATION).map(|_| mesh_eff.as_ref());
    let pp = PostProcess {
        mesh: if p.mode == Mode::KubeInject {
            &mesh_eff
        } else {
            &snapshot.mesh
        },
        values: &snapshot.values,
        proxy_envs: &proxy_envs,
        revision: p.revision,
        injected_annotations: &snapshot.config.injected_annotations,
        template_pod: &template_pod,
        original_pod: original,
        proxy_config_annotation_mesh: annotation_mesh,
    };
    let pp_warnings = finish::post_process_with_warnings(&mut merged, &pp)
        .map_err(|e| e.context("failed to process pod"))?;
    warnings.extend(pp_warnings);
    Ok(Injected {
        pod: merged,
        warnings,
    })
}

/// Istio's `RunTemplate`: returns `(mergedPod, templatePod)`.
fn run_templates(
    pod: &Value,
    p: &InjectParams<'_>,
    mesh_eff: &Value,
    proxy_config: &Value,
    proxy_envs: &mut BTreeMap<String, String>,
) -> Result<(Value, Value)> {
    let snapshot = p.snapshot;
    let empty = Map::new();
    let annotations = pod
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    annotations::validate_annotations(annotations)?;

    // Cluster and network (values, path parameters, the pod's network label), written back
    // into the proxy environment.
    let mut cluster = snapshot.values_facts.cluster_name.clone();
    if let Some(c) = proxy_envs
        .get("ISTIO_META_CLUSTER_ID")
        .filter(|c| !c.is_empty())
    {
        cluster = c.clone();
    }
    let mut network = snapshot.values_facts.network.clone();
    if let Some(n) = proxy_envs
        .get("ISTIO_META_NETWORK")
        .filter(|n| !n.is_empty())
    {
        network = n.clone();
    }
    if let Some(n) = label(pod, "topology.istio.io/network") {
        network = n.to_string();
    }
    if !cluster.is_empty() {
        proxy_envs.insert("ISTIO_META_CLUSTER_ID".into(), cluster);
    }
    if !network.is_empty() {
        proxy_envs.insert("ISTIO_META_NETWORK".into(), network);
    }

    let status_port = int_of(
        snapshot
            .mesh
            .get("defaultConfig")
            .and_then(|d| d.get("statusPort")),
    )
    .unwrap_or(0);
    let stripped = strip_pod(pod, status_port)?;
    let (uid, gid) = p
        .proxy_uid_gid
        .unwrap_or((DEFAULT_PROXY_ID, DEFAULT_PROXY_ID));
    let (proxy_image, proxy_init_image) = images(snapshot, proxy_config, &stripped);
    let inbound = mesh::inbound_traffic_policy_mode(mesh_eff);
    let null = Value::Null;
    let data = TemplateData {
        kind: &p.workload.kind,
        api_version: &p.workload.api_version,
        deployment_name: &p.workload.name,
        deployment_namespace: &p.workload.namespace,
        object_meta: stripped.get("metadata").unwrap_or(&null),
        spec: stripped.get("spec").unwrap_or(&null),
        proxy_config,
        mesh_config: mesh_eff,
        values: &snapshot.values,
        revision: p.revision,
        native_sidecars: p.native_sidecars,
        proxy_image: &proxy_image,
        proxy_init_image: &proxy_init_image,
        proxy_uid: uid,
        proxy_gid: gid,
        inbound_traffic_policy_mode: inbound,
        compliance_policy: p.compliance_policy,
        env: &snapshot.template_env,
    };

    // Merge onto the unstripped pod, as Istio does: on re-injection the previous sidecar keeps
    // what post-processing merges back (e.g. `ISTIO_KUBE_APP_PROBERS` of already rewritten probes).
    let mut merged = crate::json::compact::clone(pod);
    let mut template_pod = json!({});
    let mut rendered: Vec<(String, String)> = Vec::new();
    for name in select_templates(snapshot, pod) {
        let Some(tmpl) = snapshot.config.templates.get(&name) else {
            return Err(RenderError::TemplateNotFound {
                name,
                have: snapshot.config.templates.keys().cloned().collect(),
            }
            .into());
        };
        let (text, overlay) = crate::render::memo::render_patch(snapshot, &name, tmpl, &data)?;
        // The template-only pod is read for its container, volume and pull-secret names only,
        // which typed normalisation leaves alone: it is merged from the names alone (the whole
        // overlay when it holds patch directives) and not normalised. Istio normalises it; its
        // errors are reproduced below when the real merge fails.
        let names = names_overlay(&overlay);
        strategic::strategic_merge(
            POD_TYPE,
            &mut template_pod,
            names.as_ref().unwrap_or(&overlay),
        )
        .map_err(|e| e.context("failed applying injection overlay"))?;
        move_native_proxy(&mut merged, &template_pod, p.native_sidecars);
        rendered.push((name, text));
        let result =
            strategic::strategic_merge_owned(POD_TYPE, &mut merged, overlay).and_then(|()| {
                typed::normalize(POD_TYPE, &mut merged)
                    .map_err(|e| e.context("unmarshal patched pod"))
            });
        if let Err(e) = result {
            typed_template_pod(&rendered)
                .map_err(|e| e.context("failed applying injection overlay"))?;
            return Err(e.context(
                "failed parsing generated injected YAML (check Istio sidecar injector configuration)",
            ));
        }
    }
    Ok((merged, template_pod))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A template whose output does not fit the Pod type fails with Istio's first context
    /// (the template-only pod), not the later one.
    #[test]
    fn typed_errors_of_the_overlay_name_the_template_pod_step() {
        let config = crate::config::InjectorConfig::parse(
            "policy: enabled\ntemplates:\n  sidecar: |\n    spec:\n      containers:\n      - name: istio-proxy\n        ports:\n        - containerPort: not-a-number\n",
        )
        .unwrap();
        let s = Snapshot::with_config(config, "{}", None).unwrap();
        let p = InjectParams {
            snapshot: &s,
            mode: Mode::Webhook,
            workload: WorkloadMeta {
                kind: "Pod".into(),
                api_version: "v1".into(),
                name: "p".into(),
                namespace: "default".into(),
            },
            revision: "default",
            native_sidecars: false,
            proxy_envs: Default::default(),
            proxy_uid_gid: None,
            compliance_policy: "",
        };
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}});
        let e = inject_pod(&pod, &p).unwrap_err().to_string();
        assert!(e.contains("failed applying injection overlay"), "{e}");
        assert!(e.contains("unmarshal patched pod"), "{e}");
        assert!(!e.contains("failed parsing generated injected YAML"), "{e}");
    }
}
