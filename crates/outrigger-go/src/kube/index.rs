//! Per-struct lookup tables over [`crate::kube::schema::k8s`], built once: fields flattened through
//! inline structs in Go declaration order, each resolved to a compact [`FieldInfo`] (enum kinds,
//! referenced structs as table indices, patch metadata), indexed by JSON name (exact, then ASCII
//! case-folded, as `encoding/json` matches keys), plus the Go type names used in error messages.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::kube::schema::{self, K8sField, Kind, PatchStrategy};

/// Strategic-merge patch strategy of a field, `retainKeys` set aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// No strategy, or one the merge does not act on.
    Default,
    /// `merge`: lists merge by key (or as sets of primitives).
    Merge,
    /// `replace`: the patch value replaces the original.
    Replace,
    /// A malformed strategy list; merging this field is an error.
    Invalid,
}

/// One JSON-visible field of a struct, resolved for the hot paths.
#[derive(Debug)]
pub struct FieldInfo {
    /// JSON name.
    pub json: &'static str,
    /// Kind of the field.
    pub kind: Kind,
    /// Kind of the element (slices, maps, pointers to scalars); [`Kind::Raw`] when absent.
    pub elem_kind: Kind,
    /// `encoding/json` omitempty.
    pub omitempty: bool,
    /// `encoding/json` omitzero.
    pub omitzero: bool,
    /// Go integer type of integer values of this field (`int32` or `int64`).
    pub int_type: &'static str,
    /// Strategic-merge patch strategy.
    pub strategy: Strategy,
    /// Strategic-merge merge key (empty when none).
    pub merge_key: &'static str,
    /// The schema entry (for error messages).
    pub def: &'static K8sField,
    /// Reached through an inline (embedded) struct, such as `Probe`'s `ProbeHandler`.
    /// sigs.k8s.io/yaml looks such a field up on the embedded struct, so it turns no YAML
    /// number or boolean into a string anywhere below it.
    pub via_inline: bool,
    /// Go names of the embedded structs the field is reached through, outermost first
    /// (`["ProbeHandler"]` for `Probe`'s `httpGet`): Go's `encoding/json` (since Go 1.24) names
    /// them in the field path of a type error (`readinessProbe.ProbeHandler.httpGet.path`).
    pub embedded: Vec<&'static str>,
    /// Table index of the referenced struct: the value (`struct`, `pointer-to-struct`) or the
    /// element (`slice`, `map` of structs).
    target: Option<u32>,
}

impl FieldInfo {
    /// The struct this field's value (or element) is, when the schema has it.
    pub fn target(&self) -> Option<&'static StructIndex> {
        self.target.map(by_id)
    }
}

/// A Kubernetes struct with its JSON-visible fields flattened.
#[derive(Debug)]
pub struct StructIndex {
    /// Canonical name (`corev1.Container`).
    pub name: &'static str,
    /// Go type name (`Container`), used as `Struct` in Go's unmarshal errors.
    pub go_name: &'static str,
    /// JSON-visible fields in Go marshal order (inline struct fields at the embedding position).
    pub fields: Vec<FieldInfo>,
    /// Fields Go emits even when unset (structs, non-omitempty fields): the field index and the
    /// index [`StructIndex::lookup`] gives for its JSON name (they differ only for duplicates).
    pub emitted: Vec<(u16, u16)>,
    /// Field indices grouped by JSON name length: `by_len[from..to]` with `(from, to) =
    /// len_ranges[n]` are the fields with names of `n` bytes, in field order, each with the
    /// [`head`] of its name.
    by_len: ByLen,
    len_ranges: LenRanges,
}

impl StructIndex {
    /// Field index for a JSON key: exact match first, then ASCII case-insensitive (Go rules).
    pub fn lookup(&self, key: &str) -> Option<usize> {
        self.lookup_exactness(key).map(|(i, _)| i)
    }

    /// [`StructIndex::lookup`], also telling whether the key matched exactly (is the JSON name).
    #[inline]
    pub fn lookup_exactness(&self, key: &str) -> Option<(usize, bool)> {
        if let Some(i) = self.exact_index(key) {
            return Some((i, true));
        }
        self.fields
            .iter()
            .position(|f| f.json.eq_ignore_ascii_case(key))
            .map(|i| (i, false))
    }

