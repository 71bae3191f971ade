//! A render read back as a patch, remembered in the snapshot's memo
//! ([`crate::config::render_memo`]) by everything the render can read: the template's name and
//! every field of [`TemplateData`] (of the pod's metadata and spec, the fields the template can
//! read ([`Template::read_json_fields`]) as the trees they are, hashed and compared in place, so
//! pods that differ only in names, uids or nodes share a render; the mesh and proxy config as
//! JSON unless they are the snapshot's own; `protoToJSON`'s encoder is always
//! [`crate::mesh::proto_to_json`], set by [`super::render_templates`]).
//! `.Values` and the environment map are the snapshot's, which the memo belongs to. Only
//! templates whose renders depend on their data alone are remembered
//! ([`Template::is_deterministic`]); a key larger than [`MAX_KEY`] (a very large pod) is not
//! hashed further and the template renders as usual.

use std::io::Write;
use std::sync::Arc;

use super::{rendered_patch, RenderError};
use crate::config::render_memo::{Key, Rendered, MAX_KEY};
use crate::config::Snapshot;
use crate::template::{Template, TemplateData};

/// Render `tmpl` (called `name`) with `data` and read the text as a pod-shaped patch
/// ([`rendered_patch`]), answering from the snapshot's memo when the same data was rendered
/// before. Returns the text and the patch, shared with the memo when it holds them (a caller
/// that needs them owned takes them with [`Arc::try_unwrap`] when they are not); errors are
/// those of the render and the reading.
pub fn render_patch(
    snapshot: &Snapshot,
    name: &str,
    tmpl: &Template,
    data: &TemplateData<'_>,
) -> Result<Arc<Rendered>, RenderError> {
    let render = || -> Result<Rendered, RenderError> {
        let text = tmpl.render(data)?;
        let tree = rendered_patch(name, &text)?;
        Ok(Rendered { text, tree })
    };
    let Some(head) = tmpl
        .is_deterministic()
        .then(|| memo_head(snapshot, name, data))
        .flatten()
    else {
        return render().map(Arc::new);
    };
    let key = key(&head, tmpl, data);
    let Some(hash) = key.hash() else {
        return render().map(Arc::new);
    };
    let memo = &snapshot.render_memo;
    if let Some(hit) = memo.get(hash, &key) {
        return Ok(hit);
    }
    let rendered = Arc::new(render()?);
    if memo.admit(hash) {
        memo.insert(hash, &key, rendered.clone());
    }
    Ok(rendered)
}

/// The key of a render of `tmpl` with `data`, `head` from [`memo_head`]: of the pod's metadata
/// and spec, only the fields the template can read.
fn key<'a>(head: &'a [u8], tmpl: &'a Template, data: &TemplateData<'a>) -> Key<'a> {
    let (meta_fields, spec_fields) = tmpl.read_json_fields();
    Key {
        head,
        trees: [data.object_meta, data.spec],
        fields: [meta_fields, spec_fields],
    }
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

