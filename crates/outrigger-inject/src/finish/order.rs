//! Container order: the proxy first when the application must wait for it, init
//! containers in the order Istio leaves them.

use serde_json::{Map, Value};

use super::tree::json_bool;
use super::{PostProcess, PROXY_CONTAINER};
use crate::json::lookup as jsonmap;
use crate::json::Scan;
use crate::kube::pod::container_name;

/// Where [`move_container`] puts the element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Front,
    Back,
}

/// Istio's "move" of a container to one end of its list: all elements not named `name` keep their order; if any element was
/// named `name`, the last such one goes to `end` (duplicates collapse) [quirk].
fn move_container(list: Vec<Value>, name: &str, end: End) -> Vec<Value> {
    let mut picked = None;
    let mut rest = Vec::with_capacity(list.len());
    for c in list {
        if container_name(&c) == name {
            picked = Some(c);
        } else {
            rest.push(c);
        }
    }
    match (picked, end) {
        (Some(c), End::Front) => {
            rest.insert(0, c);
            rest
        }
        (Some(c), End::Back) => {
            rest.push(c);
            rest
        }
        (None, _) => rest,
    }
}

/// Hold the application until the proxy starts? Yes when the mesh config (with the pod's
/// `proxy.istio.io/config` applied) or the values say so.
fn hold_application(p: &PostProcess<'_>) -> bool {
    let mesh = p.proxy_config_annotation_mesh.unwrap_or(p.mesh);
    let from_mesh = jsonmap::path(mesh, &["defaultConfig", "holdApplicationUntilProxyStarts"])
        .and_then(json_bool)
        .unwrap_or(false);
    let from_values = jsonmap::path(
        p.values,
        &["global", "proxy", "holdApplicationUntilProxyStarts"],
    )
    .and_then(json_bool)
    .unwrap_or(false);
    from_mesh || from_values
}