    /// Field index for an exact JSON key (the first field of that name).
    #[inline]
    fn exact_index(&self, key: &str) -> Option<usize> {
        let len = key.len();
        let &(from, to) = self.len_ranges.get(len)?;
        let h = head(key);
        let (_, i) = self
            .by_len
            .get(usize::from(from)..usize::from(to))?
            .iter()
            .find(|&&(fh, i)| {
                fh == h
                    && (len <= 8
                        || self.fields[usize::from(i)].json.as_bytes()[8..] == key.as_bytes()[8..])
            })?;
        Some(usize::from(*i))
    }

    /// Index of the (first) field whose JSON name is exactly `key`.
    pub fn field_index(&self, key: &str) -> Option<usize> {
        self.exact_index(key)
    }

    /// Field for an exact JSON key (strategic-merge lookups are exact).
    pub fn field(&self, key: &str) -> Option<&FieldInfo> {
        self.exact_index(key).map(|i| &self.fields[i])
    }

    /// Schema entry of the field with exact JSON key `key`.
    pub fn exact(&self, key: &str) -> Option<&'static K8sField> {
        self.field(key).map(|f| f.def)
    }

    /// JSON name of field `i`.
    pub fn json_name(&self, i: usize) -> &'static str {
        self.fields[i].json
    }
}

/// A summary of `s` that, together with its length, identifies strings of at most 8 bytes:
/// the first 8 bytes; or the first and last 4 (overlapping); or the first, middle and last byte.
fn head(s: &str) -> u64 {
    let b = s.as_bytes();
    let word = |at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[at..at + 4]);
        u64::from(u32::from_le_bytes(w))
    };
    match b.len() {
        0 => 0,
        1..=3 => u64::from(b[0]) | u64::from(b[b.len() / 2]) << 8 | u64::from(b[b.len() - 1]) << 16,
        4..=7 => word(0) | word(b.len() - 4) << 32,
        _ => word(0) | word(4) << 32,
    }
}

/// All struct indexes; fields refer to each other by position in `structs`.
struct Table {
    structs: Vec<StructIndex>,
    by_name: FxHashMap<&'static str, u32>,
}

fn table() -> &'static Table {
    static ALL: OnceLock<Table> = OnceLock::new();
    ALL.get_or_init(build_all)
}

/// Struct number `id` of the table.
fn by_id(id: u32) -> &'static StructIndex {
    &table().structs[id as usize]
}

/// Index of the struct named `name` (`corev1.Pod`), if the schema has it.
pub fn get(name: &str) -> Option<&'static StructIndex> {
    let t = table();
    t.by_name.get(name).map(|&i| &t.structs[i as usize])
}

fn build_all() -> Table {
    let types = schema::k8s();
    let mut names: Vec<&'static str> = types.structs.keys().map(String::as_str).collect();
    names.sort_unstable();
    let by_name: FxHashMap<&'static str, u32> = names
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, i as u32))
        .collect();
    let structs = names
        .iter()
        .map(|&name| build_struct(name, &types.structs[name].go_name, &by_name))
        .collect();
    Table { structs, by_name }
}

fn build_struct(
    name: &'static str,
    go_name: &'static str,
    ids: &FxHashMap<&'static str, u32>,
) -> StructIndex {
    let mut defs = Vec::new();
    flatten(name, &mut defs, &mut Vec::new());
    let fields: Vec<FieldInfo> = defs
        .into_iter()
        .map(|(f, embedded)| {
            let mut info = field_info(go_name, f, ids);
            info.via_inline = !embedded.is_empty();
            info.embedded = embedded;
            info
        })
        .collect();
    let (by_len, len_ranges) = length_groups(&fields);
    let mut idx = StructIndex {
        name,
        go_name,
        fields,
        emitted: Vec::new(),
        by_len,
        len_ranges,
    };
    idx.emitted = (0..idx.fields.len())
        .filter(|&i| emitted_when_unset(&idx.fields[i]))
        .map(|i| {
            let canonical = idx.exact_index(idx.fields[i].json).unwrap_or(i);
            (i as u16, canonical as u16)
        })
        .collect();
    idx
}

