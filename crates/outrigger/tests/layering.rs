//! The binary's modules import downward: each command (`src/inject/`, `src/serve/`, ...: its
//! flags in `args.rs`, its behaviour beside them) may use the config loader (`config_source`),
//! the kube layer (cluster I/O) and the foundations (`report`, `print`, `pki`, `input`, the
//! shared flag groups and value parsers of `src/cli/`); the kube layer never names a command or
//! the loader; the shared flag groups name no command either. Only `cli/mod.rs` (the subcommand enum) and
//! `main.rs` sit above the commands. Scans the non-test code for `crate::…` paths.

use std::path::{Path, PathBuf};

/// The commands and the config loader: modules `src/kube/` and the shared flag groups must
/// not name.
const COMMANDS: &[&str] = &[
    "check",
    "config_source",
    "doctor",
    "drift",
    "inject",
    "man",
    "preview",
    "serve",
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
        .filter(|(_, n)| COMMANDS.contains(&n.as_str()))
        .map(|(p, n)| format!("{}: crate::{n}", p.display()))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn every_command_is_a_module_of_main() {
    let main = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs"))
        .expect("main.rs");
    let modules: Vec<&str> = main
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    for command in COMMANDS {
        assert!(modules.contains(command), "{command} not in {modules:?}");
    }
}

#[test]
fn the_shared_flag_groups_import_no_command() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let paths: Vec<(PathBuf, String)> = crate_paths(&cli)
        .into_iter()
        .filter(|(p, _)| !p.ends_with("mod.rs"))
        .collect();
    assert!(paths.len() >= 3, "only {} paths scanned", paths.len());
    let violations: Vec<String> = paths
        .iter()
        .filter(|(_, n)| COMMANDS.contains(&n.as_str()))
        .map(|(p, n)| format!("{}: crate::{n}", p.display()))
        .collect();
    assert!(violations.is_empty(), "{violations:#?}");
}
