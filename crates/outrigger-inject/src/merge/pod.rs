//! Merging rendered templates onto the pod: the pod-typed merge (strategic merge, then the typed
//! round-trip), the template-only pod's names, and the native-sidecar move of a user proxy.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::json::Scan;
use crate::kube::names::{NATIVE_SIDECAR_ANNOTATION, POD_TYPE, PROXY_CONTAINER};
use crate::kube::pod::{annotation, container_name, containers_mut, find_container};
use crate::kube::typed;
use crate::merge::strategic::{self, MergeError};
use crate::render::{rendered_patch, Rendered};

/// The merge stage's per-template loop (Istio's `RunTemplate` after each render): each rendered
/// template is merged onto the pod, and its names onto the template-only pod.
///
/// The merge is onto the unstripped pod, as Istio does: on re-injection the previous sidecar
/// keeps what post-processing merges back (e.g. `ISTIO_KUBE_APP_PROBERS` of already rewritten
/// probes).
///
/// The merged pod is normalised beside the pod as received ([`typed::normalize_beside`]): what
/// the templates left of the pod's own fields (its containers, mostly) is compared, not walked
/// again.
#[derive(Debug)]
pub struct TemplateMerge<'p> {
    /// The pod as received, in normal form.
    original: &'p Value,
    merged: Value,
    template_pod: Value,
    native_sidecars: bool,
    /// The texts merged so far (name, text), to reproduce Istio's errors on the error path.
    rendered: Vec<(String, Text)>,
}

impl<'p> TemplateMerge<'p> {
    /// Start from `pod` (the pod as received, normalised: [`crate::inject::normalize_pod`]) and
    /// the global native-sidecar decision.
    pub fn new(pod: &'p Value, native_sidecars: bool) -> TemplateMerge<'p> {
        TemplateMerge {
            original: pod,
            merged: crate::json::compact::clone_fast(pod),
            template_pod: json!({}),
            native_sidecars,
            rendered: Vec::new(),
        }
    }

    /// Merge one rendered template.
    pub fn add(&mut self, r: Rendered) -> Result<(), MergeError> {
        // The template-only pod is read for its container, volume and pull-secret names only,
        // which typed normalisation leaves alone: it is merged from the names alone (the whole
        // overlay when it holds patch directives) and not normalised. Istio normalises it; its
        // errors are reproduced below when the real merge fails.
        match names_overlay(r.overlay()) {
            // Merged onto the empty pod (the first template), the names' overlay is what the
            // merge keeps of it: its `null`s discarded, nothing else changed, no error possible.
            Some(mut names) if self.template_pod.as_object().is_some_and(Map::is_empty) => {
                strategic::discard_nulls(&mut names);
                self.template_pod = names;
            }
            names => strategic::strategic_merge(
                POD_TYPE,
                &mut self.template_pod,
                names.as_ref().unwrap_or(r.overlay()),
            )
            .map_err(|e| e.context("failed applying injection overlay"))?,
        }
        move_native_proxy(&mut self.merged, &self.template_pod, self.native_sidecars);
        // A render of its own moves into the pod; one the memo shares is merged from where it
        // is (what the merge keeps is copied, nothing else).
        let merged = match Arc::try_unwrap(r.out) {
            Ok(own) => {
                self.rendered.push((r.name, Text::Own(own.text)));
                strategic::strategic_merge_owned(POD_TYPE, &mut self.merged, own.tree)
            }
            Err(shared) => {
                let result = strategic::strategic_merge(POD_TYPE, &mut self.merged, &shared.tree);
                self.rendered.push((r.name, Text::Shared(shared)));
                result
            }
        };
        let result = merged.and_then(|()| {
            typed::normalize_beside(POD_TYPE, &mut self.merged, self.original)
                .map_err(|e| MergeError::from(e).context("unmarshal patched pod"))
        });
        if let Err(e) = result {
            typed_template_pod(&self.rendered)
                .map_err(|e| e.context("failed applying injection overlay"))?;
            return Err(e.context(
                "failed parsing generated injected YAML (check Istio sidecar injector configuration)",
            ));
        }
        Ok(())
    }

    /// The merged pod and the template-only pod.
    pub fn into_parts(self) -> (Value, Value) {
        (self.merged, self.template_pod)
    }
}

/// A rendered text kept for the error path: the render's own, or shared with the memo.
#[derive(Debug)]
enum Text {
    Own(String),
    Shared(Arc<crate::config::render_memo::Rendered>),
}

impl Text {
    fn as_str(&self) -> &str {
        match self {
            Text::Own(t) => t,
            Text::Shared(r) => &r.text,
        }
    }
}

/// Merge `patch` onto the pod `target` and normalise the result as Go's typed round-trip
/// would (errors of the round-trip read `unmarshal patched pod: ...`).
pub fn merge_pod(target: &mut Value, patch: &Value) -> Result<(), MergeError> {
    strategic::strategic_merge(POD_TYPE, target, patch)?;
    typed::normalize(POD_TYPE, target)
        .map_err(|e| MergeError::from(e).context("unmarshal patched pod"))
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
pub fn names_overlay(overlay: &Value) -> Option<Value> {
    let directive = |m: &Map<String, Value>| m.keys().any(|k| k.starts_with('$'));
    let top = overlay.as_object()?;
    if directive(top) {
        return None;
    }
    let mut spec_out = Map::new();
    match top.scan("spec") {
        None => {}
        Some(Value::Object(spec)) => {
            if directive(spec) {
                return None;
            }
            for list in NAMED_LISTS {
                let reduced = match spec.scan(list) {
                    None => continue,
                    Some(Value::Null) => Value::Null,
                    Some(Value::Array(items)) => {
                        let mut out = Vec::with_capacity(items.len());
                        for item in items {
                            let m = item.as_object().filter(|m| !directive(m))?;
                            // A nameless element fails the merge with its content in the
                            // message: merged whole, the message stays Istio's.
                            let mut e = Map::new();
                            e.insert("name".into(), m.scan("name")?.clone());
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
fn typed_template_pod(rendered: &[(String, Text)]) -> Result<(), MergeError> {
    let mut pod = json!({});
    for (name, text) in rendered {
        let overlay = rendered_patch(name, text.as_str())?;
        merge_pod(&mut pod, &overlay)?;
    }
    Ok(())
}

/// Native-sidecar move: a user `istio-proxy` written under `containers`
/// follows the template's proxy into `initContainers`.
pub fn move_native_proxy(merged: &mut Value, template_pod: &Value, global: bool) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::pod::containers;

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

    /// The first template's names, taken without merging, are those the merge onto the empty
    /// pod gives (nulls discarded, order kept).
    #[test]
    fn names_of_the_first_template_are_the_merge_onto_the_empty_pod() {
        for o in [
            json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}, {"name": "b"}],
                "volumes": null, "initContainers": [{"name": null}], "imagePullSecrets": []}}),
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {
                "volumes": [{"name": "v1", "emptyDir": {}}], "hostname": "h"}}),
            json!({"spec": {}}),
            json!({}),
        ] {
            let names = names_overlay(&o).expect("plain overlay is reduced");
            let mut merged = json!({});
            strategic::strategic_merge(POD_TYPE, &mut merged, &names).unwrap();
            let mut taken = names;
            strategic::discard_nulls(&mut taken);
            assert_eq!(taken.to_string(), merged.to_string(), "{o}");
        }
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
}
