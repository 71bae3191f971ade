//! Go formatting of JSON scalars: `strconv.FormatFloat(f, 'g', -1, bits)`, the number text
//! `encoding/json` writes, and `fmt`'s `%v` of generic JSON values (used in error messages).

use serde_json::Value;

/// `strconv.FormatFloat(x, 'g', -1, 32|64)`.
pub fn format_g(x: f64, single: bool) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let sci = if single {
        format!("{:e}", x as f32)
    } else {
        format!("{x:e}")
    };
    let (neg, body) = match sci.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, sci.as_str()),
    };
    let (mant, exp) = body.split_once('e').unwrap_or((body, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if digits.bytes().all(|b| b == b'0') {
        out.push('0');
        return out;
    }
    let nd = digits.len() as i64;
    let dp = exp + 1;
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if nd > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
    } else if dp <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-dp) as usize));
        out.push_str(&digits);
    } else if dp >= nd {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (dp - nd) as usize));
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
    out
}

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
    format_g(n.as_f64().unwrap_or(0.0), true)
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
        Value::Number(n) => out.push_str(&format_g(n.as_f64().unwrap_or(0.0), false)),
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
    fn format_g_matches_go() {
        assert_eq!(format_g(1.5, true), "1.5");
        assert_eq!(format_g(0.1, true), "0.1");
        assert_eq!(format_g(8.0, true), "8");
        assert_eq!(format_g(100000.0, true), "100000");
        assert_eq!(format_g(1000000.0, true), "1e+06");
        assert_eq!(format_g(1234567.0, false), "1.234567e+06");
        assert_eq!(format_g(0.0001, false), "0.0001");
        assert_eq!(format_g(0.00001, false), "1e-05");
        assert_eq!(format_g(-2.5, false), "-2.5");
        assert_eq!(format_g(0.0, false), "0");
    }

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