/// `(head, field index)`, grouped by JSON name length.
type ByLen = Vec<(u64, u16)>;
/// `by_len[from..to]` for each JSON name length.
type LenRanges = Vec<(u16, u16)>;

/// The `by_len` and `len_ranges` tables of [`StructIndex`].
fn length_groups(fields: &[FieldInfo]) -> (ByLen, LenRanges) {
    let mut order: Vec<usize> = (0..fields.len()).collect();
    // Stable: fields of equal length stay in field order, so the first of a name is found first.
    order.sort_by_key(|&i| fields[i].json.len());
    let max = fields.iter().map(|f| f.json.len()).max().unwrap_or(0);
    let mut ranges = vec![(0u16, 0u16); max + 1];
    for (at, &i) in order.iter().enumerate() {
        let r = &mut ranges[fields[i].json.len()];
        if r.0 == r.1 {
            r.0 = at as u16;
        }
        r.1 = at as u16 + 1;
    }
    let by_len = order
        .iter()
        .map(|&i| (head(fields[i].json), i as u16))
        .collect();
    (by_len, ranges)
}

/// Resolve one schema field of struct `owner_go`.
fn field_info(
    owner_go: &str,
    f: &'static K8sField,
    ids: &FxHashMap<&'static str, u32>,
) -> FieldInfo {
    let kind = f.kind;
    let elem_kind = f.elem_kind.unwrap_or(Kind::Raw);
    let target = match kind {
        Kind::Struct | Kind::PointerToStruct => f.type_ref.as_deref().or(f.elem.as_deref()),
        Kind::Slice | Kind::Map if elem_kind == Kind::Struct => f.elem.as_deref(),
        _ => None,
    }
    .and_then(|t| ids.get(t).copied());
    FieldInfo {
        json: f.json.as_deref().unwrap_or(""),
        kind,
        elem_kind,
        omitempty: f.omitempty,
        omitzero: f.omitzero,
        int_type: int_type(owner_go, f),
        strategy: match f.patch_strategy {
            PatchStrategy::Default => Strategy::Default,
            PatchStrategy::Merge => Strategy::Merge,
            PatchStrategy::Replace => Strategy::Replace,
            PatchStrategy::Invalid(_) => Strategy::Invalid,
        },
        merge_key: f.patch_merge_key.as_deref().unwrap_or(""),
        def: f,
        via_inline: false,
        embedded: Vec::new(),
        target,
    }
}

/// Whether Go's encoder writes this field when it holds its zero value.
fn emitted_when_unset(f: &FieldInfo) -> bool {
    match f.kind {
        Kind::Struct | Kind::IntOrString | Kind::Quantity => true,
        Kind::Time => !f.omitzero,
        _ => !f.omitempty,
    }
}

/// Append the JSON-visible fields of struct `name` with their inline depth, splicing inline
/// structs in place.
/// The JSON-visible fields of struct `name`, those of its inline (embedded) structs in place,
/// each with the Go names of the embedded structs it is reached through (`via`).
type Flattened = Vec<(&'static K8sField, Vec<&'static str>)>;

