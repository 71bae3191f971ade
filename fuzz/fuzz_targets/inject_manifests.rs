//! Arbitrary bytes into `kube_inject::inject_manifests` with the embedded default configuration,
//! as `outrigger inject` runs it. Any input must give `Ok` or `Err`, never a panic; the output
//! of a successful run must parse again (and, with `FUZZ_IDEMPOTENCE=1`, inject to itself).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use outrigger_go::yaml;
use outrigger_inject::config::defaults;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::inject::Settings;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};

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
        settings: Settings {
            snapshot: snapshot(),
            native_sidecars: flags & 1 == 1,
            revision: if flags & 2 == 2 { "canary" } else { "" },
            compliance_policy: "",
        },
        reinject: false,
    };
    let Ok(out) = kube_inject::inject_manifests(text, &opts) else {
        return;
    };
    for d in yaml::split_documents(&out.text).expect("output splits") {
        yaml::from_str(&d).expect("output documents parse");
    }
    // With FUZZ_IDEMPOTENCE set, re-injecting the output must give it back unchanged.
    if std::env::var_os("FUZZ_IDEMPOTENCE").is_some() {
        match kube_inject::inject_manifests(&out.text, &opts) {
            Ok(again) => assert_eq!(again.text, out.text, "re-injection changed the output"),
            Err(e) => panic!("re-injecting the output failed: {e}\noutput:\n{}", out.text),
        }
    }
});
