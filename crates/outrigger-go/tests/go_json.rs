//! Differential test of outrigger's Go JSON encoding (`go::json`, `go::float`) against Go's
//! `encoding/json`: the oracle decodes each input into `interface{}` (numbers become float64)
//! and encodes it again; outrigger decodes the same text, turns every number into the float64
//! Go holds, and encodes with `gojson::to_string_sorted` (Go sorts map keys). The output must be
//! byte-identical, or both sides must reject the input.
//!
//! Inputs: a table of numbers (exponents, subnormals, integers around and above 2^53, -0,
//! boundaries of Go's `%e` switch at 1e-6 and 1e21) and strings (HTML characters, U+2028/2029,
//! controls, non-ASCII), and seeded random values (`OUTRIGGER_DIFF_ITERATIONS`, default 5,000;
//! `OUTRIGGER_DIFF_SEED`). Rust strings are UTF-8, so Go's handling of invalid UTF-8 is not
//! tested.
//!
//! The oracle runs Istio's Go (1.26), whose encoder writes `\b` and `\f` as such.

mod go_oracle;
mod harness;

use go_oracle::{Answer, Oracle, Rng};
use outrigger_go::go::json as gojson;
use serde_json::{json, Number, Value};

/// `v` with every number as the float64 `encoding/json` decodes into `interface{}`.
fn as_go_floats(v: Value) -> Value {
    match v {
        Value::Number(n) => {
            Number::from_f64(n.as_f64().unwrap_or(0.0)).map_or(Value::Null, Value::Number)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(as_go_floats).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, x)| (k, as_go_floats(x))).collect())
        }
        other => other,
    }
}

fn ours(text: &str) -> Answer {
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(gojson::to_string_sorted(&as_go_floats(v)))
}

#[derive(Default)]
struct Tally {
    compared: usize,
    same: usize,
    both_fail: usize,
    disagreements: Vec<String>,
}

impl Tally {
    fn add(&mut self, input: &str, ours: Answer, go: Answer) {
        self.compared += 1;
        match (&ours, &go) {
            (Ok(a), Ok(b)) if a == b => self.same += 1,
            (Err(_), Err(_)) => self.both_fail += 1,
            _ => {
                let short: String = input.chars().take(300).collect();
                self.disagreements
                    .push(format!("input {short}\n  ours {ours:?}\n  go   {go:?}"));
            }
        }
    }

    fn check(&self, what: &str) {
        eprintln!(
            "{what}: {} inputs; byte-identical {}; both reject {}; disagreements {}",
            self.compared,
            self.same,
            self.both_fail,
            self.disagreements.len()
        );
        go_oracle::assert_no_disagreements(what, &self.disagreements, 30);
    }
}

fn compare(o: &mut Oracle, inputs: &[String], t: &mut Tally) {
    for chunk in inputs.chunks(2000) {
        let reqs: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"mode": "gojson", "input": i}))
            .collect();
        for (i, go) in chunk.iter().zip(o.ask_many(&reqs)) {
            t.add(i, ours(i), go);
        }
    }
}

/// Number texts: decimal and exponent forms, boundaries, subnormals, huge integers.
fn number_texts() -> Vec<String> {
    let mut v: Vec<String> = [
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1",
        "-1",
        "1.5",
        "0.1",
        "0.2",
        "0.30000000000000004",
        "1e0",
        "1E2",
        "1e-6",
        "9.99999e-7",
        "1e-7",
        "0.000001",
        "0.0000001",
        "1e20",
        "1e21",
        "9.99999e20",
        "999999999999999999999",
        "1000000000000000000000",
        "123456789012345678901234567890",
        "9007199254740992",
        "9007199254740993",
        "9007199254740994",
        "-9007199254740993",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775807",
        "-9223372036854775808",
        "5e-324",
        "4.9406564584124654e-324",
        "2.2250738585072014e-308",
        "2.225073858507201e-308",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "1e308",
        "1e309",
        "1e-400",
        "-1e-400",
        "123.456e-10",
        "0.5e1",
        "100",
        "1e2",
        "1.0e+2",
        "12345678",
        "1.2345678e7",
        "3.141592653589793",
        "2.718281828459045",
        "1e-5",
        "1e-4",
        "0.00001",
        "123456789.123456789",
        "1.00000000000000011",
        "4503599627370497.5",
        "0.1e-6",
        "7e-7",
        "-7e-7",
        "1.5e300",
        "-2.5e-300",
        "33333333333333333333.3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for e in -330..=310 {
        if e % 7 == 0 || (-10..25).contains(&e) {
            v.push(format!("1e{e}"));
            v.push(format!("-2.5e{e}"));
            v.push(format!("1.2345678901234567e{e}"));
        }
    }
    v
}

