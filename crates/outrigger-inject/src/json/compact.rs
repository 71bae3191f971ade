//! JSON trees without spare capacity, for the webhook's memory budget.
//!
//! `serde_json` (with `preserve_order`) grows every object's entry vector to its hash table's
//! capacity, and `Value::clone` copies that capacity: a two-key object such as an env var
//! `{"name": ..., "value": ...}` then holds room for several entries of 104 bytes each. Pods are
//! mostly such small objects, so a 3 MiB pod with 25,000 env vars costs about 15 MiB more per tree
//! than it needs. [`from_slice`] and [`clone`] build the same values with exact capacities.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parse JSON like `serde_json::from_slice::<Value>` (same values, same errors), with every
/// object and array allocated at its exact size.
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = CompactSeed.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A deep copy of `v` with every object and array at its exact size (`Value::clone` keeps the
/// spare capacity of the source's objects).
pub fn clone(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::with_capacity(m.len());
            for (k, v) in m {
                out.insert(k.clone(), clone(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(clone).collect()),
        other => other.clone(),
    }
}

/// Trees with at most this many objects and arrays are copied by [`clone_fast`] with
/// `Value::clone`.
const SMALL_TREE: usize = 512;

/// A deep copy of `v`, equal to [`clone`] in value and key order: for a tree of at most
/// [`SMALL_TREE`] objects and arrays, `Value::clone`, which copies each object's hash table
/// instead of hashing every key again (about half the instructions) and keeps a few spare
/// entries per object, a bounded cost at that size; [`clone`] for a larger one.
pub fn clone_fast(v: &Value) -> Value {
    let mut budget = SMALL_TREE;
    if within(v, &mut budget) {
        v.clone()
    } else {
        clone(v)
    }
}

/// Whether `v` holds at most `budget` objects and arrays (counted down; stops once over).
fn within(v: &Value, budget: &mut usize) -> bool {
    let fits = |budget: &mut usize| {
        let left = budget.checked_sub(1);
        *budget = left.unwrap_or(0);
        left.is_some()
    };
    match v {
        Value::Object(m) => fits(budget) && m.values().all(|c| within(c, budget)),
        Value::Array(a) => fits(budget) && a.iter().all(|c| within(c, budget)),
        _ => true,
    }
}

/// Deserializes a [`Value`] whose objects and arrays have exact capacities.
pub(crate) struct CompactSeed;

impl<'de> DeserializeSeed<'de> for CompactSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(CompactVisitor)
    }
}

struct CompactVisitor;

impl<'de> Visitor<'de> for CompactVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Number::from_f64(f).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        CompactSeed.deserialize(d)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(CompactSeed)? {
            items.push(v);
        }
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        // Collected first so the object is allocated once at its size; a repeated key keeps its
        // first position and its last value, as `Map::insert` does.
        let mut entries: Vec<(String, Value)> = Vec::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value_seed(CompactSeed)?;
            entries.push((key, value));
        }
        let mut m = Map::with_capacity(entries.len());
        for (k, v) in entries {
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_values_and_errors_as_serde_json() {
        for text in [
            r#"{"a":1,"b":[1,2.5,-3,true,null,"x"],"c":{"d":{}},"e":[]}"#,
            r#"{"k":1,"j":2,"k":3}"#,
            r#"[1e400]"#,
            r#"18446744073709551615"#,
            r#""\u00e9\ud83d\ude00""#,
            r#"{"a":1} trailing"#,
            r#"{"a":"#,
            r#"{"a":1,}"#,
            "",
            "nul",
        ] {
            let ours = from_slice(text.as_bytes());
            let theirs = serde_json::from_slice::<Value>(text.as_bytes());
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "{text}");
                    assert_eq!(a.to_string(), b.to_string(), "key order of {text}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
                _ => panic!("{text}: ours {ours:?}, serde_json {theirs:?}"),
            }
        }
    }

    #[test]
    fn fast_clones_are_equal_in_order_small_or_large() {
        let small: Value =
            serde_json::from_str(r#"{"z":1,"a":{"y":[{"n":"A"}],"b":null},"m":[]}"#).unwrap();
        let large = Value::Array(vec![small.clone(); SMALL_TREE]);
        let (mut b1, mut b2) = (SMALL_TREE, SMALL_TREE);
        assert!(within(&small, &mut b1));
        assert!(!within(&large, &mut b2));
        for v in [&small, &large] {
            let c = clone_fast(v);
            assert_eq!(&c, v);
            assert_eq!(c.to_string(), v.to_string());
        }
    }

    #[test]
    fn clones_are_equal_in_order() {
        let v: Value = serde_json::from_str(
            r#"{"z":1,"a":{"y":[{"name":"A","value":"1"}],"b":null},"m":[[],{}]}"#,
        )
        .unwrap();
        let c = clone(&v);
        assert_eq!(c, v);
        assert_eq!(c.to_string(), v.to_string());
    }
}