/// The bytes of a render's key besides the pod's trees: `None` when they would exceed
/// [`MAX_KEY`] or when the data's `.Values` or environment are not the snapshot's. Strings are
/// length-prefixed and JSON values end with a NUL byte (which JSON text never holds), so
/// distinct data give distinct keys.
fn memo_head(snapshot: &Snapshot, name: &str, d: &TemplateData<'_>) -> Option<Vec<u8>> {
    // The environment is the snapshot's, or that with the native-sidecar variable set from
    // `native_sidecars` (which the key holds).
    if !std::ptr::eq(d.values, &snapshot.values)
        || !(std::ptr::eq(d.env, &snapshot.template_env)
            || super::differs_only_by_native(d.env, &snapshot.template_env))
    {
        return None;
    }
    let mut k = Capped(Vec::with_capacity(256));
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
    use serde_json::{json, Value};

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
            proto_json: crate::mesh::proto_to_json,
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
            let r = render_patch(&s, "t", t, &data(&s, &a, &spec)).expect("render");
            assert_eq!(r.text, "metadata:\n  labels:\n    app: a\n");
            assert_eq!(r.tree, json!({"metadata": {"labels": {"app": "a"}}}));
        }
        assert_eq!(s.render_memo.len(), 1, "admitted on the second render");
        let r = render_patch(&s, "t", t, &data(&s, &b, &spec)).expect("render");
        assert_eq!(r.text, "metadata:\n  labels:\n    app: b\n");
        let again = render_patch(&s, "t", t, &data(&s, &a, &spec)).expect("render");
        let hit = render_patch(&s, "t", t, &data(&s, &a, &spec)).expect("render");
        assert!(
            Arc::ptr_eq(&again, &hit),
            "a hit shares the remembered render"
        );
    }

    /// Pods that differ only in what the template cannot read (a name, a node) share one
    /// render; a template that reads the name or the node is keyed by it.
    #[test]
    fn only_the_fields_a_template_reads_key_its_renders() {
        let spec = |node: &str| json!({"containers": [{"name": "c"}], "nodeName": node});
        let meta = |name: &str| json!({"name": name, "uid": name, "labels": {"app": "a"}});
        let hash = |s: &Snapshot, m: &Value, sp: &Value| {
            let t = &s.config.templates["t"];
            let d = data(s, m, sp);
            let head = memo_head(s, "t", &d).expect("head");
            key(&head, t, &d).hash().expect("hash")
        };
        let labels = snapshot("metadata:\n  labels:\n    app: {{ .ObjectMeta.Labels.app }}");
        let (m1, m2, s1, s2) = (meta("p-1"), meta("p-2"), spec("n-1"), spec("n-2"));
        assert_eq!(hash(&labels, &m1, &s1), hash(&labels, &m2, &s2));
        let other = json!({"name": "p-1", "labels": {"app": "b"}});
        assert_ne!(hash(&labels, &m1, &s1), hash(&labels, &other, &s1));
        let named = snapshot("metadata:\n  labels:\n    pod: {{ .ObjectMeta.Name }}");
        assert_ne!(hash(&named, &m1, &s1), hash(&named, &m2, &s1));
        let nodes = snapshot("spec:\n  nodeName: {{ .Spec.NodeName }}");
        assert_ne!(hash(&nodes, &m1, &s1), hash(&nodes, &m1, &s2));
        let t = &labels.config.templates["t"];
        let mut shared = Vec::new();
        for _ in 0..3 {
            for (m, s) in [(&m1, &s1), (&m2, &s2)] {
                let r = render_patch(&labels, "t", t, &data(&labels, m, s)).expect("render");
                assert_eq!(r.text, "metadata:\n  labels:\n    app: a\n");
                shared.push(r);
            }
        }
        assert_eq!(labels.render_memo.len(), 1);
        assert!(
            Arc::ptr_eq(&shared[4], &shared[5]),
            "pods differing only in name and node share the render"
        );
        // The other pod's own name: a template reading it renders each pod's.
        let t = &named.config.templates["t"];
        for _ in 0..3 {
            for (m, want) in [(&m1, "p-1"), (&m2, "p-2")] {
                let r = render_patch(&named, "t", t, &data(&named, m, &s1)).expect("render");
                assert_eq!(r.text, format!("metadata:\n  labels:\n    pod: {want}\n"));
            }
        }
    }

    #[test]
    fn nondeterministic_templates_and_huge_pods_are_not_remembered() {
        let s = snapshot("metadata:\n  labels:\n    id: {{ uuidv4 | quote }}");
        assert!(!s.config.templates["t"].is_deterministic());
        let spec = json!({});
        let meta = json!({});
        assert!(memo_head(&s, "t", &data(&s, &meta, &spec)).is_some());
        let other_values = json!({});
        let mut d = data(&s, &meta, &spec);
        d.values = &other_values;
        assert!(
            memo_head(&s, "t", &d).is_none(),
            "values not the snapshot's"
        );
        // A pod too large to key is rendered every time, never remembered.
        let s = snapshot("metadata:\n  labels:\n    app: {{ .ObjectMeta.Labels.app }}");
        let t = &s.config.templates["t"];
        let huge = json!({"labels": {"app": "a", "x": "y".repeat(MAX_KEY)}});
        for _ in 0..3 {
            render_patch(&s, "t", t, &data(&s, &huge, &spec)).expect("render");
        }
        assert!(s.render_memo.is_empty());
    }
}
