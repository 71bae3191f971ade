//! Per-struct lookup tables over [`crate::schema::k8s`], built once: fields flattened through
//! inline structs in Go declaration order, indexed by JSON name (exact and ASCII case-folded,
//! as `encoding/json` matches keys), plus the Go type names used in error messages.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::schema::{self, K8sField};

/// Structs with at most this many fields are searched linearly (faster than hashing).
const LINEAR_MAX: usize = 8;

/// A Kubernetes struct with its JSON-visible fields flattened.
#[derive(Debug)]
pub struct StructIndex {
    /// Canonical name (`corev1.Container`).
    pub name: &'static str,
    /// Go type name (`Container`), used as `Struct` in Go's unmarshal errors.
    pub go_name: &'static str,
    /// JSON-visible fields in Go marshal order (inline struct fields at the embedding position).
    pub fields: Vec<&'static K8sField>,
    /// Indices of fields Go emits even when unset (structs, non-omitempty fields).
    pub emitted: Vec<usize>,
    by_json: HashMap<&'static str, usize>,
    by_folded: HashMap<String, usize>,
}

impl StructIndex {
    /// Field index for a JSON key: exact match first, then ASCII case-insensitive (Go rules).
    pub fn lookup(&self, key: &str) -> Option<usize> {
        if self.fields.len() <= LINEAR_MAX {
            if let Some(i) = self
                .fields
                .iter()
                .position(|f| f.json.as_deref() == Some(key))
            {
                return Some(i);
            }
        } else if let Some(&i) = self.by_json.get(key) {
            return Some(i);
        }
        if self.by_folded.is_empty() {
            return None;
        }
        self.by_folded.get(&key.to_ascii_lowercase()).copied()
    }

    /// Field for an exact JSON key (strategic-merge lookups are exact).
    pub fn exact(&self, key: &str) -> Option<&'static K8sField> {
        self.by_json.get(key).map(|&i| self.fields[i])
    }

    /// JSON name of field `i`.
    pub fn json_name(&self, i: usize) -> &'static str {
        self.fields[i].json.as_deref().unwrap_or("")
    }
}

/// Index of the struct named `name` (`corev1.Pod`), if the schema has it.
pub fn get(name: &str) -> Option<&'static StructIndex> {
    static ALL: OnceLock<HashMap<&'static str, StructIndex>> = OnceLock::new();
    ALL.get_or_init(build_all).get(name)
}

fn build_all() -> HashMap<&'static str, StructIndex> {
    let types = schema::k8s();
    types
        .structs
        .iter()
        .map(|(name, st)| {
            let mut fields = Vec::new();
            flatten(name, &mut fields, 0);
            let mut by_json = HashMap::with_capacity(fields.len());
            let mut by_folded = HashMap::with_capacity(fields.len());
            for (i, f) in fields.iter().enumerate() {
                if let Some(j) = f.json.as_deref() {
                    by_json.entry(j).or_insert(i);
                    by_folded.entry(j.to_ascii_lowercase()).or_insert(i);
                }
            }
            let emitted = (0..fields.len())
                .filter(|&i| emitted_when_unset(fields[i]))
                .collect();
            let idx = StructIndex {
                name: name.as_str(),
                go_name: st.go_name.as_str(),
                fields,
                emitted,
                by_json,
                by_folded,
            };
            (name.as_str(), idx)
        })
        .collect()
}

/// Whether Go's encoder writes this field when it holds its zero value.
fn emitted_when_unset(f: &K8sField) -> bool {
    match f.kind.as_str() {
        "struct" | "intorstring" | "quantity" => true,
        "time" => !f.omitzero,
        _ => !f.omitempty,
    }
}

/// Append the JSON-visible fields of struct `name`, splicing inline structs in place.
fn flatten(name: &str, out: &mut Vec<&'static K8sField>, depth: usize) {
    let Some(st) = schema::k8s().get(name) else {
        return;
    };
    for f in &st.fields {
        match f.json.as_deref() {
            None => {}
            Some("") if f.inline && depth < 8 => {
                if let Some(r) = f.type_ref.as_deref().or(f.elem.as_deref()) {
                    flatten(r, out, depth + 1);
                }
            }
            Some(_) => out.push(f),
        }
    }
}

