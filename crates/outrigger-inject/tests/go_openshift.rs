//! Differential test of the OpenShift UID/GID block parser (`decide::openshift::parse_block`)
//! against Go: the oracle runs OpenShift's `uid.ParseBlock`, i.e. `fmt.Sscanf` with `"%d/%d"` or
//! `"%d-%d"` into uint32s. Both sides must accept the same texts with the same block, or refuse
//! them with the same error text (the proxy then keeps UID/GID 1337).
//!
//! Inputs: a table of the annotation shapes OpenShift writes and of Sscanf's corners (leading
//! blanks, trailing text, signs, newlines, Unicode spaces, uint32/uint64 overflow), and seeded
//! random texts over an alphabet of those characters (`OUTRIGGER_DIFF_ITERATIONS`, default
//! 20,000; `OUTRIGGER_DIFF_SEED`).

#[path = "../../outrigger-go/tests/go_oracle/mod.rs"]
mod go_oracle;
#[path = "../../outrigger-go/tests/harness/mod.rs"]
mod harness;

use go_oracle::{Answer, Oracle};
use outrigger_inject::decide::openshift::parse_block;
use serde_json::{json, Value};

const TABLE: &[&str] = &[
    "1000680000/10000",
    "1000620000/10000",
    "1000-2000",
    "0/0",
    "0/1",
    "4294967295/2",
    "4294967295/1",
    "4294967296/1",
    "1/4294967296",
    "18446744073709551615/1",
    "18446744073709551616/1",
    "99999999999999999999999/1",
    " 100/10",
    "\t100/10",
    "100/ 10",
    "100 /10",
    "100/10 ",
    "100/10trailing",
    "100/10/20",
    "100-200-300",
    "100-200x",
    " 100-200",
    "100 - 200",
    "100-",
    "-100",
    "100/",
    "/10",
    "+100/10",
    "-5/10",
    "0x10/10",
    "010/010",
    "1_000/10",
    "\n100/10",
    "100/\n10",
    "\r\n100/10",
    "\r100/10",
    "\u{a0}100/10",
    "\u{2003}100-200",
    "\u{3000}100/10",
    "\u{85}100/10",
    "\u{200b}100/10",
    "１００/10",
    "",
    " ",
    "abc",
    "100",
    "100/10,200/20",
    "1000-2000/3",
];

fn ours(text: &str) -> Answer {
    parse_block(text)
        .map(|(start, end)| json!({"end": end, "start": start}).to_string())
        .map_err(|e| e.to_string())
}

/// Both accept with the same block, or both refuse with the same text.
fn agree(go: &Answer, rust: &Answer) -> bool {
    match (go, rust) {
        (Ok(g), Ok(r)) => {
            serde_json::from_str::<Value>(g).ok() == serde_json::from_str::<Value>(r).ok()
        }
        (Err(g), Err(r)) => g == r,
        _ => false,
    }
}

fn compare(oracle: &mut Oracle, inputs: &[String]) -> Vec<String> {
    let requests: Vec<Value> = inputs
        .iter()
        .map(|i| json!({"mode": "openshift_block", "input": i}))
        .collect();
    let answers = oracle.ask_many(&requests);
    inputs
        .iter()
        .zip(answers)
        .filter_map(|(input, go)| {
            let rust = ours(input);
            (!agree(&go, &rust)).then(|| format!("{input:?}: Go {go:?}, outrigger {rust:?}"))
        })
        .collect()
}

fn table_agrees_with_go() {
    let mut oracle = Oracle::get("go_openshift::table");
    let inputs: Vec<String> = TABLE.iter().map(|s| s.to_string()).collect();
    let disagreements = compare(&mut oracle, &inputs);
    go_oracle::assert_no_disagreements("OpenShift blocks, table", &disagreements, 20);
}

fn generated_agree_with_go() {
    let mut oracle = Oracle::get("go_openshift::generated");
    let (n, seed, mut rng) = go_oracle::generator(20_000);
    let alphabet = [
        "0",
        "1",
        "4",
        "9",
        "100",
        "4294967295",
        "4294967296",
        "/",
        "/",
        "-",
        "-",
        " ",
        "\t",
        "\n",
        "\r",
        "+",
        "x",
        "_",
        ",",
        "\u{a0}",
        "\u{2000}",
        "é",
    ];
    let inputs: Vec<String> = (0..n)
        .map(|_| {
            let len = rng.below(8);
            (0..len).map(|_| *rng.pick(&alphabet)).collect()
        })
        .collect();
    let disagreements = compare(&mut oracle, &inputs);
    go_oracle::assert_no_disagreements(
        &format!("OpenShift blocks, {n} generated (seed {seed})"),
        &disagreements,
        20,
    );
    eprintln!("go_openshift: {n} generated blocks compared (seed {seed}), 0 disagreements");
}

fn main() {
    harness::run(vec![
        harness::trial(
            "table_agrees_with_go",
            &[harness::Need::Oracle],
            table_agrees_with_go,
        ),
        harness::trial(
            "generated_agree_with_go",
            &[harness::Need::Oracle],
            generated_agree_with_go,
        ),
    ]);
}
