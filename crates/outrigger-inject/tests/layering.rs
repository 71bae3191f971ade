//! Module layering the compiler cannot check: inside one crate, modules may name each other
//! freely, so each crate's modules get a layer here and their non-test code may name (`crate::…`,
//! `super::…`) only modules of lower layers: no cycles, no foundation reaching up into the
//! pipeline or an orchestrator. Between crates Cargo keeps the order (outrigger-go, the
//! Go-compatible engines, cannot name this crate), so this checks what is left: the injector's
//! modules in pipeline order, outrigger-go's modules, and the template engine's modules. A new
//! module needs a layer here.
//!
//! The scan reads each source file with comments and literals blanked, removes every item under
//! `#[cfg(test)]` (a test module in the middle of a file hides nothing after it) and skips files
//! declared under `#[cfg(test)]`; it resolves `crate::` and `super::` paths (`use` groups
//! included, inline `mod x { … }` blocks counted) to the modules they name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The injector's top-level modules by layer: foundations first, orchestrators last. The
/// injector's own engines (JSON helpers, Kubernetes rules, mesh config), then the configuration,
/// then the stages in pipeline order (ingest, decide, render, merge, finish, patch, respond),
/// then `error`, the crate-wide sum of the engines' and stages' error types, then the
/// orchestrators (`inject` runs one pod and is used by the others), which return the sum.
/// Engines and stages return their own error types; naming the sum through the root
/// re-exports `crate::Error`/`crate::Result` counts as naming `error`, so no module below it may.
const LAYERS: &[(&str, u8)] = &[
    // outrigger-go's engines, re-exported at the root for the crate's own paths: below every
    // module here.
    ("go", 0),
    ("template", 0),
    ("work", 0),
    ("yaml", 0),
    ("json", 1),
    ("kube", 1),
    ("mesh", 2),
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

/// The injector's root items that are another module's: the re-exports in `lib.rs`.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("Error", "error"),
    ("Result", "error"),
    ("inject_pod", "inject"),
];

/// outrigger-go's top-level modules by layer: Go's formatting rules and the work budget, then
/// the JSON lookups, the Go type facts and YAML, then the template engine.
const ENGINE_LAYERS: &[(&str, u8)] = &[
    ("cache_memory", 0),
    ("go", 0),
    ("work", 0),
    ("json", 1),
    ("kube", 1),
    ("yaml", 1),
    ("template", 2),
];

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
    ("reuse", 7),
    ("exec", 8),
];

/// The source with comments and the contents of string and character literals blanked (every
/// byte but newlines made a space), so that the braces and paths left are the code's own.
fn blank_literals(text: &str) -> String {
    fn ident(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_'
    }
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        match b[i] {
            b'/' if next == Some(b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if next == Some(b'*') => {
                let (mut j, mut depth) = (i + 2, 1);
                while j < b.len() && depth > 0 {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 1;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 1;
                    }
                    j += 1;
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' if (i == 0
                || !ident(b[i - 1])
                || (b[i - 1] == b'b' && (i < 2 || !ident(b[i - 2]))))
                && matches!(next, Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = (open + 1..b.len())
                    .find(|&j| b[j..].starts_with(&close))
                    .unwrap_or(b.len());
                blank(&mut out, open + 1, end);
                i = end + close.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, j);
                i = j + 1;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}', '→'), else a lifetime or label.
                let end = if next == Some(b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|n| i + 2 + n)
                } else {
                    text[i + 1..]
                        .chars()
                        .next()
                        .map(|c| i + 1 + c.len_utf8())
                        .filter(|&j| b.get(j) == Some(&b'\''))
                };
                match end {
                    Some(j) => {
                        blank(&mut out, i + 1, j);
                        i = j + 1;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("only whole characters are blanked")
}

/// Where the item starting at `at` ends: after its `;` or its `{ … }` block, whichever comes
/// first outside parentheses and brackets (attributes before it are part of it).
fn item_end(code: &str, mut at: usize) -> usize {
    let b = code.as_bytes();
    let mut depth = 0i32;
    while at < b.len() {
        match b[at] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return at + 1,
            b'{' if depth == 0 => {
                let mut braces = 0;
                for (j, &c) in b.iter().enumerate().skip(at) {
                    match c {
                        b'{' => braces += 1,
                        b'}' => {
                            braces -= 1;
                            if braces == 0 {
                                return j + 1;
                            }
                        }
                        _ => {}
                    }
                }
                return b.len();
            }
            _ => {}
        }
        at += 1;
    }
    b.len()
}

/// Code without the items under `#[cfg(test)]` (blanked wherever they are in the file), and the
/// names of the modules declared there as files (`#[cfg(test)] mod tests;`).
fn production_code(text: &str) -> (String, Vec<String>) {
    const TEST: &str = "#[cfg(test)]";
    let mut code = blank_literals(text);
    let mut test_files = Vec::new();
    while let Some(at) = code.find(TEST) {
        let end = item_end(&code, at + TEST.len());
        let item = code[at + TEST.len()..end].trim();
        // `mod NAME;`, perhaps after other attributes.
        let decl = item.rsplit(']').next().unwrap_or(item).trim();
        if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
            test_files.push(name.trim().to_string());
        }
        let blanked: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { c } else { ' ' })
            .collect();
        code.replace_range(at..end, &blanked);
    }
    (code, test_files)
}

