//! Differential test of kube-inject's typed reading of workloads against Go:
//! istioctl decodes a document with sigs.k8s.io/yaml `Unmarshal` into the typed object, so a
//! YAML number or boolean in a *string* field becomes Go's string form (`1e6` → `"1e+06"`,
//! `yes` → `"true"`, `010` → `"8"`) — except below a field reached through an inline struct
//! (`ProbeHandler`, `VolumeSource`, `LocalObjectReference`), where the conversion does not
//! apply — and a value of the wrong kind is an error naming the field.
//!
//! Each input is a Deployment with one scalar placed in one field; the oracle's `deployment`
//! mode decodes it into Go mirrors of the Kubernetes types and marshals it back. outrigger reads
//! the same text (`yaml::from_str`), normalises it as `appsv1.Deployment`
//! (`kube::typed::normalize`, what kube-inject does) and takes what Go would marshal of it
//! (`kube::typed::to_go_value`). Agreement: both trees have the same leaves at the same paths
//! (nothing extra, nothing missing), or both fail with the same message (Go's wrapped in
//! sigs.k8s.io/yaml's `error unmarshaling JSON: while decoding JSON: `, which kube-inject adds
//! too).
//!
//! outrigger words its errors as Go 1.26 (the Go Istio builds with) does; the oracle may be built
//! with another Go, whose encoding/json words the same error differently. [`same_error_in`] is that
//! difference, keyed by Go release: a release without an entry fails the test.

mod go_oracle;
mod harness;

use go_oracle::Oracle;
use outrigger_go::kube::typed;
use outrigger_go::yaml;
use serde_json::{json, Value};

const PREFIX: &str = "error unmarshaling JSON: while decoding JSON: ";

/// A Deployment with `@` where the value goes (each template has exactly one).
const PLACES: &[&str] = &[
    "metadata:\n  name: @\n",
    "metadata:\n  name: web\n  namespace: @\n",
    "metadata:\n  name: web\n  generateName: @\n",
    "metadata:\n  name: web\n  labels:\n    k: @\n",
    "metadata:\n  name: web\n  annotations:\n    k: @\n",
    "metadata:\n  name: web\n  annotations:\n    sidecar.istio.io/logLevel: @\n",
    "metadata:\n  name: web\nspec:\n  selector:\n    matchLabels:\n      app: @\n",
    "metadata:\n  name: web\nspec:\n  replicas: @\n",
    "metadata:\n  name: web\nspec:\n  paused: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    metadata:\n      labels:\n        app: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    metadata:\n      annotations:\n        x: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      serviceAccountName: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      hostname: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      nodeSelector:\n        zone: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      hostNetwork: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      terminationGracePeriodSeconds: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        workingDir: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        command: [@]\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        args:\n        - @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n        - name: A\n          value: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n        - name: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n        - name: A\n          valueFrom:\n            fieldRef:\n              fieldPath: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n        - name: A\n          valueFrom:\n            configMapKeyRef:\n              name: @\n              key: k\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        env:\n        - name: A\n          valueFrom:\n            configMapKeyRef:\n              name: n\n              key: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        ports:\n        - containerPort: 80\n          name: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        ports:\n        - containerPort: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        readinessProbe:\n          httpGet:\n            port: 80\n            path: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        readinessProbe:\n          httpGet:\n            port: 80\n            httpHeaders:\n            - name: h\n              value: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        readinessProbe:\n          exec:\n            command: [@]\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        readinessProbe:\n          initialDelaySeconds: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        securityContext:\n          runAsUser: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        securityContext:\n          privileged: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      volumes:\n      - name: @\n        emptyDir: {}\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      volumes:\n      - name: v\n        emptyDir:\n          medium: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      volumes:\n      - name: v\n        configMap:\n          name: @\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      volumes:\n      - name: v\n        configMap:\n          name: n\n          items:\n          - key: @\n            path: p\n",
    "metadata:\n  name: web\nspec:\n  template:\n    spec:\n      volumes:\n      - name: v\n        secret:\n          secretName: @\n",
];

/// YAML scalars and collections to put in each place.
const VALUES: &[&str] = &[
    "1e6",
    "1.5",
    "0.1",
    "3.14159265",
    "010",
    "0x1F",
    "0o17",
    "1_000",
    "12345678901234567890",
    "-0",
    "+1",
    "-7",
    "0",
    "100000000000000000000000",
    "1e400",
    "0.0000001",
    "123456789",
    "yes",
    "no",
    "on",
    "off",
    "true",
    "True",
    "y",
    "n",
    "~",
    "null",
    "''",
    "\"\"",
    "x",
    "'010'",
    "[a]",
    "{a: 1}",
    "[]",
    "{}",
    "2001-12-14",
    "1:20",
    ".5",
    "1.",
    "3000000000",
    "-3000000000",
    "\"1e6\"",
];

/// The value at `path` (object keys and array indexes) of `v`.
fn at<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(v, |cur, k| match cur {
        Value::Object(m) => m.get(k),
        Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Every leaf of `v` with its path.
fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                path.push(k.clone());
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                leaves(x, path, out);
                path.pop();
            }
        }
        other => out.push((path.clone(), other.clone())),
    }
}

/// Numbers compare by value (Go writes `1000000`, outrigger may hold `1e6` as a float).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn ours(text: &str) -> Result<Value, String> {
    let mut v = yaml::from_str(text).map_err(|e| format!("yaml: {e}"))?;
    typed::normalize("appsv1.Deployment", &mut v).map_err(|e| e.to_string())?;
    typed::to_go_value("appsv1.Deployment", &v).map_err(|e| e.to_string())
}