fn take_list(spec: &mut Map<String, Value>, key: &str) -> Vec<Value> {
    match spec.remove(key) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

/// The proxy first (hold) or last in containers; init containers ordered around it.
pub(super) fn reorder_containers(pod: &mut Value, p: &PostProcess<'_>) {
    let hold = hold_application(p);
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let spec = root
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if spec.is_null() {
        *spec = Value::Object(Map::new());
    }
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let containers = take_list(spec, "containers");
    let end = if hold { End::Front } else { End::Back };
    spec.insert(
        "containers".into(),
        Value::Array(move_container(containers, PROXY_CONTAINER, end)),
    );
    let had_init = spec.scan("initContainers").is_some_and(Value::is_array);
    let mut init = take_list(spec, "initContainers");
    if init.iter().any(|c| container_name(c) == PROXY_CONTAINER) {
        for name in [
            "enable-core-dump",
            PROXY_CONTAINER,
            "istio-validation",
            "istio-init",
        ] {
            init = move_container(init, name, End::Front);
        }
    } else {
        init = move_container(init, "istio-validation", End::Front);
        init = move_container(init, "istio-init", End::Back);
        init = move_container(init, "enable-core-dump", End::Back);
    }
    if had_init || !init.is_empty() {
        spec.insert("initContainers".into(), Value::Array(init));
    }
}

#[cfg(test)]
mod tests {
    use crate::kube::pod::find_sidecar;
    use serde_json::json;

    use super::*;
    use crate::finish::tests::corpus::{case_pairs, reinjected};
    use crate::finish::tests::*;

    #[test]
    fn hold_application_moves_proxy_first() {
        let containers = json!([{"name": "a"}, {"name": "istio-proxy"}, {"name": "b"}]);
        let run = |inputs: &Inputs| {
            let mut pod = json!({"spec": {"containers": containers.clone()}});
            inputs.run(&mut pod).expect("post-process");
            names(&pod, "containers")
        };
        let mut inputs = Inputs::new();
        assert_eq!(run(&inputs), ["a", "b", "istio-proxy"]);
        inputs.values["global"]["proxy"]["holdApplicationUntilProxyStarts"] = json!(true);
        assert_eq!(run(&inputs), ["istio-proxy", "a", "b"]);
        let mut inputs = Inputs::new();
        inputs.mesh["defaultConfig"]["holdApplicationUntilProxyStarts"] = json!(true);
        assert_eq!(run(&inputs), ["istio-proxy", "a", "b"]);
        // the proxy.istio.io/config mesh replaces the mesh for this decision
        inputs.annotation_mesh =
            Some(json!({"defaultConfig": {"holdApplicationUntilProxyStarts": false}}));
        assert_eq!(run(&inputs), ["a", "b", "istio-proxy"]);
        let mut inputs = Inputs::new();
        inputs.annotation_mesh =
            Some(json!({"defaultConfig": {"holdApplicationUntilProxyStarts": true}}));
        assert_eq!(run(&inputs), ["istio-proxy", "a", "b"]);
    }

    #[test]
    fn init_container_order() {
        let run = |init: Value| {
            let mut pod =
                json!({"spec": {"containers": [{"name": "app"}], "initContainers": init}});
            Inputs::new().run(&mut pod).expect("post-process");
            names(&pod, "initContainers")
        };
        assert_eq!(
            run(
                json!([{"name": "u1"}, {"name": "enable-core-dump"}, {"name": "istio-proxy"},
                       {"name": "u2"}, {"name": "istio-init"}])
            ),
            ["istio-init", "istio-proxy", "enable-core-dump", "u1", "u2"]
        );
        assert_eq!(
            run(json!([{"name": "u1"}, {"name": "istio-proxy"}, {"name": "istio-validation"}])),
            ["istio-validation", "istio-proxy", "u1"]
        );
        assert_eq!(
            run(
                json!([{"name": "istio-init"}, {"name": "enable-core-dump"}, {"name": "u1"},
                       {"name": "istio-validation"}, {"name": "u2"}])
            ),
            [
                "istio-validation",
                "u1",
                "u2",
                "istio-init",
                "enable-core-dump"
            ]
        );
    }

    #[test]
    fn move_collapses_duplicates_keeping_the_last() {
        let list = vec![
            json!({"name": "x", "n": 1}),
            json!({"name": "a"}),
            json!({"name": "x", "n": 2}),
        ];
        let out = move_container(list.clone(), "x", End::Front);
        assert_eq!(
            out,
            vec![json!({"name": "x", "n": 2}), json!({"name": "a"})]
        );
        let out = move_container(list, "x", End::Back);
        assert_eq!(
            out,
            vec![json!({"name": "a"}), json!({"name": "x", "n": 2})]
        );
        assert_eq!(
            move_container(vec![json!({"name": "a"})], "x", End::Back),
            vec![json!({"name": "a"})]
        );
    }

    // Corpus sweep: inputs and goldens read with yaml-rust2.

    #[cfg_attr(
        not(corpus_present),
        ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
    )]
    #[test]
    fn container_order_of_goldens_is_stable() {
        let Some(pairs) = case_pairs() else {
            return;
        };
        let mut checked = 0;
        for (name, _, golden) in pairs {
            if find_sidecar(&golden).is_none() || !reinjected(&golden) {
                continue;
            }
            let hold =
                names(&golden, "containers").first().map(String::as_str) == Some(PROXY_CONTAINER);
            let mut inputs = Inputs::new();
            inputs.values["global"]["proxy"]["holdApplicationUntilProxyStarts"] = json!(hold);
            let p = PostProcess {
                mesh: &inputs.mesh,
                values: &inputs.values,
                proxy_envs: &inputs.envs,
                revision: "",
                injected_annotations: &inputs.injected,
                template_pod: &inputs.template,
                original_pod: &inputs.original,
                proxy_config_annotation_mesh: None,
            };
            let mut pod = golden.clone();
            reorder_containers(&mut pod, &p);
            assert_eq!(
                names(&pod, "containers"),
                names(&golden, "containers"),
                "{name}"
            );
            assert_eq!(
                names(&pod, "initContainers"),
                names(&golden, "initContainers"),
                "{name}"
            );
            checked += 1;
        }
        eprintln!("container order checked on {checked} corpus pods");
        assert!(checked > 50, "only {checked} pods checked");
    }
}
