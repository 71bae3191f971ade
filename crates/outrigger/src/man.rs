//! `outrigger man`: the man pages rendered at build time (build.rs, clap_mangen) from the same
//! flag definitions the binary parses with ([`crate::cli`]).

use std::io::Write;

use anyhow::{Context, Result};

use crate::cli::ManArgs;

include!(concat!(env!("OUT_DIR"), "/man_pages.rs"));

/// File name of a page: `outrigger.1`, `outrigger-inject.1`.
fn file_name(subcommand: &str) -> String {
    if subcommand.is_empty() {
        "outrigger.1".to_string()
    } else {
        format!("outrigger-{subcommand}.1")
    }
}

/// The roff of the page of `subcommand` (`""`: the page of `outrigger` itself).
pub fn page(subcommand: &str) -> Option<&'static str> {
    PAGES
        .iter()
        .find(|(name, _)| *name == subcommand)
        .map(|(_, roff)| *roff)
}

/// Run `outrigger man`.
pub fn run(args: &ManArgs) -> Result<()> {
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, roff) in PAGES {
            let path = dir.join(file_name(name));
            std::fs::write(&path, roff).with_context(|| format!("writing {}", path.display()))?;
            println!("{}", path.display());
        }
        return Ok(());
    }
    let name = args.subcommand.as_deref().unwrap_or("");
    let Some(roff) = page(name) else {
        let known: Vec<&str> = PAGES
            .iter()
            .map(|(n, _)| *n)
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
    let mut out = std::io::stdout().lock();
    out.write_all(roff.as_bytes())
        .and_then(|()| out.flush())
        .context("writing standard output")
}
