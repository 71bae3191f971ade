//! The support matrix's Istio column, checked on the releases' own configuration
//! (`releases/<tag>/` of Istio's corpus, each rendered from the release's chart, and the corpus'
//! `settings/*` variants of Istio's main branch): every template of every one parses, calls
//! nothing outrigger lacks ([`outrigger_inject::unsupported`]), and the configuration is usable
//! ([`outrigger_inject::guard::assess`]), so `serve` is ready with it. The releases listed must
//! be exactly [`VERIFIED_ISTIO`], the minors `serve` names in its findings.

#[path = "../../outrigger-go/tests/go_oracle/mod.rs"]
mod go_oracle;
#[path = "../../outrigger-go/tests/harness/mod.rs"]
mod harness;

use std::path::Path;

use outrigger_inject::config::Snapshot;
use outrigger_inject::guard;
use outrigger_inject::unsupported::{config_findings, VERIFIED_ISTIO};

/// The releases of the corpus, tag by tag.
const RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

/// The configuration in `dir` (`config.yaml`, `values.json`, `mesh.yaml`): its findings and
/// verdict, or the load error.
fn judge(dir: &Path) -> Result<(), String> {
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()))
    };
    let config = read("config.yaml")?;
    let found = config_findings(&config);
    if !found.is_empty() {
        let list: Vec<String> = found.iter().map(|f| f.to_string()).collect();
        return Err(list.join("\n"));
    }
    let snap = Snapshot::load(&config, &read("values.json")?, Some(&read("mesh.yaml")?))
        .map_err(|e| e.to_string())?;
    for native in [false, true] {
        guard::assess(&snap, native).map_err(|e| format!("native {native}: {e}"))?;
    }
    Ok(())
}

fn releases_use_nothing_outrigger_lacks() {
    let root = harness::corpus_dir();
    let minors: Vec<&str> = RELEASES
        .iter()
        .map(|t| t.rsplit_once('.').map_or(*t, |(m, _)| m))
        .collect();
    assert_eq!(
        minors, VERIFIED_ISTIO,
        "VERIFIED_ISTIO names the releases tested here"
    );
    let mut dirs: Vec<_> = RELEASES
        .iter()
        .map(|t| root.join("releases").join(t))
        .collect();
    let mut variants: Vec<_> = std::fs::read_dir(root.join("settings"))
        .expect("settings")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("config.yaml").exists())
        .collect();
    variants.sort();
    assert!(!variants.is_empty(), "settings variants");
    dirs.extend(variants);
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| judge(d).err().map(|e| format!("{}: {e}", d.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn main() {
    harness::run(vec![harness::trial(
        "releases_use_nothing_outrigger_lacks",
        &[harness::Need::Corpus],
        releases_use_nothing_outrigger_lacks,
    )]);
}
