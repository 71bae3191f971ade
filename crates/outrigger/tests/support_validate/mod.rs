//! The manifest tools of the deploy tests: `kubernetes-validate --strict` (PyPI
//! `kubernetes-validate`) and `kubectl kustomize` of `deploy/`.
#![allow(dead_code)] // each user takes some

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's `deploy/` directory.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// `kubectl kustomize deploy/<dir>`: the manifests it builds, with no warning about deprecated
/// fields.
pub fn kustomize(dir: &str) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(deploy_dir().join(dir))
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("deprecated"),
        "kubectl kustomize {dir} warns about deprecated fields: {stderr}"
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Whether `cmd arg` runs successfully here (tools the tests skip without).
pub fn tool_available(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run `kubernetes-validate --strict --quiet` over `paths`: (all valid, its report).
pub fn kubernetes_validate<P: AsRef<Path>>(paths: &[P]) -> (bool, String) {
    validate_with(&[], paths)
}

/// [`kubernetes_validate`] against the schema of Kubernetes `version` (`1.30.0`).
pub fn kubernetes_validate_at<P: AsRef<Path>>(version: &str, paths: &[P]) -> (bool, String) {
    validate_with(&["--kubernetes-version", version], paths)
}

fn validate_with<P: AsRef<Path>>(args: &[&str], paths: &[P]) -> (bool, String) {
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "--quiet"])
        .args(args)
        .args(paths.iter().map(AsRef::as_ref))
        .output()
        .expect("kubernetes-validate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && !text.contains("ERROR"), text)
}
