//! The binary's kube layer (cluster I/O) does not import the command modules: commands call
//! it, never the other way round. Scans the non-test code of `src/kube/` for `crate::…` paths.

use std::path::Path;

/// Modules `src/kube/` must not name: the commands and the server that use it.
const ABOVE_KUBE: &[&str] = &["check_cmd", "inject_cmd", "input", "serve", "settings"];

#[test]
fn the_kube_layer_imports_no_command_module() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kube");
    let mut violations = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("src/kube").flatten() {
        let path = entry.path();
        let text = std::fs::read_to_string(&path).expect("readable");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        files += 1;
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or("");
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .map(|s| s.trim().split("::").next().unwrap_or(""))
                        .collect(),
                    None => vec![rest
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or("")],
                };
                for n in names {
                    if ABOVE_KUBE.contains(&n) || n.starts_with("cli") {
                        violations.push(format!("{}: crate::{n}", path.display()));
                    }
                }
            }
        }
    }
    assert!(files >= 5, "only {files} files scanned");
    assert!(violations.is_empty(), "{violations:#?}");
}
