//! `kubernetes-validate --strict` for the manifest tests (PyPI `kubernetes-validate`).

use std::path::Path;
use std::process::Command;

/// Whether `cmd arg` runs successfully here (tools the tests skip without).
pub fn tool_available(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run `kubernetes-validate --strict --quiet` over `paths`: (all valid, its report).
pub fn kubernetes_validate<P: AsRef<Path>>(paths: &[P]) -> (bool, String) {
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "--quiet"])
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
