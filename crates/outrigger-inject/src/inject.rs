//! The injection pipeline (spec §7): strip a previous injection, render the selected templates,
//! strategic-merge them onto the pod, re-apply user overrides, post-process, and diff.
//!
//! [`inject_pod`] is the one entry point shared by the webhook and `outrigger inject`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::config::Snapshot;
use crate::decide::annotations;
use crate::finish::{self, prometheus, PostProcess};
use crate::go::json as gojson;
use crate::kube::names::{
    INIT_CONTAINER, NATIVE_SIDECAR_ANNOTATION, OVERRIDES_ANNOTATION, PROXY_CONFIG_ANNOTATION,
    PROXY_CONTAINER, STATUS_ANNOTATION, TEMPLATES_ANNOTATION, VALIDATION_CONTAINER,
};
use crate::kube::typed;
use crate::merge::strategic;
use crate::template::TemplateData;
use crate::{mesh, yaml, Error, Result};

/// Default proxy UID/GID.
pub const DEFAULT_PROXY_ID: i64 = 1337;
/// Default cluster ID.
pub const DEFAULT_CLUSTER_ID: &str = "Kubernetes";
/// Go type of a pod in the schema tables.
pub const POD_TYPE: &str = "corev1.Pod";

/// Which caller runs the pipeline; the two differ in a few documented places (spec §11.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The admission webhook.
    Webhook,
    /// Offline manifest injection (`outrigger inject`, like `istioctl kube-inject`).
    KubeInject,
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
    /// Global native-sidecar decision (spec §4.5).
    pub native_sidecars: bool,
    /// Proxy environment from the webhook path (spec §1.4).
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

/// Parsed `sidecar.istio.io/status` annotation.
#[derive(Debug, Clone, Default)]
struct Status {
    init_containers: Vec<String>,
    containers: Vec<String>,
}

fn names(v: Option<&Value>) -> Option<Vec<String>> {
    match v {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        Some(_) => None,
    }
}

impl Status {
    /// Strict parse (stripPod): `None` when absent or not of the expected shape.
    fn parse_strict(pod: &Value) -> Option<Status> {
        let text = annotation(pod, STATUS_ANNOTATION)?;
        let v: Value = serde_json::from_str(text).ok()?;
        let m = v.as_object()?;
        for key in ["volumes", "imagePullSecrets"] {
            names(m.get(key))?;
        }
        if !matches!(
            m.get("revision"),
            None | Some(Value::Null) | Some(Value::String(_))
        ) {
            return None;
        }
        Some(Status {
            init_containers: names(m.get("initContainers"))?,
            containers: names(m.get("containers"))?,
        })
    }

    /// Lenient parse (reapplyOverwrittenContainers): wrong shapes become empty lists.
    fn parse_lenient(pod: &Value) -> Status {
        let parsed =
            annotation(pod, STATUS_ANNOTATION).and_then(|t| serde_json::from_str::<Value>(t).ok());
        let field = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| names(v.get(k)))
                .unwrap_or_default()
        };
        Status {
            init_containers: field("initContainers"),
            containers: field("containers"),
        }
    }
}

/// Annotation value of a pod.
pub fn annotation<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    pod.get("metadata")?.get("annotations")?.get(name)?.as_str()
}

/// Label value of a pod.
pub fn label<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    pod.get("metadata")?.get("labels")?.get(name)?.as_str()
}

/// A string field of a pod's `metadata` (`name`, `namespace`, ...); empty when absent.
pub fn meta_str<'a>(pod: &'a Value, field: &str) -> &'a str {
    pod.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn object_mut<'a>(v: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    map_object(v.as_object_mut().expect("just made an object"), key)
}

fn map_object<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let e = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !e.is_object() {
        *e = Value::Object(Map::new());
    }
    e.as_object_mut().expect("just made an object")
}

fn annotations_mut(pod: &mut Value) -> &mut Map<String, Value> {
    map_object(object_mut(pod, "metadata"), "annotations")
}

