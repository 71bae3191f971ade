//! Go formatting of JSON scalars: the number text `encoding/json` writes and `fmt`'s `%v` of
//! generic JSON values (used in error messages); floats via [`crate::go::float`].

use serde_json::Value;

/// Text of a JSON number as Go's `encoding/json` writes it (integers exactly).
pub fn number_text(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let x = n.as_f64().unwrap_or(0.0);
    let a = x.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let s = format!("{x:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{x}")
    }
}

/// The string a YAML number becomes in a Go string field (sigs.k8s.io/yaml target-type rule).
pub fn number_as_string(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    crate::go::float::format_g32(n.as_f64().unwrap_or(0.0))
}

/// `fmt.Sprintf("%v", v)` of a generic decoded JSON value (`map[a:1 b:[x y]]`).
pub fn sprint(v: &Value) -> String {
    let mut s = String::new();
    write_v(v, &mut s);
    s
}

fn write_v(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&crate::go::float::format_g64(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_v(e, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_v(&m[k.as_str()], out);
            }
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sprint_matches_go_percent_v() {
        let v = json!({"b": [1, "x"], "a": null, "c": {"d": true}, "e": 80});
        assert_eq!(sprint(&v), "map[a:<nil> b:[1 x] c:map[d:true] e:80]");
    }

    #[test]
    fn number_texts() {
        assert_eq!(
            number_text(&serde_json::Number::from_f64(0.5).unwrap()),
            "0.5"
        );
        assert_eq!(
            number_text(&serde_json::Number::from_f64(1e21).unwrap()),
            "1e+21"
        );
        assert_eq!(number_text(&serde_json::Number::from(42)), "42");
        assert_eq!(
            number_as_string(&serde_json::Number::from_f64(2.0).unwrap()),
            "2"
        );
    }
}
