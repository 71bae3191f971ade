//! deploy/: every manifest validates with `kubernetes-validate --strict`, `kubectl kustomize`
//! builds the base and the HA overlay (each skipped with a notice when the tool is absent), and
//! the checked-in MutatingWebhookConfiguration is exactly what `outrigger webhook-config` prints
//! without flags, and the rendered base agrees with the binary's defaults (`src/cli/defaults.rs`).

use std::path::PathBuf;
use std::process::Command;

mod support_validate;

use support_validate::{deploy_dir, kubernetes_validate as validate, kustomize, tool_available};

/// The binary's shared defaults (constants only), as `serve` and `webhook-config` use them.
#[path = "../src/cli/defaults.rs"]
#[allow(dead_code)]
mod defaults;

/// The base's resource files (everything but kustomization.yaml).
fn base_manifests() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir().join("base"))
        .expect("deploy/base exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "yaml") && !p.ends_with("kustomization.yaml")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn base_manifests_validate_strictly() {
    if !tool_available("kubernetes-validate", "--version") {
        eprintln!("NOTICE: kubernetes-validate not found; deploy/ validation skipped");
        return;
    }
    let files = base_manifests();
    assert!(
        files.len() >= 7,
        "expected the base's resources, found {files:?}"
    );
    let (ok, report) = validate(&files);
    assert!(ok, "{report}");
}

#[test]
fn kustomize_builds_base_and_ha_overlay_and_output_validates() {
    if !tool_available("kubectl", "version") && !tool_available("kubectl", "--help") {
        eprintln!("NOTICE: kubectl not found; kubectl kustomize checks skipped");
        return;
    }
    let validator = tool_available("kubernetes-validate", "--version");
    if !validator {
        eprintln!("NOTICE: kubernetes-validate not found; kustomize output not validated");
    }
    let dir = std::env::temp_dir().join(format!("outrigger-kube-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for overlay in ["base", "overlays/ha"] {
        let text = kustomize(overlay);
        for kind in [
            "kind: Namespace",
            "kind: ServiceAccount",
            "kind: Role\n",
            "kind: RoleBinding",
            "kind: ClusterRole\n",
            "kind: ClusterRoleBinding",
            "kind: Service\n",
            "kind: Deployment",
            "kind: PodDisruptionBudget",
            "kind: MutatingWebhookConfiguration",
            "kind: ResourceQuota",
        ] {
            assert!(text.contains(kind), "{overlay} lacks {kind:?}");
        }
        assert!(
            text.contains("unhealthyPodEvictionPolicy: AlwaysAllow"),
            "{overlay}: the PDB must let unready replicas be evicted"
        );
        if overlay == "overlays/ha" {
            assert!(
                text.contains("replicas: 3"),
                "HA overlay must run 3 replicas"
            );
            assert!(
                text.contains("podAntiAffinity"),
                "HA overlay must spread replicas on nodes"
            );
            assert!(
                !text.contains("minAvailable"),
                "the PDB keeps the base's maxUnavailable"
            );
        } else {
            assert!(text.contains("replicas: 2"));
            assert!(text.contains("topologySpreadConstraints"));
        }
        assert!(text.contains("maxUnavailable: 1"), "{overlay}");
        let kustomization =
            std::fs::read_to_string(deploy_dir().join(overlay).join("kustomization.yaml"))
                .expect("kustomization.yaml");
        for deprecated in ["bases:", "patchesStrategicMerge:", "patchesJson6902:"] {
            assert!(
                !kustomization.lines().any(|l| l.starts_with(deprecated)),
                "{overlay}/kustomization.yaml uses deprecated {deprecated}"
            );
        }
        if validator {
            let path = dir.join(format!("{}.yaml", overlay.replace('/', "-")));
            std::fs::write(&path, &text).expect("write");
            let (ok, report) = validate(&[path]);
            assert!(ok, "{overlay}: {report}");
        }
    }
}

#[test]
fn webhook_manifest_is_the_generated_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .arg("webhook-config")
        .output()
        .expect("binary runs");
    assert!(out.status.success());
    let checked_in = std::fs::read_to_string(deploy_dir().join("base/mutatingwebhook.yaml"))
        .expect("manifest present");
    assert_eq!(
        checked_in,
        String::from_utf8_lossy(&out.stdout),
        "deploy/base/mutatingwebhook.yaml drifted from `outrigger webhook-config` (regenerate it, see kustomization.yaml)"
    );
    assert!(checked_in.contains("- outrigger\n") && checked_in.contains("- kube-system\n"));
    assert!(
        !checked_in.contains("istio.io/rev: "),
        "the installed object must not carry istio.io/rev (istiod would patch its caBundle)"
    );
    let dep =
        std::fs::read_to_string(deploy_dir().join("base/deployment.yaml")).expect("deployment");
    assert!(checked_in.contains("  name: outrigger-sidecar-injector\n"));
    let synced = dep
        .lines()
        .find_map(|l| l.trim().strip_prefix("- --webhook-config-name="))
        .unwrap_or("outrigger-sidecar-injector");
    assert_eq!(
        synced, "outrigger-sidecar-injector",
        "the Deployment must sync the caBundle of the object the base installs"
    );
}

