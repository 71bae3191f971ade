//! The binary's kube layer (cluster I/O) does not import the command modules: commands call
//! it, never the other way round. Scans the non-test code of `src/kube/` for `crate::…` paths.
//! The flag definitions (`src/cli/`) are below both: they name no module of the crate (only
//! crate-root value parsers), so the kube layer may take its flag structs from there.

use std::path::{Path, PathBuf};

/// Modules `src/kube/` must not name: the commands and the server that use it.
const ABOVE_KUBE: &[&str] = &[
    "check_cmd",
    "inject_cmd",
    "input",
    "man",
    "serve",
    "settings",
    "webhook_config",
];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, name)` for every `crate::name` (and `crate::{a, b}` group) in the non-test code of
/// the files under `dir`.
fn crate_paths(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    sources(dir, &mut files);
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
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
                out.extend(names.into_iter().map(|n| (path.clone(), n.to_string())));
            }
        }
    }
    out
}

#[test]
fn the_kube_layer_imports_no_command_module() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kube");
    let paths = crate_paths(&dir);
    assert!(paths.len() >= 5, "only {} paths scanned", paths.len());
    let violations: Vec<String> = paths
        .iter()
        .filter(|(_, n)| ABOVE_KUBE.contains(&n.as_str()))
        .map(|(p, n)| format!("{}: crate::{n}", p.display()))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn the_flag_definitions_import_no_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let main = std::fs::read_to_string(src.join("main.rs")).expect("main.rs");
    let modules: Vec<&str> = main
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    assert!(
        modules.contains(&"kube") && modules.contains(&"cli"),
        "{modules:?}"
    );
    let violations: Vec<String> = crate_paths(&src.join("cli"))
        .iter()
        .filter(|(_, n)| modules.contains(&n.as_str()))
        .map(|(p, n)| format!("{}: crate::{n}", p.display()))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
}