/// The paths a path or `use` tree starting at `s` names: `a::b`, `a::{b, c::d}`, `{a, b}`
/// (`*` and an empty group name nothing).
fn tree_paths(s: &str) -> Vec<Vec<String>> {
    let s = s.trim_start();
    if let Some(group) = s.strip_prefix('{') {
        let (mut depth, mut start, mut out) = (0, 0, Vec::new());
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.extend(tree_paths(&group[start..i]));
                    return out;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(tree_paths(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        return out;
    }
    let name: String = s
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() {
        return Vec::new();
    }
    let rest = s[name.len()..].trim_start();
    let subs = rest.strip_prefix("::").map(tree_paths).unwrap_or_default();
    if subs.is_empty() {
        return vec![vec![name]];
    }
    subs.into_iter()
        .map(|mut p| {
            p.insert(0, name.clone());
            p
        })
        .collect()
}

/// The module paths, from the crate root, that `code` (of the module at `module`) names through
/// `crate::` and `super::` paths. Inside an inline `mod x { … }`, `super::` is the file's module.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    fn ident(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_'
    }
    let b = code.as_bytes();
    // The open braces: `Some(name)` for those of an inline module.
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts_token = i == 0 || !(ident(b[i - 1]) || b[i - 1] == b':');
        match b[i] {
            b'{' => {
                let before = code[..i].trim_end();
                let name: String = before
                    .chars()
                    .rev()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let keyword = before[..before.len() - name.len()].trim_end();
                let is_mod = !name.is_empty()
                    && keyword.ends_with("mod")
                    && !keyword[..keyword.len() - 3]
                        .bytes()
                        .next_back()
                        .is_some_and(ident);
                braces.push(is_mod.then_some(name));
                i += 1;
            }
            b'}' => {
                braces.pop();
                i += 1;
            }
            _ if starts_token && code[i..].starts_with("crate::") => {
                out.extend(tree_paths(&code[i + "crate::".len()..]));
                i += "crate::".len();
            }
            _ if starts_token && code[i..].starts_with("super::") => {
                let mut n = 0;
                let mut j = i;
                while code[j..].starts_with("super::") {
                    n += 1;
                    j += "super::".len();
                }
                let mut here: Vec<String> = module.to_vec();
                here.extend(braces.iter().flatten().cloned());
                if n <= here.len() {
                    here.truncate(here.len() - n);
                    for p in tree_paths(&code[j..]) {
                        let mut full = here.clone();
                        full.extend(p);
                        out.push(full);
                    }
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

fn visit(dir: &Path, files: &mut Vec<PathBuf>) {
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

/// The module path of the file `rel` (relative to `src`): `a/b.rs` and `a/b/mod.rs` are `a::b`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Every production source file of a crate's `src`: its module path and its code without test
/// items; the files declared under `#[cfg(test)]` are left out.
fn production_files(src: &Path) -> Vec<(PathBuf, Vec<String>, String)> {
    let mut files = Vec::new();
    visit(src, &mut files);
    let mut test_modules = BTreeSet::new();
    let mut read = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src").to_path_buf();
        let module = module_of(&rel);
        let (code, tests) = production_code(&std::fs::read_to_string(&file).expect("readable"));
        for t in tests {
            let mut m = module.clone();
            m.push(t);
            test_modules.insert(m);
        }
        read.push((rel, module, code));
    }
    read.retain(|(_, m, _)| !(1..=m.len()).any(|n| test_modules.contains(&m[..n])));
    read
}

/// The layering of the modules under `scope` (a module path) of the crate at `src`: what each
/// file names of that level must be of a lower layer. `root_items` maps items named at that
/// level to their module; with `strict`, a name that is neither a module of `layers` nor an
/// item (capitalised) is a violation. Returns the violations and the number of names checked.
fn check(
    src: &Path,
    scope: &[&str],
    layers: &[(&str, u8)],
    root_items: &[(&str, &str)],
    strict: bool,
) -> (Vec<String>, usize) {
    let layer: BTreeMap<&str, u8> = layers.iter().copied().collect();
    let items: BTreeMap<&str, &str> = root_items.iter().copied().collect();
    let (mut violations, mut checked) = (Vec::new(), 0);
    for (rel, module, code) in production_files(src) {
        let depth = scope.len();
        if module.len() <= depth || module.iter().zip(scope).any(|(a, b)| a != b) {
            continue;
        }
        let own = module[depth].as_str();
        let Some(&own_layer) = layer.get(own) else {
            violations.push(format!("{}: module {own:?} has no layer", rel.display()));
            continue;
        };
        for path in named_paths(&code, &module) {
            if path.len() <= depth || path.iter().zip(scope).any(|(a, b)| a != b) {
                continue;
            }
            let m = items
                .get(path[depth].as_str())
                .copied()
                .unwrap_or(&path[depth]);
            checked += 1;
            match layer.get(m) {
                _ if m == own || m.starts_with(char::is_uppercase) => {}
                Some(&l) if l < own_layer => {}
                Some(_) => violations.push(format!("{}: {own} names {m}", rel.display())),
                None if strict => violations.push(format!(
                    "{}: unknown module {}",
                    rel.display(),
                    path[..=depth].join("::")
                )),
                // Items of the scope's own module (`super::TemplateData`, ...).
                None => {}
            }
        }
    }
    (violations, checked)
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

#[test]
fn injector_modules_name_only_lower_layers() {
    let (violations, checked) = check(
        &crate_src("outrigger-inject"),
        &[],
        LAYERS,
        ROOT_ITEMS,
        true,
    );
    assert!(
        checked > 100,
        "only {checked} names seen: is the scan broken?"
    );
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn engine_modules_name_only_lower_layers() {
    let (violations, checked) = check(&crate_src("outrigger-go"), &[], ENGINE_LAYERS, &[], true);
    assert!(
        checked > 50,
        "only {checked} names seen: is the scan broken?"
    );
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn template_modules_name_only_lower_layers() {
    let (violations, checked) = check(
        &crate_src("outrigger-go"),
        &["template"],
        TEMPLATE_LAYERS,
        &[],
        false,
    );
    assert!(
        checked > 20,
        "only {checked} names seen: is the scan broken?"
    );
    assert!(violations.is_empty(), "{violations:#?}");
}

/// The scan itself: code after a test module is read, `super::` is resolved from the file's
/// module (and from an inline module), groups are expanded, and comments, strings and test
/// items name nothing.
#[test]
fn the_scan_reads_what_the_compiler_would() {
    let text = r####"
use super::early;
// crate::in_comment
const S: &str = "crate::in_string { not a brace";
const R: &str = r#"super::in_raw_string "{"#;
const C: char = '{';
fn f<'a>(x: &'a str) -> &'a str { crate::a::b(x) }
#[cfg(test)]
mod tests {
    use crate::in_test;
    fn g() { let _ = "}"; }
}
#[cfg(test)]
mod tests_file;
use crate::{late, deep::{one, two::three}};
mod inline {
    use super::super::from_inline;
}
#[cfg(test)]
#[test]
fn t() { crate::in_test_fn(); }
pub use super::super::up;
"####;
    let (code, test_files) = production_code(text);
    assert_eq!(test_files, ["tests_file"]);
    let module = ["x".to_string(), "y".to_string()];
    let named: BTreeSet<String> = named_paths(&code, &module)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let want: BTreeSet<String> = [
        "x::early",
        "a::b",
        "late",
        "deep::one",
        "deep::two::three",
        "x::from_inline",
        "up",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(named, want);
}
