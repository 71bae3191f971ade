//! Inputs shared by the YAML differential tests (`go_yaml.rs`, `yaml_fast.rs`) and the benches
//! (`benches/support`, by `#[path]`): the Istio conformance corpus, injector snapshots from its
//! settings, the texts its kube-inject cases parse, the webhook parameters of the hello
//! Deployment, and the seeded PRNG of the mutation tests.
#![allow(dead_code)] // each user takes some

use std::path::{Path, PathBuf};

use outrigger_go::yaml;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::ingest::workload::WorkloadMeta;
use outrigger_inject::inject::Settings;
use outrigger_inject::inject::{InjectParams, Mode};
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use serde_json::Value;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Istio conformance corpus (`$OUTRIGGER_CORPUS`, else `../shared/conformance/istio` beside
/// the workspace), when present.
pub fn corpus() -> Option<PathBuf> {
    let p = absent::corpus_dir();
    p.join("cases.json").exists().then_some(p)
}

/// The harness' rule for where the corpus is (`tests/harness/absent.rs`).
// A test binary may take this file through more than one of the helpers that share it.
#[allow(clippy::duplicate_mod)]
#[path = "../../../outrigger-go/tests/harness/absent.rs"]
mod absent;

/// A snapshot of the settings in `settings` (config.yaml, values.json) with the mesh
/// configuration `mesh`; `kube_inject` parses the config as `istioctl kube-inject` does. `None`
/// when a file is missing or does not load.
pub fn snapshot(settings: &Path, mesh: &Path, kube_inject: bool) -> Option<Snapshot> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let text = read(&settings.join("config.yaml"))?;
    let config = if kube_inject {
        InjectorConfig::parse_for_kube_inject(&text).ok()?
    } else {
        InjectorConfig::parse(&text).ok()?
    };
    Snapshot::with_config(
        config,
        &read(&settings.join("values.json"))?,
        Some(&read(mesh)?),
    )
    .ok()
}

/// Every text parsed while running the corpus' kube-inject cases (inputs, configs, meshes,
/// rendered templates, annotations): (case name, text).
pub fn corpus_injection_texts(root: &Path) -> Vec<(String, String)> {
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("cases.json")).expect("cases"))
            .expect("cases.json");
    let mut out = Vec::new();
    for c in &cases {
        if c.get("kube_inject").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let settings = root.join(s("settings"));
        let mesh = match c.get("mesh_override").and_then(Value::as_str) {
            Some(m) => root.join(m),
            None => settings.join("mesh.yaml"),
        };
        let Ok(input) = std::fs::read_to_string(root.join(s("input"))) else {
            continue;
        };
        let (_, texts) = yaml::traced(|| {
            let Some(snapshot) = snapshot(&settings, &mesh, true) else {
                return;
            };
            let opts = KubeInjectOptions {
                settings: Settings {
                    snapshot: &snapshot,
                    native_sidecars: c.get("native_sidecars").and_then(Value::as_bool)
                        == Some(true),
                    revision: "",
                    compliance_policy: "",
                },
                reinject: false,
            };
            let _ = kube_inject::inject_manifests(&input, &opts);
        });
        out.extend(texts.into_iter().map(|t| (s("name").to_string(), t)));
    }
    out
}

/// Webhook-mode parameters for the hello Deployment (`default/hello`, revision `default`).
pub fn hello_params(s: &Snapshot, native_sidecars: bool) -> InjectParams<'_> {
    InjectParams {
        snapshot: s,
        mode: Mode::Webhook,
        workload: WorkloadMeta {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            name: "hello".into(),
            namespace: "default".into(),
        },
        revision: "default",
        native_sidecars,
        proxy_envs: Default::default(),
        proxy_uid_gid: None,
        compliance_policy: "",
    }
}

/// A small fixed-seed PRNG (xorshift64*), so that failures of the mutation tests reproduce.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Every file below `dir`, not descending into directories named in `skip`.
pub fn walk(dir: &Path, skip: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !skip.contains(&name.as_str()) {
                walk(&p, skip, out);
            }
        } else {
            out.push(p);
        }
    }
}
