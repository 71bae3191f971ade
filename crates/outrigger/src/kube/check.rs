//! `outrigger check --kube`: explain a live pod, or a new pod in a live namespace.

use anyhow::{bail, Result};

use crate::check_cmd::CheckArgs;

/// Run the live mode of `outrigger check`.
pub fn run(args: &CheckArgs) -> Result<()> {
    let _ = args;
    bail!("--kube is not available yet")
}
