//! Tells the crate's unit tests whether Istio's conformance corpus is beside the checkout
//! (`../shared/conformance/istio`, where they read it): the tests that read it are `#[cfg_attr(not(corpus_present), ignore = ...)]`, so without it `cargo test` reports
//! them ignored, with the reason, rather than `ok`. With `OUTRIGGER_REQUIRE_CORPUS=1` or `CI=true` (the
//! harness's rule) a missing corpus fails the build. The check is made again when this file or that variable
//! changes, or when the corpus file does (`touch crates/outrigger-inject/build.rs` after adding
//! `../shared`). Nothing here reaches the library's own code.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(corpus_present)");
    println!("cargo::rerun-if-env-changed=OUTRIGGER_REQUIRE_CORPUS");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-changed=build.rs");
    // The directory cargo runs this script for (read at run time: a script binary reused from
    // another checkout must not look beside that one).
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let cases = PathBuf::from(dir).join("../../../shared/conformance/istio/cases.json");
    if cases.exists() {
        println!("cargo::rustc-cfg=corpus_present");
        println!("cargo::rerun-if-changed={}", cases.display());
    } else if std::env::var("OUTRIGGER_REQUIRE_CORPUS").is_ok_and(|v| v == "1")
        || std::env::var("CI").is_ok_and(|v| v == "true")
    {
        panic!(
            "OUTRIGGER_REQUIRE_CORPUS=1 or CI=true, but Istio's conformance corpus is not at {}",
            cases.display()
        );
    }
}