fn containers<'a>(pod: &'a Value, list: &str) -> &'a [Value] {
    pod.get("spec")
        .and_then(|s| s.get(list))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn containers_mut<'a>(pod: &'a mut Value, list: &str) -> &'a mut Vec<Value> {
    let spec = object_mut(pod, "spec");
    let e = spec
        .entry(list.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !e.is_array() {
        *e = Value::Array(Vec::new());
    }
    e.as_array_mut().expect("just made an array")
}

fn container_name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

fn find_container<'a>(pod: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    containers(pod, list)
        .iter()
        .find(|c| container_name(c) == name)
}

/// `.TypeMeta`/`.DeploymentMeta` of a pod from its owner references (spec §4.2).
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
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        });
    if let Some(r) = owner {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
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

/// Strip the image-type suffix and append the requested one (spec §4.6 step 6).
fn adjust_tag(tag: &str, image_type: &str) -> String {
    if image_type.is_empty() {
        return tag.to_string();
    }
    let base = tag
        .strip_suffix("-distroless")
        .or_else(|| tag.strip_suffix("-debug"))
        .unwrap_or(tag);
    if image_type == "default" {
        base.to_string()
    } else {
        format!("{base}-{image_type}")
    }
}

/// `.ProxyImage` and `.ProxyInitImage` (spec §4.6).
fn images(snapshot: &Snapshot, proxy_config: &Value, pod: &Value) -> (String, String) {
    let f = &snapshot.values_facts;
    let annotated = annotation(pod, "sidecar.istio.io/proxyImageType");
    let pc_type = proxy_config
        .get("image")
        .map(|i| i.get("imageType").and_then(Value::as_str).unwrap_or(""));
    let pick = |pc: Option<&str>| -> String {
        let mut t = pc.unwrap_or("").to_string();
        if t.is_empty() {
            t = f.variant.clone();
        }
        if let Some(a) = annotated {
            t = a.to_string();
        }
        t
    };
    let name = |n: &str| {
        if n.is_empty() {
            "proxyv2".to_string()
        } else {
            n.to_string()
        }
    };
    let proxy = format!(
        "{}/{}:{}",
        f.hub,
        name(&f.proxy_image),
        adjust_tag(&f.tag, &pick(pc_type))
    );
    let init = format!(
        "{}/{}:{}",
        f.hub,
        name(&f.proxy_init_image),
        adjust_tag(&f.tag, &pick(None))
    );
    (proxy, init)
}

/// Template names selected for the pod (spec §3.4).
pub fn select_templates(snapshot: &Snapshot, pod: &Value) -> Vec<String> {
    let requested: Vec<String> = match annotation(pod, TEMPLATES_ANNOTATION) {
        Some(v) => v.split(',').map(|s| s.trim().to_string()).collect(),
        None => snapshot.config.default_templates.clone(),
    };
    let mut out = Vec::new();
    for name in requested {
        match snapshot.config.aliases.get(&name) {
            Some(expanded) => out.extend(expanded.iter().cloned()),
            None => out.push(name),
        }
    }
    out
}

/// The pod for the template data: previous injection removed, overrides re-inserted (§7.2).
/// A pod with neither a status nor an overrides annotation is used as is, without a copy.
fn strip_pod(pod: &Value, status_port: i64) -> Result<Cow<'_, Value>> {
    let status = Status::parse_strict(pod);
    if status.is_none() && annotation(pod, OVERRIDES_ANNOTATION).is_none() {
        return Ok(Cow::Borrowed(pod));
    }
    let mut stripped = without_injected_containers(pod);
    if status.is_some() {
        let ann = annotations_mut(&mut stripped);
        prometheus::strip_prometheus_annotations(ann, status_port);
        ann.remove(STATUS_ANNOTATION);
        tidy_lists(&mut stripped);
    }
    let overrides = parse_overrides(pod)?;
    for (list, items) in [("containers", overrides.0), ("initContainers", overrides.1)] {
        for c in items {
            let exists = containers(&stripped, list)
                .iter()
                .any(|x| container_name(x) == container_name(&c));
            if !exists {
                containers_mut(&mut stripped, list).push(c);
            }
        }
    }
    Ok(Cow::Owned(stripped))
}

