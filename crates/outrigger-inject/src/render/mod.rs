//! Render stage: which templates a pod gets, the data they see (`.ObjectMeta`, `.ProxyImage`,
//! ...), running each of them (through the snapshot's memo, [`memo`]) and reading its text back
//! as a pod-shaped patch. [`render_templates`] is the stage's one entry; the template language
//! itself is [`crate::template`].

pub mod memo;

use serde_json::{Map, Value};

use crate::config::Snapshot;
use crate::ingest::workload::WorkloadMeta;
use crate::kube::names::{DEFAULT_PROXY_ID, TEMPLATES_ANNOTATION};
use crate::kube::pod::annotation;
use crate::mesh;
use crate::template::{TemplateData, TemplateError};
use crate::yaml::{self, YamlError};

/// What the templates are rendered with besides the snapshot and the pod.
#[derive(Debug, Clone, Copy)]
pub struct RenderParams<'a> {
    /// Workload identity (`.TypeMeta`, `.DeploymentMeta`).
    pub workload: &'a WorkloadMeta,
    /// The mesh config in force for this pod (`.MeshConfig`).
    pub mesh: &'a Value,
    /// Its `defaultConfig` (`.ProxyConfig`).
    pub proxy_config: &'a Value,
    /// `.Revision`.
    pub revision: &'a str,
    /// `.NativeSidecars`.
    pub native_sidecars: bool,
    /// Proxy UID/GID (OpenShift namespaces); `None` means 1337.
    pub proxy_uid_gid: Option<(i64, i64)>,
    /// `.CompliancePolicy`.
    pub compliance_policy: &'a str,
}

/// The environment variable Istio's templates before 1.28 read for the native-sidecar mode
/// (`env "ENABLE_NATIVE_SIDECARS" "false"`), where later ones read `.NativeSidecars`.
pub const NATIVE_SIDECARS_ENV: &str = "ENABLE_NATIVE_SIDECARS";

/// The template environment in which `env "ENABLE_NATIVE_SIDECARS"` says the native-sidecar
/// decision `native` (`true` or `false`), as istiod's own environment says it to the templates
/// it runs: `None` when `env` says so already, else `env` with the variable set. So a template
/// reading the variable and one reading `.NativeSidecars` inject the same way.
pub fn native_sidecars_env(
    env: &std::collections::BTreeMap<String, String>,
    native: bool,
) -> Option<std::collections::BTreeMap<String, String>> {
    let want = if native { "true" } else { "false" };
    if env.get(NATIVE_SIDECARS_ENV).map(String::as_str) == Some(want) {
        return None;
    }
    let mut env = env.clone();
    env.insert(NATIVE_SIDECARS_ENV.into(), want.into());
    Some(env)
}

/// Whether `env` is `base` but for [`NATIVE_SIDECARS_ENV`] (what [`native_sidecars_env`]
/// makes of it).
pub(crate) fn differs_only_by_native(
    env: &std::collections::BTreeMap<String, String>,
    base: &std::collections::BTreeMap<String, String>,
) -> bool {
    let others = |m: &'_ std::collections::BTreeMap<String, String>| {
        m.iter()
            .filter(|(k, _)| k.as_str() != NATIVE_SIDECARS_ENV)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    others(env) == others(base)
}

/// One selected template, rendered: its name, and its text with the text read as a pod-shaped
/// patch ([`rendered_patch`]), shared with the snapshot's memo when it holds them.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The template's name.
    pub name: String,
    /// What it rendered, and the patch read from it.
    pub out: std::sync::Arc<crate::config::render_memo::Rendered>,
}

impl Rendered {
    /// What the template rendered.
    pub fn text(&self) -> &str {
        &self.out.text
    }

    /// The text read as a pod-shaped patch.
    pub fn overlay(&self) -> &Value {
        &self.out.tree
    }
}

