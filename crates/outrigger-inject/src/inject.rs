//! One pod through the pipeline, once it is to be injected: its annotations validated (decide),
//! the proxy environment completed and a previous injection stripped (ingest), the selected
//! templates rendered (render) and strategic-merged onto the pod one by one (merge), user
//! overrides re-applied (merge) and the result post-processed (finish).
//!
//! [`inject_pod`] is the entry for a pod as given; the webhook normalises the pod itself to keep
//! the received one for the diff ([`normalize_pod`], [`inject_normalized`]), and kube-inject
//! hands its pod over ([`inject_pod_owned`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::config::Snapshot;
use crate::decide::annotations::validate_pod_annotations;
use crate::finish::{self, PostProcess};
use crate::ingest::params::cluster_and_network;
use crate::ingest::previous::strip_pod;
use crate::ingest::workload::WorkloadMeta;
use crate::json::Scan;
use crate::kube::names::{POD_TYPE, PROXY_CONFIG_ANNOTATION};
use crate::kube::pod::{annotation, meta_str, potential_name};
use crate::kube::typed;
use crate::merge::overrides::reapply_overwritten_containers;
use crate::merge::pod::TemplateMerge;
use crate::render::{render_templates, RenderParams};
use crate::{mesh, Error, Result};

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

/// What every injection under one configuration shares, set once from a command's flags and
/// configuration (once per run; `serve` once per configuration, with the native-sidecar answer
/// of each review): the one builder of [`InjectParams`] for `inject`, `serve`, `check`, `drift`
/// and `preview`, so a setting added here reaches them all.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// Configuration snapshot (with the template environment, `--template-env`).
    pub snapshot: &'a Snapshot,
    /// Revision (`--revision`, istiod's `REVISION`; `""` for the default).
    pub revision: &'a str,
    /// Native sidecars on or off (a fixed mode's answer; auto mode's is decided per pod).
    pub native_sidecars: bool,
    /// `COMPLIANCE_POLICY` of the process.
    pub compliance_policy: &'a str,
}

impl<'a> Settings<'a> {
    /// The parameters of one injection by `mode` of a pod of `workload`: these settings, the
    /// default proxy environment and user (the webhook sets its own per review).
    pub fn params(&self, mode: Mode, workload: WorkloadMeta) -> InjectParams<'a> {
        InjectParams {
            snapshot: self.snapshot,
            mode,
            workload,
            revision: self.revision,
            native_sidecars: self.native_sidecars,
            proxy_envs: BTreeMap::new(),
            proxy_uid_gid: None,
            compliance_policy: self.compliance_policy,
        }
    }

    /// These settings with native sidecars `on`.
    pub fn with_native_sidecars(mut self, on: bool) -> Settings<'a> {
        self.native_sidecars = on;
        self
    }
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
            Err(e) if mode == Mode::KubeInject => Err(e.into()),
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
    typed::normalize(POD_TYPE, pod).map_err(|e| Error::from(e).context("could not decode pod"))
}

/// [`normalize_pod`], also telling whether it changed the pod (`false`: the pod was in normal
/// form already and is exactly as it was; see [`typed::normalize_changed`]).
pub fn normalize_pod_changed(pod: &mut Value) -> Result<bool> {
    typed::normalize_changed(POD_TYPE, pod)
        .map_err(|e| Error::from(e).context("could not decode pod"))
}

/// [`inject_pod`] for a pod that [`normalize_pod`] has already normalised, without copying it
/// (the webhook keeps one tree when the pod it received is already in normal form).
pub fn inject_normalized(original: &Value, p: &InjectParams<'_>) -> Result<Injected> {
    let snapshot = p.snapshot;
    let mut warnings = Vec::new();

    if let Some(dns) = original
        .scan("spec")
        .and_then(|s| s.scan("dnsPolicy"))
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
    let proxy_config = mesh_eff.scan("defaultConfig").unwrap_or(&no_proxy_config);
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
    let pp_warnings = finish::post_process(&mut merged, &pp)
        .map_err(|e| Error::from(e).context("failed to process pod"))?;
    warnings.extend(pp_warnings);
    Ok(Injected {
        pod: merged,
        warnings,
    })
}

/// Istio's `RunTemplate`: the annotations validated (decide), the proxy environment completed
/// (ingest), the previous injection stripped (ingest), then each selected template rendered
/// (render) and merged (merge). Returns `(mergedPod, templatePod)`.
fn run_templates(
    pod: &Value,
    p: &InjectParams<'_>,
    mesh_eff: &Value,
    proxy_config: &Value,
    proxy_envs: &mut BTreeMap<String, String>,
) -> Result<(Value, Value)> {
    let snapshot = p.snapshot;
    validate_pod_annotations(pod)?;
    cluster_and_network(snapshot, pod, proxy_envs);
    let status_port = crate::mesh::default_status_port(&snapshot.mesh);
    let stripped = strip_pod(pod, status_port)?;
    let params = RenderParams {
        workload: &p.workload,
        mesh: mesh_eff,
        proxy_config,
        revision: p.revision,
        native_sidecars: p.native_sidecars,
        proxy_uid_gid: p.proxy_uid_gid,
        compliance_policy: p.compliance_policy,
    };
    let mut merge = TemplateMerge::new(pod, p.native_sidecars);
    render_templates(snapshot, pod, &stripped, &params, |r| merge.add(r))?;
    Ok(merge.into_parts())
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