/// Plain `int` fields that are `int64` in Go (all others are `int32`).
const INT64_FIELDS: &[(&str, &str)] = &[
    ("DaemonSetStatus", "observedGeneration"),
    ("DeploymentStatus", "observedGeneration"),
    ("ReplicaSetStatus", "observedGeneration"),
    ("StatefulSetStatus", "observedGeneration"),
    ("LinuxContainerUser", "uid"),
    ("LinuxContainerUser", "gid"),
    ("PodCondition", "observedGeneration"),
    ("PodStatus", "observedGeneration"),
    ("ReplicationControllerStatus", "observedGeneration"),
    ("SleepAction", "seconds"),
    ("ObjectMeta", "generation"),
];

/// Go `reflect.Type.String()` of a canonical type name (`corev1.Container` → `v1.Container`).
pub fn short_type(name: &str) -> String {
    match name.split_once('.') {
        Some((pkg, rest)) if pkg.ends_with("v1") => format!("v1.{rest}"),
        _ => name.to_string(),
    }
}

/// Go integer type of a scalar `int` slot owned by struct `owner_go` at JSON name `json`.
pub fn int_type(owner_go: &str, f: &K8sField) -> &'static str {
    if f.kind == "pointer-to-scalar" || f.kind == "slice" {
        return match f.elem.as_deref() {
            Some("int64") => "int64",
            _ => "int32",
        };
    }
    let json = f.json.as_deref().unwrap_or("");
    if INT64_FIELDS
        .iter()
        .any(|&(o, j)| o == owner_go && j == json)
    {
        "int64"
    } else {
        "int32"
    }
}

/// Go type string of a whole field (`[]v1.Container`, `map[string]string`, `v1.ResourceList`).
pub fn field_type(owner_go: &str, f: &K8sField) -> String {
    let elem = || f.elem.as_deref().map(short_type).unwrap_or_default();
    match f.kind.as_str() {
        "string" => "string".into(),
        "bool" => "bool".into(),
        "int" | "uint" => int_type(owner_go, f).into(),
        "named-string" | "struct" => f.type_ref.as_deref().map(short_type).unwrap_or_default(),
        "pointer-to-struct" => f
            .type_ref
            .as_deref()
            .or(f.elem.as_deref())
            .map(short_type)
            .unwrap_or_default(),
        "pointer-to-scalar" => elem(),
        "slice" => format!("[]{}", elem()),
        "map" => match f.named_type.as_deref() {
            Some(n) => short_type(n),
            None => format!(
                "map[{}]{}",
                f.key
                    .as_deref()
                    .map(short_type)
                    .unwrap_or_else(|| "string".into()),
                elem()
            ),
        },
        "intorstring" => "intstr.IntOrString".into(),
        "quantity" => "resource.Quantity".into(),
        "time" => "v1.Time".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_flattens_inline_handler_in_go_order() {
        let p = get("corev1.Probe").unwrap();
        let names: Vec<_> = (0..p.fields.len()).map(|i| p.json_name(i)).collect();
        assert_eq!(
            &names[..5],
            [
                "exec",
                "httpGet",
                "tcpSocket",
                "grpc",
                "initialDelaySeconds"
            ]
        );
        assert_eq!(p.lookup("HTTPGET"), Some(1));
        assert!(p.lookup("nope").is_none());
    }

    #[test]
    fn go_type_names() {
        let c = get("corev1.Container").unwrap();
        let f = |j: &str| c.exact(j).unwrap();
        assert_eq!(field_type("Container", f("ports")), "[]v1.ContainerPort");
        assert_eq!(
            field_type("Container", f("imagePullPolicy")),
            "v1.PullPolicy"
        );
        let sc = get("corev1.SecurityContext").unwrap();
        assert_eq!(
            field_type("SecurityContext", sc.exact("runAsUser").unwrap()),
            "int64"
        );
        let rr = get("corev1.ResourceRequirements").unwrap();
        assert_eq!(
            field_type("ResourceRequirements", rr.exact("limits").unwrap()),
            "v1.ResourceList"
        );
        let om = get("metav1.ObjectMeta").unwrap();
        assert_eq!(
            field_type("ObjectMeta", om.exact("generation").unwrap()),
            "int64"
        );
        assert_eq!(
            field_type("ObjectMeta", om.exact("labels").unwrap()),
            "map[string]string"
        );
    }
}