/// The render stage: run the templates selected for `pod` ([`select_templates`]) in order, with
/// the data of the pod as it should be injected (`stripped`: a previous injection removed), and
/// hand each result to `each` (the merge stage) before the next one runs, as Istio's
/// `RunTemplate` does: a template's merge error stops the loop before the next template renders.
///
/// Errors are `each`'s, and the render stage's own ([`RenderError`]) converted into that type.
pub fn render_templates<E: From<RenderError>>(
    snapshot: &Snapshot,
    pod: &Value,
    stripped: &Value,
    p: &RenderParams<'_>,
    mut each: impl FnMut(Rendered) -> Result<(), E>,
) -> Result<(), E> {
    let (uid, gid) = p
        .proxy_uid_gid
        .unwrap_or((DEFAULT_PROXY_ID, DEFAULT_PROXY_ID));
    let (proxy_image, proxy_init_image) = images(snapshot, p.proxy_config, stripped);
    let null = Value::Null;
    let native_env = native_sidecars_env(&snapshot.template_env, p.native_sidecars);
    let data = TemplateData {
        kind: &p.workload.kind,
        api_version: &p.workload.api_version,
        deployment_name: &p.workload.name,
        deployment_namespace: &p.workload.namespace,
        object_meta: stripped.get("metadata").unwrap_or(&null),
        spec: stripped.get("spec").unwrap_or(&null),
        proxy_config: p.proxy_config,
        mesh_config: p.mesh,
        values: &snapshot.values,
        revision: p.revision,
        native_sidecars: p.native_sidecars,
        proxy_image: &proxy_image,
        proxy_init_image: &proxy_init_image,
        proxy_uid: uid,
        proxy_gid: gid,
        inbound_traffic_policy_mode: mesh::inbound_traffic_policy_mode(p.mesh),
        compliance_policy: p.compliance_policy,
        env: match &native_env {
            Some(env) => env,
            None => &snapshot.template_env,
        },
        proto_json: mesh::proto_to_json,
    };
    for name in select_templates(snapshot, pod) {
        let Some(tmpl) = snapshot.config.templates.get(&name) else {
            return Err(E::from(RenderError::TemplateNotFound {
                name,
                have: snapshot.config.templates.keys().cloned().collect(),
            }));
        };
        let out = memo::render_patch(snapshot, &name, tmpl, &data)?;
        each(Rendered { name, out })?;
    }
    Ok(())
}

/// Why rendering produced no usable patch: the render stage's error. It converts into the
/// crate-wide sum as `Error::Render`, except a template that fails to execute
/// ([`RenderError::Template`]), which becomes `Error::Template`.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A template failed to execute.
    #[error(transparent)]
    Template(Box<TemplateError>),
    /// The pod asks for a template the configuration does not have.
    #[error("requested template {name:?} not found; have {}", .have.join(", "))]
    TemplateNotFound {
        /// The requested name.
        name: String,
        /// The configuration's template names.
        have: Vec<String>,
    },
    /// A template rendered text that is not YAML (reported as the merge's invalid document).
    #[error(
        "strategic merge: invalid JSON document: template {template:?} rendered invalid YAML: \
         {source}"
    )]
    InvalidYaml {
        /// The template's name.
        template: String,
        /// The YAML error.
        source: Box<YamlError>,
    },
    /// A template rendered YAML that is not a mapping.
    #[error("strategic merge: invalid JSON document: template {0:?} did not render a mapping")]
    NotAMapping(String),
}

impl From<TemplateError> for RenderError {
    fn from(e: TemplateError) -> RenderError {
        RenderError::Template(Box::new(e))
    }
}

/// Strip the image-type suffix (`-distroless`, `-debug`) and append the requested one.
pub fn adjust_tag(tag: &str, image_type: &str) -> String {
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

/// `.ProxyImage` and `.ProxyInitImage`: hub, image name and tag from the values, the image type
/// from the proxy config, the values' variant or the `sidecar.istio.io/proxyImageType`
/// annotation (which wins).
pub fn images(snapshot: &Snapshot, proxy_config: &Value, pod: &Value) -> (String, String) {
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

/// Template names selected for the pod: the `inject.istio.io/templates` annotation (comma
/// separated) or the config's `defaultTemplates`, aliases expanded.
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

/// Parse a rendered template into a pod-shaped patch (empty text is an empty patch).
pub fn rendered_patch(name: &str, text: &str) -> Result<Value, RenderError> {
    let v = yaml::from_str(text).map_err(|e| RenderError::InvalidYaml {
        template: name.to_string(),
        source: Box::new(e),
    })?;
    match v {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(v),
        _ => Err(RenderError::NotAMapping(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A template reading `ENABLE_NATIVE_SIDECARS` (Istio 1.24, 1.26) sees the native-sidecar
    /// decision, whatever the process environment says, rendered afresh or from the memo.
    #[test]
    fn the_native_sidecar_variable_says_the_decision() {
        let config = crate::config::InjectorConfig::parse(
            "policy: enabled\ntemplates:\n  sidecar: |\n    metadata:\n      labels:\n        \
             native: \"{{ env \"ENABLE_NATIVE_SIDECARS\" \"false\" }}\"\n",
        )
        .expect("config");
        let env = [(NATIVE_SIDECARS_ENV.to_string(), "false".to_string())].into();
        let s = Snapshot::with_config(config, "{}", None)
            .expect("snapshot")
            .with_template_env(env);
        let pod = serde_json::json!({"metadata": {}, "spec": {"containers": [{"name": "a"}]}});
        let workload = WorkloadMeta::default();
        let mesh = serde_json::json!({});
        for native in [true, false, true, false] {
            let p = RenderParams {
                workload: &workload,
                mesh: &mesh,
                proxy_config: &mesh,
                revision: "",
                native_sidecars: native,
                proxy_uid_gid: None,
                compliance_policy: "",
            };
            let mut labels = Vec::new();
            render_templates::<RenderError>(&s, &pod, &pod, &p, |r| {
                labels.push(r.overlay()["metadata"]["labels"]["native"].clone());
                Ok(())
            })
            .expect("render");
            assert_eq!(labels, [serde_json::json!(native.to_string())]);
        }
    }
}