#[test]
fn deployment_probes_resources_and_service_port() {
    let dep =
        std::fs::read_to_string(deploy_dir().join("base/deployment.yaml")).expect("deployment");
    for needle in [
        "path: /healthz",
        "path: /readyz",
        "scheme: HTTPS",
        "containerPort: 9443",
        "cpu: 50m",
        "memory: 64Mi",
        "runAsNonRoot: true",
        "readOnlyRootFilesystem: true",
    ] {
        assert!(dep.contains(needle), "deployment.yaml lacks {needle:?}");
    }
    let svc = std::fs::read_to_string(deploy_dir().join("base/service.yaml")).expect("service");
    assert!(svc.contains("port: 443") && svc.contains("targetPort: https"));
    let docker = std::fs::read_to_string(deploy_dir().join("Dockerfile")).expect("Dockerfile");
    assert!(
        docker.contains("AS build")
            && docker.contains("distroless/cc")
            && docker.contains("nonroot")
    );
}

#[test]
fn critical_priority_class_is_covered_by_a_resource_quota() {
    // Where critical priority classes are quota-limited, a system-cluster-critical pod outside
    // kube-system is refused unless a ResourceQuota of its namespace covers that class.
    if !tool_available("kubectl", "version") && !tool_available("kubectl", "--help") {
        eprintln!("NOTICE: kubectl not found; ResourceQuota check skipped");
        return;
    }
    for overlay in ["base", "overlays/ha"] {
        let docs: Vec<serde_json::Value> =
            outrigger_inject::yaml::split_documents(&kustomize(overlay))
                .expect("documents")
                .into_iter()
                .map(|d| outrigger_inject::yaml::from_str(d).expect("YAML"))
                .collect();
        let dep = docs
            .iter()
            .find(|d| d["kind"] == "Deployment")
            .expect("Deployment");
        let class = dep["spec"]["template"]["spec"]["priorityClassName"]
            .as_str()
            .expect("priorityClassName");
        let ns = &dep["metadata"]["namespace"];
        let covered = docs.iter().any(|d| {
            d["kind"] == "ResourceQuota"
                && &d["metadata"]["namespace"] == ns
                && d["spec"]["hard"]["pods"].is_string()
                && d["spec"]["scopeSelector"]["matchExpressions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|e| {
                        e["scopeName"] == "PriorityClass"
                            && e["operator"] == "In"
                            && e["values"]
                                .as_array()
                                .is_some_and(|v| v.iter().any(|x| x == class))
                    })
        });
        assert!(
            covered,
            "{overlay}: no ResourceQuota covers priorityClassName {class}"
        );
    }
}

/// The `[profile.NAME]` section of the workspace manifest, as `key = value` lines.
fn cargo_profile(name: &str) -> Vec<(String, String)> {
    let manifest = std::fs::read_to_string(deploy_dir().join("../Cargo.toml")).expect("Cargo.toml");
    let header = format!("[profile.{name}]");
    manifest
        .lines()
        .skip_while(|l| l.trim() != header)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        .collect()
}

#[test]
fn the_shipped_binary_has_no_debug_info_and_benches_keep_it() {
    let release = cargo_profile("release");
    let get = |p: &[(String, String)], k: &str| {
        p.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())
    };
    assert!(
        matches!(
            get(&release, "debug").as_deref(),
            None | Some("false" | "0" | "none")
        ),
        "[profile.release] must not carry debug info: {release:?}"
    );
    assert_eq!(
        get(&release, "strip").as_deref(),
        Some("symbols"),
        "{release:?}"
    );
    let bench = cargo_profile("bench");
    assert!(
        matches!(
            get(&bench, "debug").as_deref(),
            Some("1" | "true" | "2" | "line-tables-only" | "limited" | "full")
        ),
        "benches keep debug info: {bench:?}"
    );
    assert_eq!(
        get(&bench, "strip").as_deref(),
        Some("none"),
        "benches keep symbols: {bench:?}"
    );
}

#[test]
fn docker_build_context_excludes_target() {
    let ignore = std::fs::read_to_string(deploy_dir().join("../.dockerignore"))
        .expect(".dockerignore at the repository root (the build context of deploy/Dockerfile)");
    let lines: Vec<&str> = ignore.lines().map(str::trim).collect();
    for needed in ["target/", ".git/"] {
        assert!(
            lines.contains(&needed),
            ".dockerignore lacks {needed}: {ignore}"
        );
    }
    let docker = std::fs::read_to_string(deploy_dir().join("Dockerfile")).expect("Dockerfile");
    for line in docker.lines().filter(|l| l.starts_with("FROM ")) {
        let image = line.split_whitespace().nth(1).unwrap_or("");
        assert!(
            image.contains("@sha256:") || docker.contains("TODO(pin)"),
            "{image}: pin by digest, or say why not with TODO(pin)"
        );
    }
}

