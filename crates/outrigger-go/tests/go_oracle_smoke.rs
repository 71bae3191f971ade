//! The Go oracle answers as Go does on a few facts every other differential test relies on.

mod go_oracle;
mod harness;

use go_oracle::Oracle;

fn oracle_speaks_for_go() {
    let mut o = Oracle::get("oracle_speaks_for_go");
    // YAML 1.1 scalars, last duplicate key wins in YAMLToJSON.
    assert_eq!(
        o.yaml_to_json("a: yes\nb: 010\na: 1e6\n").as_deref(),
        Ok(r#"{"a":1000000,"b":8}"#)
    );
    assert!(o.ask("yaml2json_strict", "a: 1\na: 2\n").is_err());
    assert_eq!(
        o.json_to_yaml(r#"{"b":"yes","a":[1,2.5]}"#).as_deref(),
        Ok("a:\n- 1\n- 2.5\nb: \"yes\"\n")
    );
    assert_eq!(
        o.render(
            "t",
            "{{ .a | indent 2 }}",
            &serde_json::json!({"a": "x\ny"})
        )
        .as_deref(),
        Ok("x\n  y")
    );
}

fn main() {
    harness::run(vec![harness::trial(
        "oracle_speaks_for_go",
        &[harness::Need::Oracle],
        oracle_speaks_for_go,
    )]);
}
