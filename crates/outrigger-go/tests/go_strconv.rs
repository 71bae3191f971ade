//! `go::strconv` is Go's `strconv.Atoi`, `ParseInt`, `ParseUint` and `ParseFloat`, checked
//! against Go's own (the Go oracle's `strconv` mode) over a table of edge cases (signs, base
//! prefixes, digit separators, bit-size limits, overflow before a bad digit, `inf`/`nan`,
//! hexadecimal floats) and generated texts from the characters numbers are made of.

mod go_oracle;
mod harness;

use go_oracle::{assert_no_disagreements, generator, Oracle};
use outrigger_go::go::strconv::{atoi, parse_float, parse_int, parse_uint};
use serde_json::json;

const TABLE: &[&str] = &[
    "",
    "0",
    "-0",
    "+0",
    "+",
    "-",
    "00",
    "08",
    "0x",
    "0x1F",
    "0X1f",
    "0b101",
    "-0b101",
    "0o17",
    "0O17",
    "017",
    "1_000",
    "1__0",
    "_1",
    "1_",
    "0x_1f",
    "0_x1",
    "0b_1",
    "+-1",
    "--1",
    "1e3",
    "1.5",
    ".5",
    "5.",
    ".",
    "1.e5",
    "1e",
    "1e+",
    "1e-5",
    "1E5",
    "e5",
    "1_0.5",
    "1._5",
    "1e1_0",
    "1e_10",
    "0x1p-2",
    "0x1.8p1",
    "0x1.8",
    "0x.8p0",
    "0xp1",
    "-0x1P+3",
    "inf",
    "-Inf",
    "+INFINITY",
    "infin",
    "nan",
    "NaN",
    "+nan",
    "-nan",
    "1e308",
    "1e309",
    "-1e400",
    "4e-400",
    "127",
    "128",
    "-128",
    "-129",
    "255",
    "256",
    "32767",
    "32768",
    "65535",
    "65536",
    "700000x",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999x",
    "z",
    "Z",
    "1z",
    "zz",
    " 1",
    "1 ",
    "١",
];

/// The calls compared, as the oracle names them.
const CALLS: &[&str] = &[
    "Atoi",
    "ParseInt:0:64",
    "ParseInt:10:64",
    "ParseInt:2:64",
    "ParseInt:8:64",
    "ParseInt:16:32",
    "ParseInt:36:8",
    "ParseUint:0:64",
    "ParseUint:10:16",
    "ParseUint:10:32",
    "ParseUint:2:64",
    "ParseFloat",
];

/// Ours, in the oracle's answer form.
fn ours(call: &str, s: &str) -> Result<String, String> {
    let parts: Vec<&str> = call.split(':').collect();
    let arg = |i: usize| parts[i].parse::<u32>().expect("a number");
    match parts[0] {
        "Atoi" => atoi(s).map(|i| i.to_string()),
        "ParseInt" => parse_int(s, arg(1), arg(2)).map(|i| i.to_string()),
        "ParseUint" => parse_uint(s, arg(1), arg(2)).map(|u| u.to_string()),
        _ => parse_float(s).map(|f| {
            if f.is_nan() {
                "NaN".to_string()
            } else {
                f.to_bits().to_string()
            }
        }),
    }
    .map_err(|e| e.to_string())
}

fn compare(o: &mut Oracle, inputs: &[String], disagreements: &mut Vec<String>) {
    let mut requests = Vec::new();
    let mut asked = Vec::new();
    for call in CALLS {
        for s in inputs {
            requests.push(json!({"mode": "strconv", "name": call, "input": s}));
            asked.push((*call, s.as_str()));
        }
    }
    for ((call, s), go) in asked.into_iter().zip(o.ask_many(&requests)) {
        let ours = ours(call, s);
        if ours != go {
            disagreements.push(format!("{call}({s:?}): ours {ours:?}, Go {go:?}"));
        }
    }
}

fn strconv_table_matches_go() {
    let mut o = Oracle::get("strconv_table_matches_go");
    let inputs: Vec<String> = TABLE.iter().map(|s| s.to_string()).collect();
    let mut disagreements = Vec::new();
    compare(&mut o, &inputs, &mut disagreements);
    assert_no_disagreements("strconv table", &disagreements, 20);
}

fn strconv_generated_matches_go() {
    let (n, seed, mut rng) = generator(2000);
    let mut o = Oracle::get("strconv_generated_matches_go");
    const PIECES: &[&str] = &[
        "0",
        "1",
        "7",
        "9",
        "5",
        "a",
        "f",
        "x",
        "b",
        "o",
        "e",
        "E",
        "p",
        ".",
        "_",
        "+",
        "-",
        "inf",
        "nan",
        "99999999999",
    ];
    let inputs: Vec<String> = (0..n)
        .map(|_| {
            let len = rng.below(8);
            (0..len).map(|_| *rng.pick(PIECES)).collect()
        })
        .collect();
    let mut disagreements = Vec::new();
    compare(&mut o, &inputs, &mut disagreements);
    assert_no_disagreements(
        &format!("strconv over {n} generated texts (seed {seed})"),
        &disagreements,
        20,
    );
}

fn main() {
    harness::run(vec![
        harness::trial(
            "strconv_table_matches_go",
            &[harness::Need::Oracle],
            strconv_table_matches_go,
        ),
        harness::trial(
            "strconv_generated_matches_go",
            &[harness::Need::Oracle],
            strconv_generated_matches_go,
        ),
    ]);
}