/// The pod without the containers and init containers listed in its status annotation.
fn without_injected_containers(pod: &Value) -> Value {
    let mut out = pod.clone();
    if let Some(status) = Status::parse_strict(pod) {
        containers_mut(&mut out, "containers")
            .retain(|c| !status.containers.iter().any(|n| n == container_name(c)));
        containers_mut(&mut out, "initContainers").retain(|c| {
            !status
                .init_containers
                .iter()
                .any(|n| n == container_name(c))
        });
        tidy_lists(&mut out);
    }
    out
}

/// Drop empty container lists and annotation maps created while stripping, as Go's omitempty would.
fn tidy_lists(pod: &mut Value) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if spec
            .get("initContainers")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            spec.remove("initContainers");
        }
    }
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            meta.remove("annotations");
        }
    }
}

/// `proxy.istio.io/overrides`: `(containers, initContainers)`; invalid JSON is an error.
fn parse_overrides(pod: &Value) -> Result<(Vec<Value>, Vec<Value>)> {
    let Some(text) = annotation(pod, OVERRIDES_ANNOTATION) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::Json(format!("invalid {OVERRIDES_ANNOTATION} annotation: {e}")))?;
    let list = |k: &str| -> Result<Vec<Value>> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a.clone()),
            Some(other) => Err(Error::Json(format!(
                "invalid {OVERRIDES_ANNOTATION} annotation: {k} must be a list, got {other}"
            ))),
        }
    };
    Ok((list("containers")?, list("initContainers")?))
}

fn int_of(v: Option<&Value>) -> Option<i64> {
    v.and_then(|x| x.as_i64().or_else(|| x.as_f64().map(|f| f as i64)))
}

/// Parse a rendered template into a pod-shaped patch (spec §7.4 step 2).
fn rendered_patch(name: &str, text: &str) -> Result<Value> {
    let v = yaml::from_str(text).map_err(|e| {
        Error::Merge(format!(
            "strategic merge: invalid JSON document: template {name:?} rendered invalid YAML: {e}"
        ))
    })?;
    match v {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(v),
        _ => Err(Error::Merge(format!(
            "strategic merge: invalid JSON document: template {name:?} did not render a mapping"
        ))),
    }
}

