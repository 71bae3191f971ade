//! The files of `examples/` that the docs point users at: the sample AdmissionReview that
//! docs/serve.md sends with curl, and the values file of each supported Istio release
//! (`examples/values/istio-<tag>.yaml`, written by scripts/release-values.py).

mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

fn repo(rel: &str) -> String {
    format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// The Istio releases outrigger is verified against, each with a values file.
const RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

#[test]
fn each_release_values_file_loads_and_names_its_proxy_image() {
    for tag in RELEASES {
        let values = repo(&format!("examples/values/istio-{tag}.yaml"));
        let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args([
                "inject",
                "-f",
                &repo("examples/hello.yaml"),
                "--valuesFile",
                &values,
            ])
            .env_remove("ENABLE_NATIVE_SIDECARS")
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{tag}: {stderr}");
        assert!(!stderr.contains("warning"), "{tag}: {stderr}");
        let image = format!("image: docker.io/istio/proxyv2:{tag}\n");
        assert_eq!(stdout.matches(&image).count(), 2, "{tag}: {stdout}");
        // check reads it the same way.
        let check = Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args([
                "check",
                "-f",
                &repo("examples/hello.yaml"),
                "--valuesFile",
                &values,
            ])
            .args(["--namespace-labels", "istio.io/rev=outrigger"])
            .output()
            .expect("runs");
        assert!(
            check.status.success(),
            "{tag}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[tokio::test]
async fn the_sample_review_of_docs_serve_md_is_answered_with_a_patch() {
    let docs = std::fs::read_to_string(repo("docs/serve.md")).expect("docs/serve.md");
    assert!(
        docs.contains("--data @examples/review.json https://localhost:9443/inject"),
        "docs/serve.md sends the sample"
    );
    let review = std::fs::read(repo("examples/review.json")).expect("examples/review.json");
    let sent: Value = serde_json::from_slice(&review).expect("JSON");
    let (server, ca) = server::start_embedded("examples-review", &[]);
    let client = H2::connect(server.addr, &ca).await.expect("connect");
    let resp = client.post("/inject", review).await.expect("answer");
    assert_eq!(resp.status, 200);
    let answer: Value = serde_json::from_slice(&resp.body).expect("JSON answer");
    assert_eq!(answer["kind"], "AdmissionReview");
    assert_eq!(answer["response"]["uid"], sent["request"]["uid"]);
    assert_eq!(answer["response"]["allowed"], true);
    assert_eq!(answer["response"]["patchType"], "JSONPatch");
    let patch = answer["response"]["patch"].as_str().expect("a patch");
    assert!(!patch.is_empty());
}
