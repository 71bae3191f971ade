//! `tools/check_sbom.py`, the check CI runs on cargo-cyclonedx's SBOM, on SBOMs written here
//! from Cargo.lock: it names what is missing, what the binary does not depend on (a
//! dev-dependency, another platform's crate) and a checksum that differs. (CI runs it on the
//! real SBOM; this proves that it can fail.) Needs python3 ≥ 3.11 (`tomllib`): without it the
//! test says so and passes, except under CI (`CI=true`), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether python3 with `tomllib` runs here (a notice when not; a failure under CI).
fn python_here() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import tomllib"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3 >= 3.11 is required under CI"
        );
        eprintln!("NOTICE: python3 >= 3.11 (tomllib) not found: tools/check_sbom.py not tried");
    }
    ok
}

/// `(name, version, checksum)` of every package of Cargo.lock.
fn locked() -> Vec<(String, String, Option<String>)> {
    let text = std::fs::read_to_string(repo().join("Cargo.lock")).expect("Cargo.lock");
    let mut out = Vec::new();
    for block in text.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
                .map(|v| v.trim_end_matches('"').to_string())
        };
        out.push((
            field("name").expect("name"),
            field("version").expect("version"),
            field("checksum"),
        ));
    }
    out
}

/// A CycloneDX SBOM of `outrigger` listing `packages` (with their checksums as SHA-256).
fn sbom(packages: &[(String, String, Option<String>)]) -> Value {
    let components: Vec<Value> = packages
        .iter()
        .map(|(n, v, sum)| {
            let mut c = json!({"type": "library", "name": n, "version": v,
                "purl": format!("pkg:cargo/{n}@{v}")});
            if let Some(sum) = sum {
                c["hashes"] = json!([{"alg": "SHA-256", "content": sum}]);
            }
            c
        })
        .collect();
    json!({"bomFormat": "CycloneDX", "specVersion": "1.5",
        "metadata": {"component": {"type": "application", "name": "outrigger", "version": "0.1.0"}},
        "components": components})
}

/// Run the check on `bom` for x86_64 Linux: (passed, stderr + stdout).
fn check(name: &str, bom: &Value) -> (bool, String) {
    let path =
        std::env::temp_dir().join(format!("outrigger-sbom-{name}-{}.json", std::process::id()));
    std::fs::write(&path, bom.to_string()).expect("write SBOM");
    let out = Command::new("python3")
        .arg(repo().join("tools/check_sbom.py"))
        .arg(&path)
        .args(["--target", "x86_64-unknown-linux-gnu"])
        .env("CARGO", env!("CARGO"))
        .current_dir(repo())
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_file(&path);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (out.status.success(), text)
}

#[test]
fn the_sbom_check_names_missing_extra_and_tampered_crates() {
    if !python_here() {
        return;
    }
    let all = locked();
    assert!(all.len() > 100, "{} packages", all.len());
    // Every locked package: too many (dev-only and other platforms' crates).
    let (ok, report) = check("all", &sbom(&all));
    assert!(!ok, "{report}");
    for extra in ["libtest-mimic", "cel", "tower-test"] {
        assert!(
            report.contains(&format!("extra: {extra} "))
                && report.contains("the binary does not depend on it"),
            "{extra} is a dev-dependency only: {report}"
        );
    }
    assert!(
        report.contains("extra: windows-sys "),
        "another platform's crate: {report}"
    );
    assert!(!report.contains("missing:"), "{report}");
    // What the check accepts, from its own verdict: every locked package but the extras.
    let extras: Vec<&str> = report
        .lines()
        .filter_map(|l| l.trim().strip_prefix("extra: "))
        .collect();
    let kept: Vec<_> = all
        .iter()
        .filter(|(n, v, _)| !extras.iter().any(|e| e.starts_with(&format!("{n} {v} "))))
        .cloned()
        .collect();
    let (ok, report) = check("kept", &sbom(&kept));
    assert!(ok, "{report}");
    assert!(
        kept.iter().any(|(n, _, _)| n == "tokio")
            && kept.iter().any(|(n, _, _)| n == "outrigger-inject")
    );
    // A crate the binary links, left out; a checksum that is not Cargo.lock's.
    let mut tampered: Vec<_> = kept
        .iter()
        .filter(|(n, _, _)| n != "tokio")
        .cloned()
        .collect();
    let serde = tampered
        .iter_mut()
        .find(|(n, _, _)| n == "serde")
        .expect("serde");
    serde.2 = Some("0".repeat(64));
    let (ok, report) = check("tampered", &sbom(&tampered));
    assert!(!ok, "{report}");
    assert!(report.contains("missing: tokio "), "{report}");
    assert!(
        report.contains("serde ") && report.contains("differs from Cargo.lock's"),
        "{report}"
    );
}
