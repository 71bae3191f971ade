//! Test support shared by several modules' unit tests.

/// Pods of the conformance corpus, read with an independent YAML reader (`yaml-rust2`), so that
/// tests of the pipeline do not depend on the crate's own YAML reader.
pub(crate) mod corpus {
    use serde_json::Value;
    use yaml_rust2::{Yaml, YamlLoader};

    fn to_json(y: &Yaml) -> Value {
        match y {
            Yaml::Integer(i) => Value::from(*i),
            Yaml::Real(r) => r.parse::<f64>().map_or(Value::Null, Value::from),
            Yaml::String(s) => Value::String(s.clone()),
            Yaml::Boolean(b) => Value::Bool(*b),
            Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
            Yaml::Hash(h) => Value::Object(
                h.iter()
                    .filter_map(|(k, v)| {
                        let k = match k {
                            Yaml::String(s) => s.clone(),
                            Yaml::Integer(i) => i.to_string(),
                            Yaml::Boolean(b) => b.to_string(),
                            _ => return None,
                        };
                        Some((k, to_json(v)))
                    })
                    .collect(),
            ),
            _ => Value::Null,
        }
    }

    fn pods_in(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                if m.get("spec").and_then(|s| s.get("containers")).is_some() {
                    out.push(v.clone());
                    return;
                }
                m.values().for_each(|x| pods_in(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| pods_in(x, out)),
            _ => {}
        }
    }

    pub(crate) fn load_pods(path: &str) -> Option<Vec<Value>> {
        let text = std::fs::read_to_string(path).ok()?;
        let docs = YamlLoader::load_from_str(&text).ok()?;
        let mut pods = Vec::new();
        docs.iter().for_each(|d| pods_in(&to_json(d), &mut pods));
        Some(pods)
    }
}