fn flatten(name: &str, out: &mut Flattened, via: &mut Vec<&'static str>) {
    let Some(st) = schema::k8s().get(name) else {
        return;
    };
    for f in &st.fields {
        match f.json.as_deref() {
            None => {}
            Some("") if f.inline && via.len() < 8 => {
                if let Some(r) = f.type_ref.as_deref().or(f.elem.as_deref()) {
                    via.push(f.go.as_str());
                    flatten(r, out, via);
                    via.pop();
                }
            }
            Some(_) => out.push((f, via.clone())),
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
    if matches!(f.kind, Kind::PointerToScalar | Kind::Slice) {
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
    match f.kind {
        Kind::String => "string".into(),
        Kind::Bool => "bool".into(),
        Kind::Int | Kind::Uint => int_type(owner_go, f).into(),
        Kind::NamedString | Kind::Struct => {
            f.type_ref.as_deref().map(short_type).unwrap_or_default()
        }
        Kind::PointerToStruct => f
            .type_ref
            .as_deref()
            .or(f.elem.as_deref())
            .map(short_type)
            .unwrap_or_default(),
        Kind::PointerToScalar => elem(),
        Kind::Slice => format!("[]{}", elem()),
        Kind::Map => match f.named_type.as_deref() {
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
        Kind::IntOrString => "intstr.IntOrString".into(),
        Kind::Quantity => "resource.Quantity".into(),
        Kind::Time => "v1.Time".into(),
        Kind::Float => "float".into(),
        Kind::Raw => "raw".into(),
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
    fn heads_with_lengths_identify_short_strings() {
        let words = [
            "",
            "a",
            "b",
            "ab",
            "ba",
            "abc",
            "acb",
            "cba",
            "name",
            "nam3",
            "value",
            "valeu",
            "vaule",
            "valueFrom",
            "valueFroM",
            "12345678",
            "12345687",
            "port",
            "host",
            "hostIP",
        ];
        for a in words {
            for b in words {
                let same = a.len() == b.len()
                    && head(a) == head(b)
                    && (a.len() <= 8 || a.as_bytes()[8..] == b.as_bytes()[8..]);
                assert_eq!(same, a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn small_and_large_structs_match_keys_alike() {
        let ep = get("corev1.EnvVar").unwrap();
        assert_eq!(ep.lookup("value"), Some(1));
        assert_eq!(ep.lookup("VALUE"), Some(1));
        let c = get("corev1.Container").unwrap();
        assert_eq!(c.lookup("image"), Some(1));
        assert_eq!(c.lookup("Image"), Some(1));
        assert_eq!(c.field("image").unwrap().kind, Kind::String);
        assert!(c.field("Image").is_none());
    }

    #[test]
    fn fields_resolve_kinds_targets_and_patch_metadata() {
        let spec = get("corev1.PodSpec").unwrap();
        let containers = spec.field("containers").unwrap();
        assert_eq!(containers.kind, Kind::Slice);
        assert_eq!(containers.elem_kind, Kind::Struct);
        assert_eq!(containers.target().unwrap().name, "corev1.Container");
        assert_eq!(containers.strategy, Strategy::Merge);
        assert_eq!(containers.merge_key, "name");
        let volumes = spec.field("volumes").unwrap();
        assert_eq!(volumes.strategy, Strategy::Merge);
        let sc = spec.field("securityContext").unwrap();
        assert_eq!(sc.kind, Kind::PointerToStruct);
        assert_eq!(sc.target().unwrap().name, "corev1.PodSecurityContext");
        let om = get("metav1.ObjectMeta").unwrap();
        assert_eq!(om.field("generation").unwrap().int_type, "int64");
        assert_eq!(om.field("labels").unwrap().kind, Kind::Map);
        assert!(om.field("labels").unwrap().target().is_none());
    }

    #[test]
    fn strategies_set_retain_keys_aside() {
        let parse = |s: &str| PatchStrategy::from(Some(s.to_string()));
        assert_eq!(PatchStrategy::from(None), PatchStrategy::Default);
        assert_eq!(parse(""), PatchStrategy::Default);
        assert_eq!(parse("retainKeys"), PatchStrategy::Default);
        assert_eq!(parse("merge,retainKeys"), PatchStrategy::Merge);
        assert_eq!(parse("retainKeys,replace"), PatchStrategy::Replace);
        assert_eq!(
            parse("merge,replace"),
            PatchStrategy::Invalid(vec!["merge".into(), "replace".into()])
        );
        assert!(matches!(parse("a,b,c"), PatchStrategy::Invalid(p) if p.len() == 3));
    }

    /// Normalisation resolves `struct` fields through `type_ref` alone, merge and ordering
    /// through `type_ref` or `elem`: the tables make that the same struct.
    #[test]
    fn struct_fields_name_their_type() {
        for st in schema::k8s().structs.values() {
            for f in st.fields.iter().filter(|f| f.kind == Kind::Struct) {
                assert!(f.type_ref.is_some(), "{}.{}", st.go_name, f.go);
            }
        }
    }

    /// The completion bit set of `typed::norm_struct` covers every struct.
    #[test]
    fn flattened_structs_fit_the_completion_bit_set() {
        for st in &table().structs {
            assert!(st.fields.len() <= 64, "{}", st.name);
        }
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
