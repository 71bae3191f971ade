//! Kubernetes label selectors (`matchLabels`, `matchExpressions`) with the API machinery's
//! validation of keys, values and operators, and its error messages.

use serde_json::{Map, Value};

use super::dns1123::is_dns1123_subdomain;

/// One requirement of a label selector (`key op values`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Operator,
    values: Vec<String>,
}

/// Label selector operators (matchLabels entries become [`Operator::In`] with one value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// A label selector that is not one, with apimachinery's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The selector is not an object.
    #[error("label selector must be an object, got {0}")]
    NotAnObject(Value),
    /// A part of the selector has the wrong JSON type.
    #[error("{field}: expected {expected}, got {got}")]
    WrongShape {
        /// Where (`matchLabels.app`, `matchExpressions[0].values`).
        field: String,
        /// What it must be (`a string`, `a list`, `strings`, ...).
        expected: &'static str,
        /// What it is.
        got: Value,
    },
    /// An operator other than `In`, `NotIn`, `Exists`, `DoesNotExist`.
    #[error("{0:?} is not a valid label selector operator")]
    UnknownOperator(String),
    /// `labels.NewRequirement`'s field errors (key, values), in its order.
    #[error("{}", field_errors(.0))]
    Invalid(Vec<String>),
}

/// apimachinery's aggregate: one error as it is, several as `[a, b]`.
fn field_errors(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        _ => format!("[{}]", errs.join(", ")),
    }
}

fn wrong(field: String, expected: &'static str, got: &Value) -> SelectorError {
    SelectorError::WrongShape {
        field,
        expected,
        got: got.clone(),
    }
}

impl Operator {
    fn parse(op: &str) -> Result<Operator, SelectorError> {
        match op {
            "In" => Ok(Operator::In),
            "NotIn" => Ok(Operator::NotIn),
            "Exists" => Ok(Operator::Exists),
            "DoesNotExist" => Ok(Operator::DoesNotExist),
            other => Err(SelectorError::UnknownOperator(other.to_string())),
        }
    }
}

/// A Kubernetes `LabelSelector` converted to requirements. All requirements are ANDed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Convert the JSON form (`matchLabels` map, `matchExpressions` list of `{key, operator,
    /// values}`) into a selector, validating keys, values and operators as Kubernetes does.
    /// `null` is the empty selector. matchLabels are taken in key order (deterministic).
    pub fn from_json(v: &Value) -> Result<LabelSelector, SelectorError> {
        let obj = match v {
            Value::Null => return Ok(LabelSelector::default()),
            Value::Object(m) => m,
            other => return Err(SelectorError::NotAnObject(other.clone())),
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                let mut keys: Vec<&String> = labels.keys().collect();
                keys.sort();
                for k in keys {
                    let value = match &labels[k] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => return Err(wrong(format!("matchLabels.{k}"), "a string", other)),
                    };
                    requirements.push(new_requirement(k, Operator::In, vec![value])?);
                }
            }
            Some(other) => return Err(wrong("matchLabels".into(), "an object", other)),
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for (i, e) in exprs.iter().enumerate() {
                    requirements.push(expression_requirement(i, e)?);
                }
            }
            Some(other) => return Err(wrong("matchExpressions".into(), "a list", other)),
        }
        Ok(LabelSelector { requirements })
    }

    /// True when the selector has no requirements; the injector ignores such entries.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement (an empty selector matches everything).
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.requirements
            .iter()
            .all(|r| requirement_matches(r, labels))
    }
}

impl std::fmt::Display for LabelSelector {
    /// Kubernetes' selector string form (`a=b,c in (d,e),!f`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| match r.op {
                Operator::In if r.values.len() == 1 => format!("{}={}", r.key, r.values[0]),
                Operator::In => format!("{} in ({})", r.key, r.values.join(",")),
                Operator::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
                Operator::Exists => r.key.clone(),
                Operator::DoesNotExist => format!("!{}", r.key),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

fn expression_requirement(index: usize, e: &Value) -> Result<Requirement, SelectorError> {
    let obj = e
        .as_object()
        .ok_or_else(|| wrong(format!("matchExpressions[{index}]"), "an object", e))?;
    let field_str = |name: &str| -> Result<String, SelectorError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(wrong(
                format!("matchExpressions[{index}].{name}"),
                "a string",
                other,
            )),
        }
    };
    let key = field_str("key")?;
    let op = Operator::parse(&field_str("operator")?)?;
    let values = match obj.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| wrong(format!("matchExpressions[{index}].values"), "strings", v))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(wrong(
                format!("matchExpressions[{index}].values"),
                "a list",
                other,
            ))
        }
    };
    new_requirement(&key, op, values)
}

