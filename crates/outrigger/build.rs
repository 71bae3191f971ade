//! Build-time outputs of the binary:
//!
//! * the git commit of the build for `outrigger version`: `OUTRIGGER_GIT_COMMIT` from the
//!   environment when set (packagers, CI), else `git rev-parse` of the source tree, else nothing
//!   (the binary then says `unknown`);
//! * the man pages (clap_mangen), rendered from the binary's own flag definitions (`src/cli/`,
//!   which depends on clap alone) into `$OUT_DIR/man/`, one page per subcommand, plus
//!   `$OUT_DIR/man_pages.rs`, the table `outrigger man` prints from.

use std::path::Path;
use std::process::Command;

#[allow(dead_code)]
#[path = "src/cli/mod.rs"]
mod cli;

/// The crate-root value parser `src/cli` expects (the binary's is Go's `time.ParseDuration`
/// from the library). Rendering man pages parses no flag value, so this one only refuses.
#[allow(dead_code)]
fn parse_duration_flag(s: &str) -> Result<std::time::Duration, String> {
    Err(format!("{s:?}: durations are not parsed at build time"))
}

/// What `src/cli` parses `--native-sidecars` into: the binary's is the library's native-sidecar
/// mode; rendering man pages parses no flag value, so the text is enough here.
#[allow(dead_code)]
type NativeMode = String;

/// The crate-root reader of a `--native-sidecars` value `src/cli` expects.
#[allow(dead_code)]
fn native_mode_value(value: String) -> NativeMode {
    value
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Render `outrigger.1` and `outrigger-SUBCOMMAND.1` into `out/man/` and the table of pages
/// (`(subcommand, roff)`, the root page under `""`) into `out/man_pages.rs`.
fn man_pages(out: &Path) -> std::io::Result<()> {
    let dir = out.join("man");
    std::fs::create_dir_all(&dir)?;
    let mut cmd = cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut table = String::from(
        "/// The man pages: (subcommand, roff); the page of `outrigger` itself is under \"\".\n\
         pub const PAGES: &[(&str, &str)] = &[\n",
    );
    let mut page = |key: &str, cmd: clap::Command| -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd);
        let path = dir.join(man.get_filename());
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        std::fs::write(&path, roff)?;
        table.push_str(&format!(
            "    ({key:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
        Ok(())
    };
    page("", cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        page(sub.get_name(), sub.clone())?;
    }
    table.push_str("];\n");
    std::fs::write(out.join("man_pages.rs"), table)
}

fn main() {
    println!("cargo:rerun-if-changed=src/cli");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    man_pages(Path::new(&out)).expect("rendering the man pages into OUT_DIR");
    println!("cargo:rerun-if-env-changed=OUTRIGGER_GIT_COMMIT");
    let commit = std::env::var("OUTRIGGER_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    if let Some(c) = commit {
        println!("cargo:rustc-env=OUTRIGGER_GIT_COMMIT={c}");
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
