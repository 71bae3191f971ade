//! A review too large to inject, told from its bytes: the pod's lists counted while the body is
//! parsed, without building the pod's spec.
//!
//! A pod whose lists exceed [`crate::webhook::Context::max_list_entries`] is refused (reason
//! `too_large`) once the decision says it would be injected. Building its tree first (a
//! 0.8 MB review of 20,000 containers is some 200,000 JSON values) would cost the refusal more
//! than the whole of a normal review; this scan reads the same bytes with serde, keeping the
//! review as it is except the pod's `spec`, of which it keeps the scalar fields (what the
//! decision and the shape checks read: `hostNetwork`, `nodeName`) and the lengths of the lists.
//!
//! The scan runs only for a body that can hold a list over the bound ([`may_hold_a_list_over`]:
//! at least that many commas, one pass over the bytes), and gives up (`None`: the review takes
//! the full path) on anything it does not mirror exactly: a body that is not JSON, a repeated key
//! on the path to the lists or inside the spec, a spec that is not an object.

use std::borrow::Cow;
use std::fmt;

use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

use crate::json::compact::CompactSeed;

/// The pod's lists that count as its containers.
pub(crate) const CONTAINER_LISTS: [&str; 3] =
    ["containers", "initContainers", "ephemeralContainers"];

/// The refusal of a pod with `n` containers over `max`.
pub(crate) fn too_many_containers(n: usize, max: usize) -> String {
    format!(
        "the pod has {n} containers (init and ephemeral containers included); \
         outrigger injects pods of at most {max}"
    )
}

/// The refusal of a pod whose list at `path` holds `len` entries, over `max`.
pub(crate) fn list_over(path: &str, len: usize, max: usize) -> String {
    format!(
        "the pod's {path} has {len} entries; outrigger injects pods whose lists hold at most {max}"
    )
}

/// Whether `body` can hold a list of more than `max` entries: such a list has at least `max`
/// commas, so a body with fewer cannot (the common case costs one pass counting them).
pub(crate) fn may_hold_a_list_over(body: &[u8], max: usize) -> bool {
    body.len() > 2 * max && body.iter().filter(|&&b| b == b',').count() >= max
}

/// What the scan found: the review with the pod's spec reduced to its scalar fields, and the
/// refusal its lists call for (`None`: none of them is over the bound).
#[derive(Debug)]
pub(crate) struct Scanned {
    /// The review document, `request.object.spec` reduced.
    pub(crate) review: Value,
    /// Why the pod is too large, as [`crate::webhook`]'s full check words it.
    pub(crate) too_large: Option<String>,
}

/// Scan `body` (see the module documentation); `None` where the scan does not apply.
pub(crate) fn scan(body: &[u8], max: usize) -> Option<Scanned> {
    let mut found = Lists::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    let review = Doc {
        max,
        found: &mut found,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    if !found.spec_seen {
        return None;
    }
    let too_large = if found.containers > max {
        Some(too_many_containers(found.containers, max))
    } else {
        found.first_over
    };
    Some(Scanned { review, too_large })
}

/// What the spec's lists hold.
#[derive(Debug, Default)]
struct Lists {
    spec_seen: bool,
    containers: usize,
    /// The first list over the bound, in the order the full check looks (the spec's lists in
    /// order, each container list's containers' lists after it).
    first_over: Option<String>,
}

/// The scan gives up.
const GIVE_UP: &str = "not scanned";

/// A key, borrowed from the body when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_string()))
    }
}

/// Read a map whose entries are kept as values except the one under `special`, read by `seed`;
/// a repeated `special` key gives up. Keys keep their first position and last value, as
/// [`CompactSeed`] keeps them.
fn map_with<'de, A, F>(mut access: A, special: &str, mut seed: F) -> Result<Value, A::Error>
where
    A: MapAccess<'de>,
    F: FnMut(&mut A) -> Result<Value, A::Error>,
{
    let mut entries: Vec<(String, Value)> = Vec::new();
    let mut seen = false;
    while let Some(key) = access.next_key_seed(Key)? {
        let value = if key == special {
            if seen {
                return Err(A::Error::custom(GIVE_UP));
            }
            seen = true;
            seed(&mut access)?
        } else {
            access.next_value_seed(CompactSeed)?
        };
        entries.push((key.into_owned(), value));
    }
    let mut m = Map::with_capacity(entries.len());
    for (k, v) in entries {
        m.insert(k, v);
    }
    Ok(Value::Object(m))
}

/// The review document.
struct Doc<'a> {
    max: usize,
    found: &'a mut Lists,
}

impl<'de> DeserializeSeed<'de> for Doc<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Doc<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AdmissionReview")
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Value, A::Error> {
        let Doc { max, found } = self;
        map_with(access, "request", |a| {
            a.next_value_seed(Level {
                max,
                found: &mut *found,
                depth: 1,
            })
        })
    }
}

/// `request` (depth 1), then `request.object` (depth 2): maps whose `object`, then `spec`, is
/// read on.
struct Level<'a> {
    max: usize,
    found: &'a mut Lists,
    depth: u8,
}

impl<'de> DeserializeSeed<'de> for Level<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Level<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Value, A::Error> {
        let Level { max, found, depth } = self;
        let special = if depth == 1 { "object" } else { "spec" };
        map_with(access, special, |a| {
            if depth == 1 {
                a.next_value_seed(Level {
                    max,
                    found: &mut *found,
                    depth: 2,
                })
            } else {
                found.spec_seen = true;
                a.next_value_seed(Spec {
                    max,
                    found: &mut *found,
                })
            }
        })
    }
}

