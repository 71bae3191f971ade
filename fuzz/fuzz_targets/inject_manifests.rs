//! Arbitrary bytes into `workload::inject_manifests` with the embedded default configuration,
//! as `outrigger inject` runs it. Any input must give `Ok` or `Err`, never a panic; the output
//! of a successful run must parse again.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::workload::{self, KubeInjectOptions};
use outrigger_inject::{defaults, yaml};

fn snapshot() -> &'static Snapshot {
    static SNAPSHOT: OnceLock<Snapshot> = OnceLock::new();
    SNAPSHOT.get_or_init(|| {
        let config =
            InjectorConfig::parse_for_kube_inject(defaults::CONFIG).expect("embedded config loads");
        Snapshot::with_config(config, defaults::VALUES, Some(defaults::MESH))
            .expect("embedded snapshot loads")
    })
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options, the rest is the manifest stream.
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let opts = KubeInjectOptions {
        snapshot: snapshot(),
        native_sidecars: flags & 1 == 1,
        revision: if flags & 2 == 2 { "canary" } else { "" },
        compliance_policy: "",
    };
    if let Ok(out) = workload::inject_manifests(text, &opts) {
        for d in yaml::split_documents(&out.text).expect("output splits") {
            yaml::from_str(d).expect("output documents parse");
        }
    }
});
