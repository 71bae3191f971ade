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

/// kube-inject's parameters for a Deployment `apps/web` (the drift and re-injection tests).
pub(crate) fn kube_inject_params<'a>(
    snapshot: &'a crate::config::Snapshot,
    revision: &'a str,
    native_sidecars: bool,
) -> crate::inject::InjectParams<'a> {
    crate::inject::InjectParams {
        snapshot,
        mode: crate::inject::Mode::KubeInject,
        workload: crate::ingest::workload::WorkloadMeta {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            name: "web".into(),
            namespace: "apps".into(),
        },
        revision,
        native_sidecars,
        proxy_envs: Default::default(),
        proxy_uid_gid: None,
        compliance_policy: "",
    }
}

/// Random JSON trees for tests that must not panic on any input.
pub(crate) mod random {
    use serde_json::json;

    /// Tiny deterministic generator of odd JSON trees whose keys are real Pod field names, so the
    /// walk reaches known fields with every kind of wrong value.
    pub(crate) struct Gen(pub(crate) u64);

    impl Gen {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }

        pub(crate) fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[(self.next() as usize) % xs.len()]
        }

        pub(crate) fn value(&mut self, depth: u32) -> serde_json::Value {
            const KEYS: &[&str] = &[
                "metadata",
                "spec",
                "containers",
                "initContainers",
                "name",
                "image",
                "env",
                "value",
                "ports",
                "containerPort",
                "resources",
                "limits",
                "requests",
                "cpu",
                "memory",
                "securityContext",
                "runAsUser",
                "privileged",
                "volumes",
                "emptyDir",
                "volumeMounts",
                "mountPath",
                "readinessProbe",
                "httpGet",
                "port",
                "labels",
                "annotations",
                "creationTimestamp",
                "finalizers",
                "$patch",
                "$retainKeys",
                "$setElementOrder/containers",
                "$deleteFromPrimitiveList/finalizers",
                "unknown",
                "Name",
                "status",
                "hostAliases",
                "ip",
            ];
            const STRS: &[&str] = &[
                "",
                "0",
                "1.5Gi",
                "100m",
                "x",
                "replace",
                "delete",
                "merge",
                "name",
                "2024-01-01T00:00:00Z",
            ];
            let r = self.next() % if depth > 4 { 6 } else { 9 };
            match r {
                0 => serde_json::Value::Null,
                1 => serde_json::Value::Bool(self.next().is_multiple_of(2)),
                2 => json!(self.next() % 70000),
                3 => json!((self.next() % 1000) as f64 / 7.0),
                4 | 5 => json!(self.pick(STRS)),
                6 => serde_json::Value::Array(
                    (0..self.next() % 4)
                        .map(|_| self.value(depth + 1))
                        .collect(),
                ),
                _ => {
                    let mut m = serde_json::Map::new();
                    for _ in 0..self.next() % 5 {
                        let k = self.pick(KEYS).to_string();
                        let v = self.value(depth + 1);
                        m.insert(k, v);
                    }
                    serde_json::Value::Object(m)
                }
            }
        }
    }
}

/// Test-only YAML → JSON for corpus files and test inputs, independent of `crate::yaml`; and
/// the corpus root.
mod yaml_json {
    use std::path::PathBuf;

    use serde_json::Value;
    use yaml_rust2::{Yaml, YamlLoader};

    /// Test-only YAML → JSON (core schema) for corpus files, independent of `crate::yaml`.
    pub(crate) fn yaml(text: &str) -> Value {
        yaml_docs(text).into_iter().next().unwrap_or(Value::Null)
    }

    /// All documents of a YAML stream as JSON.
    pub(crate) fn yaml_docs(text: &str) -> Vec<Value> {
        YamlLoader::load_from_str(text)
            .expect("test YAML parses")
            .into_iter()
            .map(to_json)
            .collect()
    }

    fn to_json(y: Yaml) -> Value {
        match y {
            Yaml::Real(s) => s
                .parse::<f64>()
                .map(Value::from)
                .unwrap_or(Value::String(s)),
            Yaml::Integer(i) => Value::from(i),
            Yaml::String(s) => Value::String(s),
            Yaml::Boolean(b) => Value::Bool(b),
            Yaml::Array(a) => Value::Array(a.into_iter().map(to_json).collect()),
            Yaml::Hash(h) => Value::Object(
                h.into_iter()
                    .map(|(k, v)| {
                        let key = match to_json(k) {
                            Value::String(s) => s,
                            other => other.to_string(),
                        };
                        (key, to_json(v))
                    })
                    .collect(),
            ),
            _ => Value::Null,
        }
    }

    /// The corpus root, or `None` (with a notice) when absent.
    pub(crate) fn corpus() -> Option<PathBuf> {
        let p = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/conformance/istio"
        ));
        if p.join("cases.json").exists() {
            Some(p)
        } else {
            eprintln!("conformance corpus absent at {}: skipping", p.display());
            None
        }
    }
}

pub(crate) use yaml_json::{corpus, yaml, yaml_docs};
