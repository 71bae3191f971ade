//! `outrigger man`: the man pages, rendered (clap_mangen) from the same flag definitions the
//! binary parses with ([`crate::cli`]).

use crate::print;
use anyhow::{Context, Result};

/// Flags of `outrigger man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (default: the page of `outrigger` itself).
    pub subcommand: Option<String>,
    /// Write every page (`outrigger.1`, `outrigger-inject.1`, ...) into this directory instead.
    #[arg(long = "dir", conflicts_with = "subcommand")]
    pub dir: Option<std::path::PathBuf>,
}

/// The man pages: (subcommand, roff), the page of `outrigger` itself under `""`, then one per
/// visible subcommand in the order of `outrigger --help`.
fn pages() -> Vec<(String, String)> {
    let mut cmd = crate::cli::command().disable_help_subcommand(true);
    cmd.build();
    let render = |cmd: clap::Command| {
        let mut roff = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut roff)
            .expect("rendering into memory cannot fail");
        String::from_utf8_lossy(&roff).into_owned()
    };
    let mut out = vec![(String::new(), render(cmd.clone()))];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push((sub.get_name().to_string(), render(sub.clone())));
    }
    out
}

/// File name of a page: `outrigger.1`, `outrigger-inject.1`.
fn file_name(subcommand: &str) -> String {
    if subcommand.is_empty() {
        "outrigger.1".to_string()
    } else {
        format!("outrigger-{subcommand}.1")
    }
}

/// Run `outrigger man`.
pub fn run(args: &ManArgs) -> Result<()> {
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, roff) in pages() {
            let path = dir.join(file_name(&name));
            std::fs::write(&path, roff).with_context(|| format!("writing {}", path.display()))?;
            crate::print::stdout(&format!("{}\n", path.display()))?;
        }
        return Ok(());
    }
    let name = args.subcommand.as_deref().unwrap_or("");
    let pages = pages();
    let Some((_, roff)) = pages.iter().find(|(n, _)| n == name) else {
        let known: Vec<&str> = pages
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !n.is_empty())
            .collect();
        // A usage error, worded and exiting (status 2) as clap's own flag errors do.
        let mut cmd = crate::cli::command();
        cmd.build();
        let man = cmd.find_subcommand_mut("man").expect("the man subcommand");
        man.error(
            clap::error::ErrorKind::InvalidValue,
            format!(
                "no man page for '{name}'\n  [possible values: {}]",
                known.join(", ")
            ),
        )
        .exit();
    };
    print::stdout(roff)
}