/// Strings exercising the escaper.
fn strings() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "a",
        "<",
        ">",
        "&",
        "<a href=\"x\">&amp;</a>",
        "\u{2028}",
        "\u{2029}",
        "a\u{2028}b",
        "\u{2027}\u{202a}",
        "\"",
        "\\",
        "/",
        "\u{0}",
        "\u{1}",
        "\u{8}",
        "\u{c}",
        "\t",
        "\n",
        "\r",
        "\u{1f}",
        "\u{7f}",
        "\u{80}",
        "\u{85}",
        "\u{9f}",
        "\u{a0}",
        "\u{ad}",
        "é",
        "日本語",
        "😀",
        "\u{fffd}",
        "\u{fffe}",
        "\u{ffff}",
        "\u{feff}",
        "\u{10ffff}",
        "\u{e2}\u{80}",
        "e\u{301}",
        "mixed <\u{2028}> \"é\" \\ \t",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for c in (0u32..0x100).chain([0x2028, 0x2029, 0x200b, 0xd7ff, 0xe000]) {
        if let Some(ch) = char::from_u32(c) {
            v.push(format!("x{ch}y"));
        }
    }
    v
}

fn json_encoding_agrees_with_go_on_the_table() {
    let mut o = Oracle::get("json_encoding_agrees_with_go_on_the_table");
    let mut inputs: Vec<String> = Vec::new();
    for n in number_texts() {
        inputs.push(n.clone());
        inputs.push(format!("[{n}]"));
        inputs.push(format!("{{\"n\":{n}}}"));
    }
    for s in strings() {
        let lit = serde_json::to_string(&s).expect("string encodes");
        inputs.push(lit.clone());
        inputs.push(format!("{{{lit}:{lit}}}"));
    }
    inputs.push(
        r#"{"b":1,"a":[true,false,null,{},[]],"B":{"z":"y","a":{}},"":0,"é":1,"a b":2}"#.into(),
    );
    inputs.push(r#"{"a":1,"a":2}"#.into());
    inputs.push("[1,".into());
    inputs.push("".into());
    inputs.push(" \n 1 \n".into());
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.check("Go JSON, table");
}

fn gen(r: &mut Rng, strs: &[String], depth: usize) -> Value {
    match r.below(if depth == 0 { 5 } else { 7 }) {
        0 => {
            // Any finite float64, by its bits.
            let f = f64::from_bits(r.next());
            if f.is_finite() {
                json!(f)
            } else {
                json!(0)
            }
        }
        1 => json!((r.next() >> r.below(64)) as i64 * if r.below(2) == 0 { 1 } else { -1 }),
        2 => {
            let mant = (r.next() % 10_000_000) as f64;
            let exp = r.below(60) as i32 - 30;
            json!(mant * 10f64.powi(exp))
        }
        3 => json!(strs[r.below(strs.len())]),
        4 => [json!(true), json!(false), Value::Null][r.below(3)].clone(),
        5 => Value::Array((0..r.below(4)).map(|_| gen(r, strs, depth - 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..r.below(4) {
                m.insert(strs[r.below(strs.len())].clone(), gen(r, strs, depth - 1));
            }
            Value::Object(m)
        }
    }
}

fn json_encoding_agrees_with_go_on_generated_values() {
    let mut o = Oracle::get("json_encoding_agrees_with_go_on_generated_values");
    let (n, _, mut r) = go_oracle::generator(5000);
    let strs = strings();
    let inputs: Vec<String> = (0..n)
        .map(|_| serde_json::to_string(&gen(&mut r, &strs, 3)).expect("value encodes"))
        .collect();
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.check("Go JSON, generated");
}

fn main() {
    harness::run(vec![
        harness::trial(
            "json_encoding_agrees_with_go_on_the_table",
            &[harness::Need::Oracle],
            json_encoding_agrees_with_go_on_the_table,
        ),
        harness::trial(
            "json_encoding_agrees_with_go_on_generated_values",
            &[harness::Need::Oracle],
            json_encoding_agrees_with_go_on_generated_values,
        ),
    ]);
}
