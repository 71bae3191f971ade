//! The status annotation and the configured injected annotations.

use serde_json::Value;

use super::{PostProcess, STATUS_ANNOTATION};
use crate::go::json as gojson;
use crate::json::lookup as jsonmap;
use crate::kube::names::{NETWORK_ENV, NETWORK_LABEL};
use crate::kube::pod::{container_name, existing_annotations_mut};

/// `sidecar.istio.io/status` computed from the template pod.
pub fn injection_status(template_pod: &Value, revision: &str) -> String {
    let mut out = String::with_capacity(160);
    out.push('{');
    for list in [
        "initContainers",
        "containers",
        "volumes",
        "imagePullSecrets",
    ] {
        gojson::write_str(&mut out, list);
        out.push(':');
        let items = jsonmap::path(template_pod, &["spec", list])
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        match items {
            None => out.push_str("null"),
            Some(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    gojson::write_str(&mut out, container_name(x));
                }
                out.push(']');
            }
        }
        out.push(',');
    }
    let revision = crate::decide::selection::revision_name(revision);
    out.push_str("\"revision\":");
    gojson::write_str(&mut out, revision);
    out.push('}');
    out
}

/// Network label, status annotation, injected annotations.
pub(super) fn apply_metadata(pod: &mut Value, p: &PostProcess<'_>) {
    if let Some(network) = p.proxy_envs.get(NETWORK_ENV) {
        if let Some(labels) =
            jsonmap::path_mut(pod, &["metadata", "labels"]).and_then(Value::as_object_mut)
        {
            labels.insert(NETWORK_LABEL.into(), Value::String(network.clone()));
        }
    }
    let status = injection_status(p.template_pod, p.revision);
    if let Some(ann) = existing_annotations_mut(pod) {
        ann.insert(STATUS_ANNOTATION.into(), Value::String(status));
        for (k, v) in p.injected_annotations {
            ann.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::finish::tests::*;

    #[test]
    fn metadata_status_revision_and_injected_annotations() {
        let mut inputs = Inputs::new();
        inputs.revision = "canary".into();
        inputs.template = json!({"spec": {"containers": [{"name": "istio-proxy"}],
            "initContainers": [{"name": "istio-init"}], "imagePullSecrets": [{"name": "s"}]}});
        inputs.injected.insert("a/b".into(), "c".into());
        let mut pod = json!({"spec": {"containers": [{"name": "app"}, {"name": "istio-proxy"}]}});
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(
            pod["metadata"]["annotations"][STATUS_ANNOTATION],
            r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":null,"imagePullSecrets":["s"],"revision":"canary"}"#
        );
        assert_eq!(pod["metadata"]["annotations"]["a/b"], "c");
        assert_eq!(pod["metadata"]["labels"], json!({}));
        // injected annotations may even overwrite the status annotation
        inputs.injected.insert(STATUS_ANNOTATION.into(), "x".into());
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(pod["metadata"]["annotations"][STATUS_ANNOTATION], "x");
    }

    #[test]
    fn metadata_maps_must_be_objects() {
        let mut pod = json!({"metadata": {"annotations": "x"}, "spec": {}});
        let err = Inputs::new().run(&mut pod).expect_err("bad annotations");
        assert!(err.to_string().contains("metadata.annotations"));
        let mut pod = json!([]);
        assert!(Inputs::new().run(&mut pod).is_err());
        let mut pod = json!({"metadata": {"annotations": null, "labels": null}});
        Inputs::new().run(&mut pod).expect("nulls are replaced");
        assert_eq!(pod["spec"]["containers"], json!([]));
    }
}