fn merge_pod(target: &mut Value, patch: &Value) -> Result<()> {
    strategic::strategic_merge(POD_TYPE, target, patch)?;
    typed::normalize(POD_TYPE, target).map_err(|e| e.context("unmarshal patched pod"))
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

fn potential_name(pod: &Value) -> String {
    let name = meta_str(pod, "name");
    if !name.is_empty() {
        return name.to_string();
    }
    let g = meta_str(pod, "generateName");
    if g.is_empty() {
        String::new()
    } else {
        format!("{g}***** (actual name not yet known)")
    }
}

/// RunTemplate (spec §7.3): returns `(mergedPod, templatePod)`.
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

    // Cluster and network (spec §4.3), written back into the proxy environment.
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
    };

    // Merge onto the unstripped pod, as Istio does: on re-injection the previous sidecar keeps
    // what post-processing merges back (e.g. `ISTIO_KUBE_APP_PROBERS` of already rewritten probes).
    let mut merged = crate::json::compact::clone(pod);
    let mut template_pod = json!({});
    let mut rendered: Vec<(String, String)> = Vec::new();
    for name in select_templates(snapshot, pod) {
        let Some(tmpl) = snapshot.config.templates.get(&name) else {
            let have: Vec<&str> = snapshot
                .config
                .templates
                .keys()
                .map(String::as_str)
                .collect();
            return Err(Error::Template(format!(
                "requested template {name:?} not found; have {}",
                have.join(", ")
            )));
        };
        let text = tmpl.render(&data)?;
        let overlay = rendered_patch(&name, &text)?;
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

/// The lists of the template-only pod whose element names injection reads.
const NAMED_LISTS: [&str; 4] = [
    "initContainers",
    "containers",
    "volumes",
    "imagePullSecrets",
];

/// The part of a template overlay that decides the template-only pod's names: `spec`'s named
/// lists with each element reduced to its `name`. `None` (merge the whole overlay) when the
/// overlay is shaped otherwise, has a nameless element or holds patch directives (`$patch`,
/// `$setElementOrder/...`), where the reduction could change names or error messages.
fn names_overlay(overlay: &Value) -> Option<Value> {
    let directive = |m: &Map<String, Value>| m.keys().any(|k| k.starts_with('$'));
    let top = overlay.as_object()?;
    if directive(top) {
        return None;
    }
    let mut spec_out = Map::new();
    match top.get("spec") {
        None => {}
        Some(Value::Object(spec)) => {
            if directive(spec) {
                return None;
            }
            for list in NAMED_LISTS {
                let reduced = match spec.get(list) {
                    None => continue,
                    Some(Value::Null) => Value::Null,
                    Some(Value::Array(items)) => {
                        let mut out = Vec::with_capacity(items.len());
                        for item in items {
                            let m = item.as_object().filter(|m| !directive(m))?;
                            // A nameless element fails the merge with its content in the
                            // message: merged whole, the message stays Istio's.
                            let mut e = Map::new();
                            e.insert("name".into(), m.get("name")?.clone());
                            out.push(Value::Object(e));
                        }
                        Value::Array(out)
                    }
                    Some(_) => return None,
                };
                spec_out.insert(list.into(), reduced);
            }
        }
        Some(_) => return None,
    }
    let mut out = Map::new();
    out.insert("spec".into(), Value::Object(spec_out));
    Some(Value::Object(out))
}

/// The template-only pod as Istio builds it (every rendered overlay merged onto an empty pod,
/// normalised after each): only its errors matter, on the error path.
fn typed_template_pod(rendered: &[(String, String)]) -> Result<()> {
    let mut pod = json!({});
    for (name, text) in rendered {
        let overlay = rendered_patch(name, text)?;
        merge_pod(&mut pod, &overlay)?;
    }
    Ok(())
}

/// Native-sidecar move (spec §7.3 step 5.4): a user `istio-proxy` written under `containers`
/// follows the template's proxy into `initContainers`.
fn move_native_proxy(merged: &mut Value, template_pod: &Value, global: bool) {
    let native = match annotation(merged, NATIVE_SIDECAR_ANNOTATION) {
        Some("true") => true,
        Some("false") => false,
        _ => global,
    };
    if !native || find_container(template_pod, "initContainers", PROXY_CONTAINER).is_none() {
        return;
    }
    let list = containers_mut(merged, "containers");
    if let Some(i) = list
        .iter()
        .position(|c| container_name(c) == PROXY_CONTAINER)
    {
        let c = list.remove(i);
        containers_mut(merged, "initContainers").push(c);
    }
}

/// reapplyOverwrittenContainers (spec §7.5): user definitions of injected containers win.
fn reapply_overwritten_containers(
    merged: &mut Value,
    original: &Value,
    template_pod: &Value,
    proxy_config: &Value,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let (over_containers, over_init) = parse_overrides(original)?;
    let already_injected = annotation(original, STATUS_ANNOTATION).is_some();
    let injected = if already_injected {
        Status::parse_lenient(original)
    } else {
        Status::default()
    };
    let by_name =
        |list: &[Value], name: &str| list.iter().find(|c| container_name(c) == name).cloned();

    let mut recorded: (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    for (list, skip, overrides) in [
        ("containers", &injected.containers, &over_containers),
        ("initContainers", &injected.init_containers, &over_init),
    ] {
        for c in containers(template_pod, list) {
            let name = container_name(c);
            // Explicit overrides recorded by the first injection are re-applied on every
            // injection, so re-injection is idempotent. A container that is only present because
            // we injected it before is not an override: the fresh template wins (Istio skips
            // both; keeping the user's recorded overrides is a deliberate fix).
            let explicit = by_name(overrides, name);
            if explicit.is_none() && skip.iter().any(|n| n == name) {
                continue;
            }
            let found = explicit.or_else(|| {
                find_container(original, "containers", name)
                    .or_else(|| {
                        (list == "initContainers")
                            .then(|| find_container(original, "initContainers", name))
                            .flatten()
                    })
                    .cloned()
            });
            let Some(mut overlay) = found else { continue };
            if overlay.get("image").and_then(Value::as_str) == Some("auto") {
                if let Some(m) = overlay.as_object_mut() {
                    m.remove("image");
                }
            }
            let overlay = typed::to_go_value("corev1.Container", &overlay)?;
            let patch = if list == "containers" {
                json!({"spec": {"containers": [overlay.clone()]}})
            } else {
                json!({"spec": {"containers": [], "initContainers": [overlay.clone()]}})
            };
            let what = if list == "containers" {
                "sidecar container"
            } else {
                "sidecar init container"
            };
            merge_pod(merged, &patch).map_err(|e| e.context(&format!("failed to apply {what}")))?;
            if list == "containers" {
                recorded.0.push(overlay);
            } else {
                recorded.1.push(overlay);
            }
        }
    }
    if !already_injected && (!recorded.0.is_empty() || !recorded.1.is_empty()) {
        let mut o = Map::new();
        if !recorded.0.is_empty() {
            o.insert("containers".into(), Value::Array(recorded.0));
        }
        if !recorded.1.is_empty() {
            o.insert("initContainers".into(), Value::Array(recorded.1));
        }
        let text = gojson::to_string(&Value::Object(o));
        annotations_mut(merged).insert(OVERRIDES_ANNOTATION.into(), Value::String(text));
    }
    let recorded_proxy = over_containers
        .iter()
        .chain(&over_init)
        .find(|c| container_name(c) == PROXY_CONTAINER);
    adjust_init_container_user(merged, original, recorded_proxy, proxy_config, warnings);
    Ok(())
}

/// adjustInitContainerUser (spec §7.5 step 6).
/// `recorded_proxy` is the user's `istio-proxy` from the overrides annotation of a previous
/// injection: it wins over the injected proxy of the pod, whose user may have been rewritten (TPROXY).
fn adjust_init_container_user(
    merged: &mut Value,
    original: &Value,
    recorded_proxy: Option<&Value>,
    proxy_config: &Value,
    warnings: &mut Vec<String>,
) {
    let Some(user_proxy) = recorded_proxy
        .or_else(|| find_container(original, "containers", PROXY_CONTAINER))
        .or_else(|| find_container(original, "initContainers", PROXY_CONTAINER))
    else {
        return;
    };
    let Some(sc) = user_proxy.get("securityContext") else {
        return;
    };
    let run_as_user = int_of(sc.get("runAsUser"));
    let run_as_group = int_of(sc.get("runAsGroup"));
    if run_as_user.is_none() && run_as_group.is_none() {
        return;
    }
    let init_name = if find_container(merged, "initContainers", INIT_CONTAINER).is_some() {
        INIT_CONTAINER
    } else if find_container(merged, "initContainers", VALIDATION_CONTAINER).is_some() {
        VALIDATION_CONTAINER
    } else {
        warnings.push("Could not find either istio-init or istio-validation container".into());
        return;
    };
    let tproxy = proxy_config.get("interceptionMode").and_then(Value::as_str) == Some("TPROXY")
        || annotation(merged, "sidecar.istio.io/interceptionMode") == Some("TPROXY");
    if tproxy && run_as_user.is_some() {
        let proxy = containers_mut(merged, "containers")
            .iter_mut()
            .find(|c| container_name(c) == PROXY_CONTAINER);
        let proxy = match proxy {
            Some(c) => Some(c),
            None => containers_mut(merged, "initContainers")
                .iter_mut()
                .find(|c| container_name(c) == PROXY_CONTAINER),
        };
        match proxy {
            Some(c) => {
                object_mut(c, "securityContext").insert("runAsUser".into(), json!(0));
            }
            None => warnings.push("Could not find the istio-proxy container".into()),
        }
    }
    let Some(ic) = containers_mut(merged, "initContainers")
        .iter_mut()
        .find(|c| container_name(c) == init_name)
    else {
        return;
    };
    if !tproxy && init_name == VALIDATION_CONTAINER {
        let sc = object_mut(ic, "securityContext");
        if let Some(u) = run_as_user {
            sc.insert("runAsUser".into(), json!(u));
        }
        if let Some(g) = run_as_group {
            sc.insert("runAsGroup".into(), json!(g));
        }
    }
    if let Some(u) = run_as_user.filter(|u| *u != 0) {
        if let Some(args) = ic.get_mut("args").and_then(Value::as_array_mut) {
            if let Some(i) = args.iter().position(|a| a.as_str() == Some("-u")) {
                if let Some(slot) = args.get_mut(i + 1) {
                    *slot = Value::String(u.to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn image_tags_follow_variant_rules() {
        assert_eq!(adjust_tag("1.12", "distroless"), "1.12-distroless");
        assert_eq!(adjust_tag("1.12-debug", "distroless"), "1.12-distroless");
        assert_eq!(adjust_tag("x-distroless", "default"), "x");
        assert_eq!(
            adjust_tag("1.12-this-is-unusual-tag", "distroless"),
            "1.12-this-is-unusual-tag-distroless"
        );
        assert_eq!(adjust_tag("11", ""), "11");
    }

    #[test]
    fn cronjob_names() {
        assert_eq!(cronjob_base("a-b-12345678"), Some("a-b"));
        assert_eq!(cronjob_base("a-1234567"), None);
        assert_eq!(cronjob_base("-12345678"), None);
    }
}

#[cfg(test)]
mod template_pod_tests {
    use super::*;

    fn names_of(pod: &Value) -> Vec<(String, Vec<String>)> {
        NAMED_LISTS
            .iter()
            .map(|l| {
                let names = containers(pod, l)
                    .iter()
                    .map(|c| container_name(c).to_string())
                    .collect();
                (l.to_string(), names)
            })
            .collect()
    }

    /// Merging the reduced overlays gives the same names as merging the whole ones.
    #[test]
    fn names_overlay_keeps_the_names_of_a_full_merge() {
        let overlays = [
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {
                "initContainers": [{"name": "istio-init", "image": "x"}],
                "containers": [{"name": "istio-proxy", "args": ["a"]}],
                "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2"}],
                "imagePullSecrets": [{"name": "s"}], "hostname": "h"}}),
            json!({"spec": {"containers": [{"name": "second"}, {"name": "istio-proxy", "image": "y"}],
                "volumes": null}}),
        ];
        let (mut full, mut reduced) = (json!({}), json!({}));
        for o in &overlays {
            let r = names_overlay(o).expect("plain overlay is reduced");
            strategic::strategic_merge(POD_TYPE, &mut full, o).unwrap();
            strategic::strategic_merge(POD_TYPE, &mut reduced, &r).unwrap();
            assert_eq!(names_of(&full), names_of(&reduced), "after {o}");
        }
        assert!(names_of(&full).iter().any(|(_, n)| n.len() == 2));
    }

    #[test]
    fn directives_and_odd_shapes_are_merged_whole() {
        for o in [
            json!({"$patch": "replace"}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
            json!({"spec": {"containers": {"name": "a"}}}),
            json!({"spec": {"containers": ["a"]}}),
            json!({"spec": {"containers": [{"image": "nameless"}]}}),
            json!({"spec": null}),
            json!([]),
        ] {
            assert!(names_overlay(&o).is_none(), "{o}");
        }
    }

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