#[test]
fn deployment_image_tag_is_the_crate_version() {
    let dep =
        std::fs::read_to_string(deploy_dir().join("base/deployment.yaml")).expect("deployment");
    let images: Vec<&str> = dep
        .lines()
        .filter_map(|l| l.trim().strip_prefix("image: "))
        .collect();
    assert!(!images.is_empty());
    for image in images {
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("");
        assert_eq!(
            tag,
            env!("CARGO_PKG_VERSION"),
            "{image}: deploy/ must run the released version, not a moving tag"
        );
    }
}

/// The rendered base (`kubectl kustomize deploy/base`), `outrigger webhook-config` without flags
/// and `outrigger serve`'s defaults name the same namespace, Service, webhook configuration,
/// Secret and excluded namespaces; the serving certificate covers the host the API server calls.
#[test]
fn deploy_base_webhook_config_and_serve_share_one_set_of_defaults() {
    if !tool_available("kubectl", "version") && !tool_available("kubectl", "--help") {
        eprintln!("NOTICE: kubectl not found; deploy/base defaults check skipped");
        return;
    }
    let docs: Vec<serde_json::Value> = outrigger_inject::yaml::split_documents(&kustomize("base"))
        .expect("documents")
        .into_iter()
        .map(|d| outrigger_inject::yaml::from_str(d).expect("YAML"))
        .collect();
    let of = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("deploy/base renders no {kind}"))
    };
    let generated = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["webhook-config", "-o", "json"])
        .output()
        .expect("binary runs");
    assert!(generated.status.success());
    let generated: serde_json::Value =
        serde_json::from_slice(&generated.stdout).expect("webhook-config -o json");
    let mwc = of("MutatingWebhookConfiguration");
    assert_eq!(mwc, &generated, "deploy/base's webhook vs webhook-config");
    assert_eq!(mwc["metadata"]["name"], defaults::WEBHOOK_CONFIG_NAME);
    for entry in mwc["webhooks"].as_array().expect("webhooks") {
        let svc = &entry["clientConfig"]["service"];
        assert_eq!(
            (svc["namespace"].as_str(), svc["name"].as_str()),
            (Some(defaults::NAMESPACE), Some(defaults::SERVICE)),
            "{entry}"
        );
        let host = format!("{}.{}.svc", defaults::SERVICE, defaults::NAMESPACE);
        assert!(
            defaults::service_dns_names(defaults::SERVICE, defaults::NAMESPACE).contains(&host)
        );
        let excluded = entry["namespaceSelector"]["matchExpressions"]
            .as_array()
            .expect("expressions")
            .iter()
            .find(|e| e["key"] == "kubernetes.io/metadata.name")
            .unwrap_or_else(|| panic!("no namespace exclusion in {entry}"));
        assert_eq!(excluded["operator"], "NotIn");
        assert_eq!(
            excluded["values"],
            serde_json::json!(defaults::EXCLUDED_NAMESPACES)
        );
    }
    assert_eq!(of("Namespace")["metadata"]["name"], defaults::NAMESPACE);
    let service = of("Service");
    assert_eq!(service["metadata"]["name"], defaults::SERVICE);
    assert_eq!(service["metadata"]["namespace"], defaults::NAMESPACE);
    let dep = of("Deployment");
    assert_eq!(dep["metadata"]["namespace"], defaults::NAMESPACE);
    let container = &dep["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    for (flag, want) in [
        ("--service=", defaults::SERVICE),
        ("--tls-secret=", defaults::TLS_SECRET),
        ("--webhook-config-name=", defaults::WEBHOOK_CONFIG_NAME),
    ] {
        let given = args.iter().find_map(|a| a.strip_prefix(flag));
        assert!(given.is_none_or(|v| v == want), "{flag}{given:?} vs {want}");
    }
    // serve's own defaults (its help, as clap prints them) are the same names.
    let help = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["serve", "--help"])
        .env_remove("POD_NAMESPACE")
        .output()
        .expect("binary runs");
    let help = String::from_utf8_lossy(&help.stdout);
    let default_of = |flag: &str| {
        let at = help
            .find(&format!("--{flag} <"))
            .unwrap_or_else(|| panic!("--{flag} in help"));
        let rest = &help[at..];
        let end = rest[2..].find("\n  -").map_or(rest.len(), |e| e + 2);
        let d = rest[..end].split("[default: ").nth(1).expect("a default");
        d[..d.find(']').expect("]")].to_string()
    };
    assert_eq!(default_of("namespace"), defaults::NAMESPACE);
    assert_eq!(default_of("service"), defaults::SERVICE);
    assert_eq!(default_of("tls-secret"), defaults::TLS_SECRET);
    assert_eq!(
        default_of("webhook-config-name"),
        defaults::WEBHOOK_CONFIG_NAME
    );
}
