//! The library's modules import only downward: each top-level module has a layer, and its
//! non-test code may name (`crate::…`) only modules of lower layers, so there are no cycles and
//! no foundation reaches up into the pipeline or an orchestrator. A new module needs a layer
//! here.

use std::collections::BTreeMap;
use std::path::Path;

/// Top-level modules by layer: foundations first, orchestrators last. The engines (Go
/// formatting, JSON, Kubernetes types, YAML, mesh config, templates), then the configuration,
/// then the stages in pipeline order (ingest, decide, render, merge, finish, patch, respond),
/// then `error`, the crate-wide sum of the engines' and stages' error types, then the
/// orchestrators (`inject` runs one pod and is used by the others), which return the sum.
/// Engines and stages return their own error types; naming the sum through the root
/// re-exports `crate::Error`/`crate::Result` counts as naming `error`, so no module below it may.
const LAYERS: &[(&str, u8)] = &[
    ("go", 0),
    ("work", 0),
    ("json", 1),
    ("yaml", 1),
    ("kube", 1),
    ("mesh", 2),
    ("template", 3),
    ("config", 4),
    ("unsupported", 4),
    ("ingest", 5),
    ("decide", 6),
    ("render", 7),
    ("merge", 8),
    ("finish", 9),
    ("patch", 10),
    ("respond", 11),
    ("error", 12),
    ("inject", 13),
    ("reinject", 14),
    ("guard", 15),
    ("kube_inject", 15),
    ("webhook", 15),
    ("check", 15),
    ("drift", 15),
    ("preview", 15),
];

/// Source without comments and without the test module at its end.
fn production_code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Top-level modules named by `crate::x` paths and `use crate::{x, y::z}` groups.
fn named_modules(code: &str) -> Vec<String> {
    named_after(code, "crate::")
}

/// Modules named by `PREFIX x` paths and `use PREFIX{x, y::z}` groups.
fn named_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            for item in group.split(',') {
                let name = item.trim().split("::").next().unwrap_or("").trim();
                out.push(name.to_string());
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

fn visit(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("readable source dir")
        .flatten()
    {
        let p = entry.path();
        if p.is_dir() {
            visit(&p, files);
        } else if p.extension().is_some_and(|e| e == "rs") {
            files.push(p);
        }
    }
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer: BTreeMap<&str, u8> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    visit(&src, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src");
        let first = rel.iter().next().and_then(|s| s.to_str()).unwrap_or("");
        let top = first.trim_end_matches(".rs");
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if ["lib", "testing"].contains(&top) || name.starts_with("tests") {
            continue;
        }
        let Some(&own) = layer.get(top) else {
            violations.push(format!("{}: module {top:?} has no layer", rel.display()));
            continue;
        };
        let code = production_code(&std::fs::read_to_string(&file).expect("readable"));
        for m in named_modules(&code) {
            // The root re-exports `crate::Error`/`crate::Result` are the `error` module: mapped
            // before capitalised names (other root items) are skipped.
            let m = match m.as_str() {
                "Error" | "Result" => "error".to_string(),
                _ => m,
            };
            match layer.get(m.as_str()) {
                _ if m == top || m.is_empty() || m.starts_with(char::is_uppercase) => {}
                Some(&l) if l < own => {}
                Some(_) => violations.push(format!("{}: {top} imports {m}", rel.display())),
                None => violations.push(format!("{}: unknown module crate::{m}", rel.display())),
            }
            checked += 1;
        }
    }
    assert!(
        checked > 100,
        "only {checked} imports seen: is the scan broken?"
    );
    assert!(violations.is_empty(), "{violations:#?}");
}

/// The template engine's modules by layer, so the import circle between the function families
/// and the function table cannot come back: the leaves (lexer, syntax tree, Go's string, path
/// and semver rules), then the parser, the value model and the digests, then what every function
/// family builds on (`printf`, the function `signature`, then Go's `regexp` rules and Go's
/// `builtins`), then the families (`dates`, `sprig`, `istio`),
/// then the function table (`funcs`), then what runs templates (`exec`, and `mutation`, which
/// asks the table about the calls of a parsed template).
const TEMPLATE_LAYERS: &[(&str, u8)] = &[
    ("lex", 0),
    ("ast", 0),
    ("gostr", 0),
    ("gopath", 0),
    ("list", 0),
    ("digest", 1),
    ("semver", 0),
    ("parse", 1),
    ("value", 1),
    ("printf", 2),
    ("signature", 2),
    ("regexp_syntax", 2),
    ("regexp", 3),
    ("builtins", 3),
    ("dates", 4),
    ("sprig", 4),
    ("istio", 4),
    ("funcs", 5),
    ("mutation", 6),
    ("reads", 6),
    ("exec", 6),
];

#[test]
fn template_modules_import_only_lower_layers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/template");
    let layer: BTreeMap<&str, u8> = TEMPLATE_LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    visit(&dir, &mut files);
    let mut violations = Vec::new();
    let mut checked = 0;
    for file in files {
        let rel = file.strip_prefix(&dir).expect("under src/template");
        let first = rel.iter().next().and_then(|s| s.to_str()).unwrap_or("");
        let top = first.trim_end_matches(".rs");
        let name = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if top == "mod" || name.starts_with("tests") {
            continue;
        }
        let Some(&own) = layer.get(top) else {
            violations.push(format!(
                "template/{}: module {top:?} has no layer",
                rel.display()
            ));
            continue;
        };
        let code = production_code(&std::fs::read_to_string(&file).expect("readable"));
        // A module one level down names its siblings as `super::x`; deeper ones as
        // `crate::template::x`.
        let mut named = named_after(&code, "super::");
        named.extend(named_after(&code, "crate::template::"));
        for m in named {
            match layer.get(m.as_str()) {
                _ if m == top || m.is_empty() || m.starts_with(char::is_uppercase) => {}
                Some(&l) if l < own => {}
                Some(_) => {
                    violations.push(format!("template/{}: {top} imports {m}", rel.display()))
                }
                // Items of the template module itself (`super::TemplateData`, ...).
                None => {}
            }
            checked += 1;
        }
    }
    assert!(
        checked > 20,
        "only {checked} imports seen: is the scan broken?"
    );
    assert!(violations.is_empty(), "{violations:#?}");
}
