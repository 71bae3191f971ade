//! A render read back as a patch, remembered in the snapshot's memo
//! ([`crate::config::render_memo`]) by the bytes of everything the render can read: the
//! template's name and every field of [`TemplateData`] (the pod's metadata and spec as JSON;
//! the mesh and proxy config as JSON unless they are the snapshot's own). `.Values` and the
//! environment map are the snapshot's, which the memo belongs to. Only templates whose renders
//! depend on their data alone are remembered ([`Template::is_deterministic`]); a key longer than
//! [`MAX_KEY`] (a very large pod) is not built further and the template renders as usual.

use std::io::Write;
use std::sync::Arc;

use serde_json::Value;

use super::{rendered_patch, RenderError};
use crate::config::render_memo::{key_hash, Rendered, MAX_KEY};
use crate::config::Snapshot;
use crate::template::{Template, TemplateData};

/// Render `tmpl` (called `name`) with `data` and read the text as a pod-shaped patch
/// ([`rendered_patch`]), answering from the snapshot's memo when the same data was rendered
/// before. Returns the text and the patch; errors are those of the render and the reading.
pub fn render_patch(
    snapshot: &Snapshot,
    name: &str,
    tmpl: &Template,
    data: &TemplateData<'_>,
) -> Result<(String, Value), RenderError> {
    let Some(key) = tmpl
        .is_deterministic()
        .then(|| memo_key(snapshot, name, data))
        .flatten()
    else {
        let text = tmpl.render(data)?;
        let tree = rendered_patch(name, &text)?;
        return Ok((text, tree));
    };
    let memo = &snapshot.render_memo;
    let hash = key_hash(&key);
    if let Some(hit) = memo.get(hash, &key) {
        return Ok((hit.text.clone(), hit.tree.clone()));
    }
    let text = tmpl.render(data)?;
    let tree = rendered_patch(name, &text)?;
    if memo.admit(hash, &key) {
        let kept = Rendered {
            text: text.clone(),
            tree: tree.clone(),
        };
        memo.insert(hash, &key, Arc::new(kept));
    }
    Ok((text, tree))
}

/// A buffer that refuses to grow past [`MAX_KEY`].
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + b.len() > MAX_KEY {
            return Err(std::io::Error::other("memo key too long"));
        }
        self.0.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes naming a render: `None` when they would exceed [`MAX_KEY`] or when the data's
/// `.Values` or environment are not the snapshot's. Strings are length-prefixed and JSON
/// values end with a NUL byte (which JSON text never holds), so distinct data give distinct
/// keys.
fn memo_key(snapshot: &Snapshot, name: &str, d: &TemplateData<'_>) -> Option<Vec<u8>> {
    // The environment is the snapshot's, or that with the native-sidecar variable set from
    // `native_sidecars` (which the key holds).
    if !std::ptr::eq(d.values, &snapshot.values)
        || !(std::ptr::eq(d.env, &snapshot.template_env)
            || super::differs_only_by_native(d.env, &snapshot.template_env))
    {
        return None;
    }
    let mut k = Capped(Vec::with_capacity(1024));
    for s in [
        name,
        d.kind,
        d.api_version,
        d.deployment_name,
        d.deployment_namespace,
        d.revision,
        d.proxy_image,
        d.proxy_init_image,
        d.inbound_traffic_policy_mode,
        d.compliance_policy,
    ] {
        k.write_all(&(s.len() as u64).to_le_bytes()).ok()?;
        k.write_all(s.as_bytes()).ok()?;
    }
    k.write_all(&[u8::from(d.native_sidecars)]).ok()?;
    k.write_all(&d.proxy_uid.to_le_bytes()).ok()?;
    k.write_all(&d.proxy_gid.to_le_bytes()).ok()?;
    let own_proxy_config = snapshot.mesh.get("defaultConfig");
    for (v, own) in [
        (d.object_meta, None),
        (d.spec, None),
        (d.mesh_config, Some(&snapshot.mesh)),
        (d.proxy_config, own_proxy_config),
    ] {
        if own.is_some_and(|o| std::ptr::eq(o, v)) {
            k.write_all(b"=").ok()?;
        } else {
            serde_json::to_writer(&mut k, v).ok()?;
        }
        k.write_all(b"\0").ok()?;
    }
    Some(k.0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn snapshot(template: &str) -> Snapshot {
        let config = crate::config::InjectorConfig::parse(&format!(
            "policy: enabled\ntemplates:\n  t: |\n{}",
            template
                .lines()
                .map(|l| format!("    {l}\n"))
                .collect::<String>()
        ))
        .expect("config");
        Snapshot::with_config(config, "{}", None).expect("snapshot")
    }

    fn data<'a>(s: &'a Snapshot, meta: &'a Value, spec: &'a Value) -> TemplateData<'a> {
        TemplateData {
            kind: "Deployment",
            api_version: "apps/v1",
            deployment_name: "d",
            deployment_namespace: "ns",
            object_meta: meta,
            spec,
            proxy_config: s.mesh.get("defaultConfig").unwrap_or(&Value::Null),
            mesh_config: &s.mesh,
            values: &s.values,
            revision: "",
            native_sidecars: false,
            proxy_image: "proxy",
            proxy_init_image: "proxy",
            proxy_uid: 1337,
            proxy_gid: 1337,
            inbound_traffic_policy_mode: "passthrough",
            compliance_policy: "",
            env: &s.template_env,
        }
    }

    #[test]
    fn same_data_is_answered_from_the_memo_and_other_data_is_rendered() {
        let s = snapshot("metadata:\n  labels:\n    app: {{ .ObjectMeta.Labels.app }}");
        let t = &s.config.templates["t"];
        let spec = json!({"containers": [{"name": "c"}]});
        let (a, b) = (
            json!({"labels": {"app": "a"}}),
            json!({"labels": {"app": "b"}}),
        );
        for _ in 0..3 {
            let (text, tree) = render_patch(&s, "t", t, &data(&s, &a, &spec)).expect("render");
            assert_eq!(text, "metadata:\n  labels:\n    app: a\n");
            assert_eq!(tree, json!({"metadata": {"labels": {"app": "a"}}}));
        }
        assert_eq!(s.render_memo.len(), 1, "admitted on the second render");
        let (text, _) = render_patch(&s, "t", t, &data(&s, &b, &spec)).expect("render");
        assert_eq!(text, "metadata:\n  labels:\n    app: b\n");
    }

    #[test]
    fn nondeterministic_templates_and_huge_pods_are_not_remembered() {
        let s = snapshot("metadata:\n  labels:\n    id: {{ uuidv4 | quote }}");
        assert!(!s.config.templates["t"].is_deterministic());
        let spec = json!({});
        let meta = json!({});
        let key = memo_key(&s, "t", &data(&s, &meta, &spec));
        assert!(key.is_some());
        let huge = json!({"labels": {"x": "y".repeat(MAX_KEY)}});
        assert!(memo_key(&s, "t", &data(&s, &huge, &spec)).is_none());
        let other_values = json!({});
        let mut d = data(&s, &meta, &spec);
        d.values = &other_values;
        assert!(memo_key(&s, "t", &d).is_none(), "values not the snapshot's");
    }
}
