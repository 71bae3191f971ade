//! outrigger: Istio-compatible sidecar injector.

fn main() -> anyhow::Result<()> {
    Ok(())
}
