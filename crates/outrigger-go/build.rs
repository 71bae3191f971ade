//! Tells the crate's unit tests whether Istio's conformance corpus is beside the checkout
//! (`../shared/conformance/istio`, where the YAML and template tests read it): those tests are
//! `#[cfg_attr(not(corpus_present), ignore = ...)]`, so without it `cargo test` reports them
//! ignored, with the reason. With `OUTRIGGER_REQUIRE_CORPUS=1` or `CI=true` a missing corpus
//! fails the build (the same rule as outrigger-inject's build script). Nothing here reaches the
//! library's own code.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(corpus_present)");
    println!("cargo::rerun-if-env-changed=OUTRIGGER_REQUIRE_CORPUS");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-changed=build.rs");
    // The directory cargo runs this script for (read at run time: a script binary reused from
    // another checkout must not look beside that one).
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let cases = std::path::Path::new(&dir).join("../../../shared/conformance/istio/cases.json");
    let required = std::env::var("OUTRIGGER_REQUIRE_CORPUS").is_ok_and(|v| v == "1")
        || std::env::var("CI").is_ok_and(|v| v == "true");
    if cases.exists() {
        println!("cargo::rustc-cfg=corpus_present");
        println!("cargo::rerun-if-changed={}", cases.display());
    } else if required {
        panic!(
            "Istio's conformance corpus is required but not at {}",
            cases.display()
        );
    }
}
