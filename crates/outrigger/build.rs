//! What `outrigger version` says of the build: the git commit, `OUTRIGGER_GIT_COMMIT` from the
//! environment when set (packagers, CI), else `git rev-parse` of the source tree, else nothing
//! (the binary then says `unknown`); the compiler, `$RUSTC --version` (the rustc cargo builds
//! with); the target triple. Nothing time-dependent: the release binary is reproducible
//! (scripts/reproducible-build.sh).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=OUTRIGGER_GIT_COMMIT");
    let commit = std::env::var("OUTRIGGER_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    if let Some(c) = commit {
        println!("cargo:rustc-env=OUTRIGGER_GIT_COMMIT={c}");
    }
    // Cargo reruns the script when the compiler changes (it is part of every fingerprint).
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if let Some(v) = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
    {
        println!("cargo:rustc-env=OUTRIGGER_RUSTC_VERSION={}", v.trim());
    }
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo:rustc-env=OUTRIGGER_TARGET={target}");
    }
    // Rebuild when HEAD moves: the HEAD file, the branch it points at, packed refs (only paths
    // that exist; a missing one would rerun this script on every build).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}
