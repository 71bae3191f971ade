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
        .then(|| memo_key(snapshot, name, tmpl, data))
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
fn memo_key(
    snapshot: &Snapshot,
    name: &str,
    tmpl: &Template,
    d: &TemplateData<'_>,
) -> Option<Vec<u8>> {
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
    let (meta_fields, spec_fields) = tmpl.read_json_fields();
    for (v, own, read) in [
        (d.object_meta, None, meta_fields),
        (d.spec, None, spec_fields),
        (d.mesh_config, Some(&snapshot.mesh), None),
        (d.proxy_config, own_proxy_config, None),
    ] {
        if own.is_some_and(|o| std::ptr::eq(o, v)) {
            k.write_all(b"=").ok()?;
        } else if let (Some(read), Value::Object(m)) = (read, v) {
            // Only the fields the template can read ([`Template::read_json_fields`]): pods
            // that differ in others (names, uids, nodes) share the render.
            k.write_all(b"P").ok()?;
            for (field, value) in m.iter().filter(|(f, _)| read.contains(f)) {
                k.write_all(&(field.len() as u64).to_le_bytes()).ok()?;
                k.write_all(field.as_bytes()).ok()?;
                serde_json::to_writer(&mut k, value).ok()?;
                k.write_all(b"\0").ok()?;
            }
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

    /// Pods that differ only in what the template cannot read (a name, a node) share one
    /// render; a template that reads the name keys by it.
    #[test]
    fn only_the_fields_a_template_reads_key_its_renders() {
        let spec = |node: &str| json!({"containers": [{"name": "c"}], "nodeName": node});
        let meta = |name: &str| json!({"name": name, "uid": name, "labels": {"app": "a"}});
        let labels = snapshot("metadata:\n  labels:\n    app: {{ .ObjectMeta.Labels.app }}");
        let t = &labels.config.templates["t"];
        let (m1, m2, s1, s2) = (meta("p-1"), meta("p-2"), spec("n-1"), spec("n-2"));
        let one = memo_key(&labels, "t", t, &data(&labels, &m1, &s1));
        assert!(one.is_some());
        assert_eq!(one, memo_key(&labels, "t", t, &data(&labels, &m2, &s2)));
        let other = json!({"name": "p-1", "labels": {"app": "b"}});
        assert_ne!(one, memo_key(&labels, "t", t, &data(&labels, &other, &s1)));
        let other_spec = json!({"containers": [{"name": "d"}], "nodeName": "n-1"});
        assert_eq!(
            one,
            memo_key(&labels, "t", t, &data(&labels, &m1, &other_spec)),
            "a template that reads nothing of the spec is not keyed by it"
        );
        let named = snapshot("metadata:\n  labels:\n    pod: {{ .ObjectMeta.Name }}");
        let t = &named.config.templates["t"];
        assert_ne!(
            memo_key(&named, "t", t, &data(&named, &m1, &s1)),
            memo_key(&named, "t", t, &data(&named, &m2, &s1))
        );
        let nodes = snapshot("spec:\n  nodeName: {{ .Spec.NodeName }}");
        let t = &nodes.config.templates["t"];
        assert_ne!(
            memo_key(&nodes, "t", t, &data(&nodes, &m1, &s1)),
            memo_key(&nodes, "t", t, &data(&nodes, &m1, &s2))
        );
        for _ in 0..3 {
            for (m, s) in [(&m1, &s1), (&m2, &s2)] {
                let (text, _) = render_patch(
                    &labels,
                    "t",
                    &labels.config.templates["t"],
                    &data(&labels, m, s),
                )
                .expect("render");
                assert_eq!(text, "metadata:\n  labels:\n    app: a\n");
            }
        }
        assert_eq!(labels.render_memo.len(), 1);
    }

    #[test]
    fn nondeterministic_templates_and_huge_pods_are_not_remembered() {
        let s = snapshot("metadata:\n  labels:\n    id: {{ uuidv4 | quote }}");
        assert!(!s.config.templates["t"].is_deterministic());
        let spec = json!({});
        let meta = json!({});
        let t = &s.config.templates["t"];
        let key = memo_key(&s, "t", t, &data(&s, &meta, &spec));
        assert!(key.is_some());
        let huge = json!({"labels": {"x": "y".repeat(MAX_KEY)}});
        let reads = snapshot("metadata:\n  labels: {{ toJson .ObjectMeta.Labels }}");
        let rt = &reads.config.templates["t"];
        assert!(memo_key(&reads, "t", rt, &data(&reads, &huge, &spec)).is_none());
        assert!(
            memo_key(&s, "t", t, &data(&s, &huge, &spec)).is_some(),
            "labels the template does not read are not in its key"
        );
        let other_values = json!({});
        let mut d = data(&s, &meta, &spec);
        d.values = &other_values;
        assert!(
            memo_key(&s, "t", t, &d).is_none(),
            "values not the snapshot's"
        );
    }
}
