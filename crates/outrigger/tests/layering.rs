//! The binary's modules import downward: each command (`src/inject/`, `src/serve/`, ...: its
//! flags in `args.rs`, its behaviour beside them) may use the library crates (the cluster
//! integration and configuration loading of `outrigger-kube`, the injector of
//! `outrigger-inject`) and the binary's foundations (`print`, `input`, the shared flag groups
//! and value parsers of `src/cli/`); the shared flag groups name no command. Only `cli/mod.rs`
//! (the subcommand enum) and `main.rs` sit above the commands.
//!
//! What the compiler keeps is not scanned here: `outrigger-kube` is a crate of its own, which
//! cannot name the binary's commands or its flags. What remains is within the binary's crate,
//! where any module may name any other: this test scans the shared flag groups' code (tests
//! included) for paths to a command, `crate::…` and `super::super::…` alike.

use std::path::{Path, PathBuf};

/// The commands: modules the shared flag groups must not name.
const COMMANDS: &[&str] = &[
    "check",
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

/// How many modules deep `file` (under `src`) is: `src/cli/mod.rs` 1, `src/cli/common.rs` 2.
fn depth(src: &Path, file: &Path) -> usize {
    let parts = file
        .strip_prefix(src)
        .expect("under src")
        .components()
        .count();
    if file.ends_with("mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The crate-root modules a path names at the start of `rest`: `name` or each of `{a, b}`.
fn names(rest: &str) -> Vec<String> {
    match rest.strip_prefix('{') {
        Some(group) => group
            .split('}')
            .next()
            .unwrap_or("")
            .split(',')
            .map(|s| s.trim().split("::").next().unwrap_or("").to_string())
            .collect(),
        None => vec![rest
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or("")
            .to_string()],
    }
}

/// The crate-root modules `text` (a file `depth` modules deep) names: `crate::name`,
/// `crate::{a, b}`, and `super::` chains that climb to the root (`super::super::name` in
/// `src/cli/common.rs`). Comments are skipped; tests are not.
fn root_names(text: &str, depth: usize) -> Vec<String> {
    let up = "super::".repeat(depth);
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        for prefix in ["crate::", up.as_str()] {
            for (i, _) in line.match_indices(prefix) {
                let rest = &line[i + prefix.len()..];
                // A longer `super::` chain climbs out of the crate: not a module of it.
                if prefix == up && (line[..i].ends_with("super::") || rest.starts_with("super::")) {
                    continue;
                }
                out.extend(names(rest));
            }
        }
    }
    out
}

/// `(file, name)` for every crate-root module named by the files under `dir` (of the binary's
/// `src`).
fn crate_paths(dir: &Path) -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(dir, &mut files);
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let found = root_names(&text, depth(&src, &path));
        out.extend(found.into_iter().map(|n| (path.clone(), n)));
    }
    out
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

#[test]
fn the_scan_finds_root_paths_however_written() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(depth(&src, &src.join("cli/mod.rs")), 1);
    assert_eq!(depth(&src, &src.join("cli/common.rs")), 2);
    // A file of `src/cli/` (two deep) naming a command each way, or not at all.
    let cases = [
        ("use crate::serve::args;", Some("serve")),
        ("use crate::{cli, drift::args};", Some("drift")),
        ("use super::super::inject::run;", Some("inject")),
        (
            "#[cfg(test)]\nmod t { fn f() { crate::doctor::run(); } }",
            Some("doctor"),
        ),
        ("use super::values; // crate::serve", None),
        ("use super::super::super::serve;", None),
        ("use crate::cli::values;", None),
    ];
    for (code, want) in cases {
        let found = root_names(code, 2);
        let hit = found.iter().find(|n| COMMANDS.contains(&n.as_str()));
        assert_eq!(hit.map(String::as_str), want, "{code}: {found:?}");
    }
}