/// The pod's spec: its scalar fields kept, its lists counted, its objects skipped.
struct Spec<'a> {
    max: usize,
    found: &'a mut Lists,
}

impl<'de> DeserializeSeed<'de> for Spec<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Spec<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a pod spec")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let Spec { max, found } = self;
        let mut kept = Map::new();
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        while let Some(key) = access.next_key_seed(Key)? {
            if keys.contains(&key) {
                return Err(A::Error::custom(GIVE_UP));
            }
            let containers = CONTAINER_LISTS.contains(&key.as_ref());
            let item = access.next_value_seed(Field {
                max,
                containers,
                over: None,
            })?;
            // The fields the shape check reads must be there as they are.
            if matches!(key.as_ref(), "hostNetwork" | "nodeName")
                && !matches!(item, Item::Scalar(_))
            {
                return Err(A::Error::custom(GIVE_UP));
            }
            match item {
                Item::Scalar(v) => {
                    kept.insert(key.to_string(), v);
                }
                Item::List { len, over } => {
                    if containers {
                        found.containers += len;
                    }
                    if found.first_over.is_none() {
                        found.first_over = if len > max {
                            Some(list_over(&format!("spec.{key}"), len, max))
                        } else {
                            over.map(|(i, f, n)| list_over(&format!("spec.{key}[{i}].{f}"), n, max))
                        };
                    }
                }
                Item::Skipped => {}
            }
            keys.push(key);
        }
        Ok(Value::Object(kept))
    }
}

/// What a value of the spec (or of a container) was.
enum Item {
    /// A string, number, boolean or null: kept.
    Scalar(Value),
    /// A list of `len` entries; in a container list, the first container list over the bound
    /// (container index, field, length).
    List {
        len: usize,
        over: Option<(usize, String, usize)>,
    },
    /// An object: skipped.
    Skipped,
}

/// A value of the spec, or (`containers` false, `max` unused) of a container.
struct Field {
    max: usize,
    /// A container list: its entries' lists are counted too.
    containers: bool,
    over: Option<(usize, String, usize)>,
}

impl<'de> DeserializeSeed<'de> for Field {
    type Value = Item;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Item, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Field {
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Item, E> {
        Ok(Item::Scalar(Value::Bool(b)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Item, E> {
        Ok(Item::Scalar(Value::Number(n.into())))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Item, E> {
        Ok(Item::Scalar(Value::Number(n.into())))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Item, E> {
        Ok(Item::Scalar(
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E>(self, s: &str) -> Result<Item, E> {
        Ok(Item::Scalar(Value::String(s.to_owned())))
    }

    fn visit_unit<E>(self) -> Result<Item, E> {
        Ok(Item::Scalar(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
        let mut len = 0usize;
        let mut over = self.over;
        if self.containers {
            while let Some(c) = seq.next_element_seed(Container { max: self.max })? {
                if over.is_none() {
                    over = c.map(|(f, n)| (len, f, n));
                }
                len += 1;
            }
        } else {
            while seq.next_element::<IgnoredAny>()?.is_some() {
                len += 1;
            }
        }
        Ok(Item::List { len, over })
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Item, A::Error> {
        IgnoredAny.visit_map(access)?;
        Ok(Item::Skipped)
    }
}

/// The visitor methods of a scanner whose `Value` is an `Option`: every scalar (boolean, number,
/// string, null) is `None`.
macro_rules! scalars_are_none {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// One entry of a container list: its first list over the bound (field, length), if it is an
/// object; any other entry is skipped. Nothing is allocated but the name of a list over the
/// bound (a review of 20,000 containers has as many of these).
struct Container {
    max: usize,
}

impl<'de> DeserializeSeed<'de> for Container {
    type Value = Option<(String, usize)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Container {
    type Value = Option<(String, usize)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_are_none!();

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        IgnoredAny.visit_seq(seq)?;
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut over = None;
        // The keys whose value was a list: a key seen again after one gives up (the full
        // check sees the last value only); kept on the stack.
        let mut lists: [Option<Cow<'de, str>>; MAX_CONTAINER_LISTS] = Default::default();
        let mut n = 0;
        while let Some(key) = access.next_key_seed(Key)? {
            if lists[..n].iter().any(|k| k.as_ref() == Some(&key)) {
                return Err(A::Error::custom(GIVE_UP));
            }
            let Some(len) = access.next_value_seed(ListLen)? else {
                continue;
            };
            if n == MAX_CONTAINER_LISTS {
                return Err(A::Error::custom(GIVE_UP));
            }
            if over.is_none() && len > self.max {
                over = Some((key.to_string(), len));
            }
            lists[n] = Some(key);
            n += 1;
        }
        Ok(over)
    }
}

/// The most list fields a container is scanned with (Kubernetes' container has 9).
const MAX_CONTAINER_LISTS: usize = 16;

/// The length of a value that is a list (`None` for any other value), allocating nothing.
struct ListLen;

impl<'de> DeserializeSeed<'de> for ListLen {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ListLen {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_are_none!();

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Self::Value, A::Error> {
        IgnoredAny.visit_map(access)?;
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut len = 0usize;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            len += 1;
        }
        Ok(Some(len))
    }
}