/// `labels.NewRequirement`: validates key, value count for the operator and each value.
fn new_requirement(
    key: &str,
    op: Operator,
    values: Vec<String>,
) -> Result<Requirement, SelectorError> {
    let mut errs = Vec::new();
    if let Err(e) = validate_qualified_name(key) {
        errs.push(format!("key: Invalid value: {key:?}: {e}"));
    }
    match op {
        Operator::In | Operator::NotIn if values.is_empty() => errs.push(
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
                .to_string(),
        ),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
            "values: Invalid value: {}: values set must be empty for exists and does not exist",
            go_string_slice(&values)
        )),
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        if !is_valid_label_value(v) {
            errs.push(format!(
                "values[{i}]: Invalid value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
            ));
        }
    }
    if errs.is_empty() {
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    } else {
        Err(SelectorError::Invalid(errs))
    }
}

fn go_string_slice(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn requirement_matches(r: &Requirement, labels: &Map<String, Value>) -> bool {
    let value = labels.get(&r.key).map(label_text);
    match r.op {
        Operator::In => value.is_some_and(|v| r.values.contains(&v)),
        Operator::NotIn => value.is_none_or(|v| !r.values.contains(&v)),
        Operator::Exists => value.is_some(),
        Operator::DoesNotExist => value.is_none(),
    }
}

/// Label values are strings; anything else is compared by its JSON text.
pub fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters, or empty.
fn is_valid_label_value(v: &str) -> bool {
    v.is_empty() || is_qualified_name_part(v)
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Kubernetes `IsQualifiedName`: optional DNS-subdomain prefix and `/`, then a name part.
fn validate_qualified_name(key: &str) -> Result<(), String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Err("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/'".to_string())
        }
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("prefix part must be non-empty".to_string());
        }
        if !is_dns1123_subdomain(p) {
            return Err("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string());
        }
    }
    if name.is_empty() {
        return Err("name part must be non-empty".to_string());
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        return Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sel(v: Value) -> LabelSelector {
        LabelSelector::from_json(&v).expect("valid selector")
    }

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn selector_operators() {
        let l = labels(json!({"a": "1", "b": "2"}));
        assert!(sel(
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]})
        )
        .matches(&l));
        assert!(!sel(
            json!({"matchExpressions": [{"key": "c", "operator": "In", "values": ["1"]}]})
        )
        .matches(&l));
        assert!(sel(
            json!({"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]})
        )
        .matches(&l));
        assert!(!sel(
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]})
        )
        .matches(&l));
        assert!(sel(
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["9"]}]})
        )
        .matches(&l));
        assert!(sel(json!({"matchExpressions": [{"key": "b", "operator": "Exists"}]})).matches(&l));
        assert!(
            !sel(json!({"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]}))
                .matches(&l)
        );
        assert!(
            sel(json!({"matchExpressions": [{"key": "z", "operator": "DoesNotExist"}]}))
                .matches(&l)
        );
    }

    #[test]
    fn selector_requirements_are_anded() {
        let s = sel(
            json!({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "In", "values": ["3"]}]}),
        );
        assert!(!s.matches(&labels(json!({"a": "1", "b": "2"}))));
        assert!(s.matches(&labels(json!({"a": "1", "b": "3"}))));
        assert!(!s.is_empty());
        assert!(LabelSelector::from_json(&json!({}))
            .expect("ok")
            .matches(&labels(json!({}))));
    }

    #[test]
    fn selector_conversion_errors() {
        let err = |v: Value| {
            LabelSelector::from_json(&v)
                .expect_err("should fail")
                .to_string()
        };
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "in", "values": ["1"]}]})),
            "\"in\" is not a valid label selector operator"
        );
        assert!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))
                .contains("values set can't be empty")
        );
        assert!(err(
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})
        )
        .contains("values set must be empty for exists and does not exist"));
        assert!(err(json!({"matchLabels": {"bad key": "x"}}))
            .starts_with("key: Invalid value: \"bad key\""));
        assert!(err(json!({"matchLabels": {"a": "-x"}}))
            .starts_with("values[0]: Invalid value: \"-x\""));
        assert!(err(json!({"matchLabels": {"a": "x".repeat(64)}})).contains("a valid label"));
        assert!(err(json!({"matchLabels": {"Bad.Prefix/a": "x"}})).contains("prefix part"));
        assert!(err(json!({"matchLabels": {"a/b/c": "x"}})).contains("qualified name"));
        assert!(err(json!({"matchLabels": ["a"]})).contains("matchLabels"));
        assert!(err(json!("a=b")).contains("object"));
        // Several field errors of one requirement are reported together, as apimachinery does.
        let both = LabelSelector::from_json(
            &json!({"matchExpressions": [{"key": "bad key", "operator": "In"}]}),
        )
        .expect_err("bad key, no values");
        assert!(matches!(&both, SelectorError::Invalid(errs) if errs.len() == 2));
        assert!(both
            .to_string()
            .starts_with("[key: Invalid value: \"bad key\""));
    }

    #[test]
    fn selector_accepts_valid_names() {
        let s = sel(json!({"matchLabels": {"example.com/my_key-1.x": "", "k": "A.b-c_9"}}));
        assert!(s.matches(&labels(
            json!({"example.com/my_key-1.x": "", "k": "A.b-c_9"})
        )));
    }
}
