//! One page of a pod list (`GET /api/v1/pods?limit=N&continue=...`, a `PodList`) decoded for
//! reading pods as they are stored: each pod becomes a JSON tree as it came, without
//! `metadata.managedFields`, which is skipped while decoding (never built). managedFields is
//! the largest part of a stored pod (kilobytes per field manager) and nothing reads it.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// A page of pods: the items, and the token for the next page (`None` on the last page).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodPage {
    /// The pods of this page, in the order listed, each without `metadata.managedFields`.
    pub items: Vec<Value>,
    /// `metadata.continue` of the list: where the next page starts (absent or empty: none).
    pub continue_token: Option<String>,
}

impl<'de> Deserialize<'de> for PodPage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PageVisitor)
    }
}

struct PageVisitor;

impl<'de> Visitor<'de> for PageVisitor {
    type Value = PodPage;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a PodList object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PodPage, A::Error> {
        let mut page = PodPage::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "items" => page.items = map.next_value_seed(Items)?,
                "metadata" => {
                    let meta: Option<ListMeta> = map.next_value()?;
                    page.continue_token = meta
                        .and_then(|m| m.continue_token)
                        .filter(|t| !t.is_empty());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

/// The part of a list's `metadata` read: `continue`.
#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

/// `items`: a list of pods (`null` is none).
struct Items;

impl<'de> DeserializeSeed<'de> for Items {
    type Value = Vec<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Value>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Items {
    type Value = Vec<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of pods")
    }

    fn visit_none<E>(self) -> Result<Vec<Value>, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E>(self) -> Result<Vec<Value>, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Value>, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Value>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(pod) = seq.next_element_seed(Object {
            skip_managed_fields: false,
        })? {
            items.push(pod);
        }
        Ok(items)
    }
}

/// A JSON value read as a tree; when it is an object, its `metadata` member is read without
/// `managedFields` (`skip_managed_fields` is set for that member itself).
struct Object {
    skip_managed_fields: bool,
}

impl<'de> DeserializeSeed<'de> for Object {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a pod")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = if self.skip_managed_fields && key == "managedFields" {
                map.next_value::<IgnoredAny>()?;
                continue;
            } else if !self.skip_managed_fields && key == "metadata" {
                map.next_value_seed(Object {
                    skip_managed_fields: true,
                })?
            } else {
                map.next_value::<Value>()?
            };
            // A key given twice: the last wins, as for any JSON object read into a tree.
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    // Anything but an object is kept as it is (a pod that is not an object is the reader's
    // to refuse, with its own message).
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(name: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"},
                "managedFields": [{"manager": "kubelet", "operation": "Update",
                    "fieldsV1": {"f:status": {"f:conditions": {}}}}]},
            "spec": {"containers": [{"name": "web", "image": "web:1"}]},
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn a_page_reads_its_pods_without_managed_fields_and_its_continue_token() {
        let page = json!({"apiVersion": "v1", "kind": "PodList",
            "metadata": {"resourceVersion": "7", "continue": "eyJ2"},
            "items": [pod("a"), pod("b")]});
        let got: PodPage =
            serde_json::from_slice(&serde_json::to_vec(&page).expect("encode")).expect("decode");
        assert_eq!(got.continue_token.as_deref(), Some("eyJ2"));
        let mut want = [pod("a"), pod("b")];
        for p in &mut want {
            p["metadata"]
                .as_object_mut()
                .expect("metadata")
                .remove("managedFields");
        }
        assert_eq!(got.items, want);
        // Key order is kept (the tree is what a plain decode gives, less managedFields).
        let keys: Vec<&String> = got.items[0]["metadata"]
            .as_object()
            .expect("metadata")
            .keys()
            .collect();
        assert_eq!(keys, ["name", "namespace", "labels"]);
    }

    #[test]
    fn the_last_page_has_no_token_and_empty_lists_are_empty() {
        for (text, token) in [
            (r#"{"metadata": {"continue": ""}, "items": []}"#, None),
            (r#"{"metadata": {}, "items": null}"#, None),
            (r#"{"items": [], "metadata": {"continue": "x"}}"#, Some("x")),
            (r#"{}"#, None),
        ] {
            let got: PodPage = serde_json::from_str(text).expect(text);
            assert_eq!(got.continue_token.as_deref(), token, "{text}");
            assert!(got.items.is_empty(), "{text}");
        }
    }

    #[test]
    fn only_the_pods_own_managed_fields_are_skipped() {
        // A `managedFields` key elsewhere (an annotation, a label, the spec) is the pod's data.
        let text = r#"{"items": [{"metadata": {"annotations": {"managedFields": "x"}},
            "spec": {"managedFields": [1]}, "managedFields": 2}]}"#;
        let got: PodPage = serde_json::from_str(text).expect("decode");
        assert_eq!(
            got.items,
            [json!({"metadata": {"annotations": {"managedFields": "x"}},
                "spec": {"managedFields": [1]}, "managedFields": 2})]
        );
    }

    #[test]
    fn malformed_pages_are_errors_not_panics() {
        for text in [
            r#"{"items": {}}"#,
            r#"{"items": [{"metadata": {"managedFields": [}]}"#,
            r#"[]"#,
            r#"{"metadata": {"continue": 3}}"#,
        ] {
            assert!(serde_json::from_str::<PodPage>(text).is_err(), "{text}");
        }
    }
}