/// Whether Go's error text `go` (the oracle's release `go_version`, sigs.k8s.io/yaml's prefix
/// removed) is the same error as ours (worded as Go 1.26 words it); `None` for a release this
/// table does not know.
///
/// * Go 1.26: the same text.
/// * Go 1.27: encoding/json names the target by its whole path from the decoded value, with
///   slice indexes and map keys (`.spec.template.spec.containers.0.ports.0.containerPort`,
///   `.metadata.labels.k`), without the innermost struct's type first nor inline structs'
///   names, and without `Go struct field ` for a slice element; Go 1.26 writes
///   `ContainerPort.spec.template.spec.containers.ports.containerPort`. The same error: the
///   same `cannot unmarshal WHAT` and `of type T`, and our path (type and inline structs'
///   names removed) is Go's with its indexes removed and, at the end, a map key.
fn same_error_in(go_version: &str, go: &str, ours: &str) -> Option<bool> {
    let release = go_version.strip_prefix("go")?;
    let minor: u32 = release.split('.').nth(1)?.parse().ok()?;
    match minor {
        26 => Some(go == ours),
        27 => Some(go == ours || same_unmarshal_error(go, ours)),
        _ => None,
    }
}

/// `json: cannot unmarshal WHAT into TARGET of type T`: (WHAT, TARGET's path, T).
fn unmarshal_parts(e: &str) -> Option<(&str, &str, &str)> {
    let rest = e.strip_prefix("json: cannot unmarshal ")?;
    let (what, rest) = rest.split_once(" into ")?;
    let (target, ty) = rest.rsplit_once(" of type ")?;
    Some((
        what,
        target.strip_prefix("Go struct field ").unwrap_or(target),
        ty,
    ))
}

fn same_unmarshal_error(go: &str, ours: &str) -> bool {
    let (Some((gw, gp, gt)), Some((ow, op, ot))) = (unmarshal_parts(go), unmarshal_parts(ours))
    else {
        return false;
    };
    if gw != ow || gt != ot {
        return false;
    }
    // Ours: `Type.path.Inline.more`; Go 1.27's: `.path.0.more.key`.
    let ours_path: Vec<&str> = op
        .split('.')
        .skip(1)
        .filter(|s| !s.starts_with(|c: char| c.is_ascii_uppercase()))
        .collect();
    let gos_path: Vec<&str> = gp
        .strip_prefix('.')
        .unwrap_or(gp)
        .split('.')
        .filter(|s| !s.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    gos_path.len() >= ours_path.len() && gos_path[..ours_path.len()] == ours_path[..]
}

fn typed_string_fields_agree_with_go() {
    let mut o = Oracle::get("typed_string_fields_agree_with_go");
    let version = o
        .ask("version", "")
        .expect("the oracle names its Go release");
    assert!(
        same_error_in(&version, "", "").is_some(),
        "no wording table for {version}: outrigger's texts are Go 1.26's; add that release's \
         differences to same_error_in"
    );
    let mut inputs: Vec<String> = Vec::new();
    for place in PLACES {
        for value in VALUES {
            inputs.push(format!(
                "apiVersion: apps/v1\nkind: Deployment\n{}",
                place.replace('@', value)
            ));
        }
    }
    let reqs: Vec<Value> = inputs
        .iter()
        .map(|t| json!({"mode": "deployment", "input": t}))
        .collect();
    let answers = o.ask_many(&reqs);
    let (mut same_values, mut same_errors, mut reader) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for (text, go) in inputs.iter().zip(answers) {
        let mine = ours(text);
        match (&go, &mine) {
            (Ok(g), Ok(m)) => {
                let g: Value = serde_json::from_str(g).expect("oracle JSON");
                let mut ls = Vec::new();
                leaves(&g, &mut Vec::new(), &mut ls);
                let mut bad: Vec<String> = ls
                    .iter()
                    .filter(|(p, gv)| !at(m, p).is_some_and(|mv| same(mv, gv)))
                    .map(|(p, gv)| format!("{}: go {gv}, ours {:?}", p.join("."), at(m, p)))
                    .collect();
                // And the other way: nothing of ours that Go does not have.
                let mut mine_leaves = Vec::new();
                leaves(m, &mut Vec::new(), &mut mine_leaves);
                bad.extend(
                    mine_leaves
                        .iter()
                        .filter(|(p, mv)| !at(&g, p).is_some_and(|gv| same(mv, gv)))
                        .map(|(p, mv)| format!("{}: ours {mv}, go {:?}", p.join("."), at(&g, p))),
                );
                if bad.is_empty() {
                    same_values += 1;
                } else {
                    disagreements.push(format!("{text}\n  {}", bad.join("\n  ")));
                }
            }
            (Err(g), Err(m))
                if g.strip_prefix(PREFIX)
                    .and_then(|g| same_error_in(&version, g, m))
                    == Some(true) =>
            {
                same_errors += 1
            }
            // The reader's own errors (YAML that go-yaml reads but JSON cannot hold) are the
            // reader's: counted, shown, not taken as disagreements here.
            (_, Err(m)) if m.starts_with("yaml: ") => {
                reader += 1;
                eprintln!("reader error: {text}\n  go {go:?}\n  ours {m}");
            }
            _ => disagreements.push(format!("{text}\n  go   {go:?}\n  ours {mine:?}")),
        }
    }
    eprintln!(
        "typed string fields ({version}): {} inputs; same values {same_values}; same error \
         {same_errors}; reader errors {reader}; disagreements {}",
        inputs.len(),
        disagreements.len()
    );
    go_oracle::assert_no_disagreements("typed string fields", &disagreements, 30);
}

fn main() {
    harness::run(vec![harness::trial(
        "typed_string_fields_agree_with_go",
        &[harness::Need::Oracle],
        typed_string_fields_agree_with_go,
    )]);
}
