//! deploy/: every manifest validates with `kubernetes-validate --strict`, `kubectl kustomize`
//! builds the base and the HA overlay (each reported ignored when its tool is absent, failing under CI: tests/harness), and
//! the checked-in MutatingWebhookConfiguration is exactly what `outrigger webhook-config` prints
//! without flags, and the rendered base agrees with the binary's defaults (`crates/outrigger-kube/src/defaults.rs`).

use std::path::PathBuf;
use std::process::Command;

mod harness;
mod support_validate;

use harness::Need;
use support_validate::{deploy_dir, kubernetes_validate as validate, kustomize};

/// The binary's shared defaults (constants only), as `serve` and `webhook-config` use them.
#[path = "../../outrigger-kube/src/defaults.rs"]
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

fn base_manifests_validate_strictly() {
    let files = base_manifests();
    assert!(
        files.len() >= 7,
        "expected the base's resources, found {files:?}"
    );
    let (ok, report) = validate(&files);
    assert!(ok, "{report}");
}

fn kustomize_builds_base_and_ha_overlay_and_output_validates() {
    let dir = std::env::temp_dir().join(format!("outrigger-kube-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for overlay in [
        "base",
        "overlays/ha",
        "overlays/standalone",
        "overlays/namespace",
        "overlays/takeover",
    ] {
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
        } else if overlay == "base" {
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
        let path = dir.join(format!("{}.yaml", overlay.replace('/', "-")));
        std::fs::write(&path, &text).expect("write");
        let (ok, report) = validate(&[path]);
        assert!(ok, "{overlay}: {report}");
    }
}

fn webhook_manifest_is_the_generated_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["webhook-config", "--failure-policy", "Ignore"])
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

fn deployment_probes_resources_and_service_port() {
    let dep =
        std::fs::read_to_string(deploy_dir().join("base/deployment.yaml")).expect("deployment");
    for needle in [
        "path: /healthz",
        "path: /readyz",
        "containerPort: 9443",
        // Plain-HTTP /metrics for Prometheus, where the pod annotations say.
        "- --metrics-port=15014",
        "name: http-monitoring\n          containerPort: 15014",
        "prometheus.io/port: \"15014\"",
        "- --health-port=9444",
        "- --log-format=json",
        "- name: health\n          containerPort: 9444\n",
        "cpu: 50m",
        "memory: 64Mi",
        "runAsNonRoot: true",
        "readOnlyRootFilesystem: true",
    ] {
        assert!(dep.contains(needle), "deployment.yaml lacks {needle:?}");
    }
    // Every probe goes to the health port (plain HTTP), which connections to the webhook port
    // cannot crowd out.
    let probes = ["startupProbe:", "readinessProbe:", "livenessProbe:"];
    assert_eq!(
        dep.matches("            port: health\n            scheme: HTTP\n")
            .count(),
        probes.len(),
        "{dep}"
    );
    assert!(probes.iter().all(|p| dep.contains(p)));
    assert!(
        !dep.contains("scheme: HTTPS"),
        "no probe on the webhook port"
    );
    let svc = std::fs::read_to_string(deploy_dir().join("base/service.yaml")).expect("service");
    assert!(svc.contains("port: 443") && svc.contains("targetPort: https"));
    let docker = std::fs::read_to_string(deploy_dir().join("Dockerfile")).expect("Dockerfile");
    assert!(
        docker.contains("AS build")
            && docker.contains("distroless/cc")
            && docker.contains("nonroot")
    );
}

fn critical_priority_class_is_covered_by_a_resource_quota() {
    // Where critical priority classes are quota-limited, a system-cluster-critical pod outside
    // kube-system is refused unless a ResourceQuota of its namespace covers that class.
    for overlay in ["base", "overlays/ha"] {
        let docs: Vec<serde_json::Value> = outrigger_go::yaml::split_documents(&kustomize(overlay))
            .expect("documents")
            .into_iter()
            .map(|d| outrigger_go::yaml::from_str(&d).expect("YAML"))
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
fn deploy_base_webhook_config_and_serve_share_one_set_of_defaults() {
    let docs: Vec<serde_json::Value> = outrigger_go::yaml::split_documents(&kustomize("base"))
        .expect("documents")
        .into_iter()
        .map(|d| outrigger_go::yaml::from_str(&d).expect("YAML"))
        .collect();
    let of = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("deploy/base renders no {kind}"))
    };
    let generated = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["webhook-config", "-o", "json", "--failure-policy", "Ignore"])
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

/// The documents `kubectl kustomize` builds from `dir` (relative to deploy/).
fn rendered(dir: &str) -> Vec<serde_json::Value> {
    rendered_text(&kustomize(dir))
}

fn rendered_text(text: &str) -> Vec<serde_json::Value> {
    outrigger_go::yaml::split_documents(text)
        .expect("documents")
        .into_iter()
        .map(|d| outrigger_go::yaml::from_str(&d).expect("YAML"))
        .collect()
}

/// The one object of `kind` named `name`.
fn object<'a>(docs: &'a [serde_json::Value], kind: &str, name: &str) -> &'a serde_json::Value {
    let found: Vec<&serde_json::Value> = docs
        .iter()
        .filter(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "{kind}/{name}: {found:?}");
    found[0]
}

fn container(docs: &[serde_json::Value]) -> &serde_json::Value {
    &object(docs, "Deployment", "outrigger")["spec"]["template"]["spec"]["containers"][0]
}

fn args(docs: &[serde_json::Value]) -> Vec<String> {
    container(docs)["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

fn env(docs: &[serde_json::Value], name: &str) -> Option<String> {
    container(docs)["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str().map(str::to_string))
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// The rules of RBAC object `kind/name` granting `resource`.
fn rules_for<'a>(
    docs: &'a [serde_json::Value],
    kind: &str,
    name: &str,
    resource: &str,
) -> Vec<&'a serde_json::Value> {
    object(docs, kind, name)["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| strings(&r["resources"]).iter().any(|x| x == resource))
        .collect()
}

/// Every `kubernetes.io/metadata.name NotIn` list of the webhook configuration's entries.
fn excluded_namespaces(docs: &[serde_json::Value]) -> Vec<Vec<String>> {
    object(
        docs,
        "MutatingWebhookConfiguration",
        "outrigger-sidecar-injector",
    )["webhooks"]
        .as_array()
        .expect("webhooks")
        .iter()
        .map(|w| {
            w["namespaceSelector"]["matchExpressions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn")
                .map(|e| strings(&e["values"]))
                .unwrap_or_default()
        })
        .collect()
}

fn the_base_reads_the_clusters_istio_with_a_role_limited_to_its_configmaps() {
    let docs = rendered("base");
    let a = args(&docs);
    assert!(a.contains(&"--istio-configmaps".to_string()), "{a:?}");
    let istio_ns = env(&docs, "ISTIO_NAMESPACE").expect("ISTIO_NAMESPACE");
    assert_eq!(istio_ns, "istio-system");
    let revision = a
        .iter()
        .find_map(|x| x.strip_prefix("--revision="))
        .unwrap_or("default");
    // The names serve derives (istioctl's rule: `-REV` on the default names, except `default`).
    let suffix = match revision {
        "default" | "" => String::new(),
        r => format!("-{r}"),
    };
    let role = object(&docs, "Role", "outrigger-istio-config");
    assert_eq!(role["metadata"]["namespace"], istio_ns.as_str());
    let rules = role["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(strings(&rules[0]["resources"]), ["configmaps"]);
    assert_eq!(
        strings(&rules[0]["resourceNames"]),
        [
            format!("istio-sidecar-injector{suffix}"),
            format!("istio{suffix}")
        ]
    );
    // The server only lists and watches them (a metadata.name field selector): no get.
    assert_eq!(strings(&rules[0]["verbs"]), ["list", "watch"]);
    let binding = object(&docs, "RoleBinding", "outrigger-istio-config");
    assert_eq!(binding["metadata"]["namespace"], istio_ns.as_str());
    assert_eq!(binding["roleRef"]["name"], "outrigger-istio-config");
    assert_eq!(binding["subjects"][0]["name"], "outrigger");
    assert_eq!(binding["subjects"][0]["namespace"], "outrigger");
    // No configmaps anywhere else.
    for doc in docs
        .iter()
        .filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole")
    {
        if doc["metadata"]["name"] != "outrigger-istio-config" {
            let rules = doc["rules"].as_array().expect("rules");
            assert!(
                rules
                    .iter()
                    .all(|r| !strings(&r["resources"]).contains(&"configmaps".into())),
                "{doc}"
            );
        }
    }
}

/// `webhook-config --failure-policy Ignore` with `extra` flags, as JSON.
fn generated_webhook(extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["webhook-config", "-o", "json", "--failure-policy", "Ignore"])
        .args(extra)
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("webhook-config -o json")
}

/// The base selects only what opted into outrigger (`istio.io/rev=outrigger`); taking over
/// istiod's selectors is the separate takeover overlay, whose webhook is generated too and
/// differs from the base's in the entries only.
fn the_base_selects_its_own_value_and_takeover_is_a_separate_overlay() {
    let base = rendered("base");
    let ours = object(
        &base,
        "MutatingWebhookConfiguration",
        defaults::WEBHOOK_CONFIG_NAME,
    );
    let names: Vec<&str> = ours["webhooks"]
        .as_array()
        .expect("webhooks")
        .iter()
        .map(|w| w["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "rev.namespace.sidecar-injector.istio.io",
            "rev.object.sidecar-injector.istio.io"
        ]
    );
    let text = serde_json::to_string(ours).expect("encodes");
    assert!(
        text.contains(r#""values":["outrigger"]"#) && !text.contains(r#""values":["enabled"]"#),
        "{text}"
    );
    for w in ours["webhooks"].as_array().expect("webhooks") {
        assert_eq!(w["timeoutSeconds"], 5, "{}", w["name"]);
    }
    let takeover = rendered("overlays/takeover");
    let theirs = object(
        &takeover,
        "MutatingWebhookConfiguration",
        defaults::WEBHOOK_CONFIG_NAME,
    );
    assert_eq!(
        theirs,
        &generated_webhook(&["--selector-revision", "default"]),
        "deploy/overlays/takeover/mutatingwebhook.yaml drifted from `outrigger webhook-config \
         --failure-policy Ignore --selector-revision default` (regenerate it)"
    );
    assert_eq!(theirs["webhooks"].as_array().map(Vec::len), Some(4));
    // Everything else is the base's.
    let rest = |docs: &[serde_json::Value]| -> Vec<serde_json::Value> {
        docs.iter()
            .filter(|d| d["kind"] != "MutatingWebhookConfiguration")
            .cloned()
            .collect()
    };
    assert_eq!(rest(&base), rest(&takeover));
}

fn standalone_use_of_the_embedded_default_is_an_explicit_overlay() {
    let docs = rendered("overlays/standalone");
    let a = args(&docs);
    assert!(
        !a.iter()
            .any(|x| x.starts_with("--istio-configmaps") || x.starts_with("--revision")),
        "{a:?}"
    );
    assert!(a.contains(&"--kube".to_string()));
    assert!(
        !docs
            .iter()
            .any(|d| d["metadata"]["namespace"] == "istio-system"),
        "no RBAC in Istio's namespace"
    );
    let base = args(&rendered("base"));
    let kept: Vec<&String> = base
        .iter()
        .filter(|x| !x.starts_with("--istio-configmaps") && !x.starts_with("--revision"))
        .collect();
    assert_eq!(kept, a.iter().collect::<Vec<_>>(), "only those two removed");
}

fn the_shipped_webhook_fails_open_until_a_ready_replica_activates_it() {
    for overlay in [
        "base",
        "overlays/ha",
        "overlays/standalone",
        "overlays/namespace",
    ] {
        let docs = rendered(overlay);
        let mwc = object(
            &docs,
            "MutatingWebhookConfiguration",
            "outrigger-sidecar-injector",
        );
        for w in mwc["webhooks"].as_array().expect("webhooks") {
            assert_eq!(w["failurePolicy"], "Ignore", "{overlay}: {}", w["name"]);
        }
        let a = args(&docs);
        assert!(
            a.contains(&"--failure-policy-once-ready=Fail".to_string()),
            "{overlay}: {a:?}"
        );
        assert!(
            a.contains(&"--webhook-owned-by-namespace".to_string()),
            "{overlay}: {a:?}"
        );
        // RBAC on the webhook configuration: by name, no create (which cannot be limited to a
        // name), nothing beyond get/list/watch/patch/update.
        for rule in rules_for(
            &docs,
            "ClusterRole",
            "outrigger",
            "mutatingwebhookconfigurations",
        ) {
            assert_eq!(
                strings(&rule["resourceNames"]),
                ["outrigger-sidecar-injector"],
                "{overlay}"
            );
            // What the server uses (get, a watch, patch), never update.
            assert_eq!(
                strings(&rule["verbs"]),
                ["get", "list", "watch", "patch"],
                "{overlay}"
            );
        }
        // The owner reference needs the uid of the injector's own namespace, and only that.
        let ns = object(&docs, "Deployment", "outrigger")["metadata"]["namespace"]
            .as_str()
            .expect("namespace")
            .to_string();
        let rules = rules_for(&docs, "ClusterRole", "outrigger", "namespaces");
        assert_eq!(rules.len(), 1, "{overlay}");
        assert_eq!(strings(&rules[0]["resourceNames"]), [ns], "{overlay}");
        assert_eq!(strings(&rules[0]["verbs"]), ["get"], "{overlay}");
        // Failing open while the Deployment is deleted or scaled to zero reads that Deployment,
        // by name, and nothing else.
        let deployment = object(&docs, "Deployment", "outrigger")["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string();
        assert!(
            a.contains(&format!("--fail-open-without-deployment={deployment}")),
            "{overlay}: {a:?}"
        );
        let rules = rules_for(&docs, "Role", "outrigger", "deployments");
        assert_eq!(rules.len(), 1, "{overlay}");
        assert_eq!(strings(&rules[0]["apiGroups"]), ["apps"], "{overlay}");
        assert_eq!(
            strings(&rules[0]["resourceNames"]),
            [deployment],
            "{overlay}"
        );
        assert_eq!(strings(&rules[0]["verbs"]), ["get"], "{overlay}");
    }
}

fn a_namespace_override_moves_the_exclusion_but_not_the_istio_role() {
    let docs = rendered("overlays/namespace");
    let ns = "mesh-injector";
    assert_eq!(
        object(&docs, "Deployment", "outrigger")["metadata"]["namespace"],
        ns
    );
    for list in excluded_namespaces(&docs) {
        assert_eq!(
            list,
            [ns, "kube-system"],
            "the entries exclude the new namespace"
        );
    }
    let mwc = object(
        &docs,
        "MutatingWebhookConfiguration",
        "outrigger-sidecar-injector",
    );
    for w in mwc["webhooks"].as_array().expect("webhooks") {
        assert_eq!(w["clientConfig"]["service"]["namespace"], ns);
    }
    for kind in ["Role", "RoleBinding"] {
        let o = object(&docs, kind, "outrigger-istio-config");
        assert_eq!(
            o["metadata"]["namespace"], "istio-system",
            "{kind} stays with Istio"
        );
    }
    let binding = object(&docs, "RoleBinding", "outrigger-istio-config");
    assert_eq!(binding["subjects"][0]["namespace"], ns);
    for d in &docs {
        let (kind, name) = (&d["kind"], &d["metadata"]["name"]);
        if name == "outrigger-istio-config" {
            continue;
        }
        if let Some(n) = d["metadata"]["namespace"].as_str() {
            assert_eq!(n, ns, "{kind}/{name}");
        }
        for s in d["subjects"].as_array().into_iter().flatten() {
            assert_eq!(s["namespace"], ns, "{kind}/{name}");
        }
    }
    // No list names the old namespace any more: the only list item `outrigger` left is the
    // Deployment's own name (kept by the namespace override) in the Role's deployments rule.
    let text = kustomize("overlays/namespace");
    let role = object(&docs, "Role", "outrigger");
    let by_name = role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| strings(&r["resourceNames"]).contains(&"outrigger".to_string()))
        .map(|r| strings(&r["resources"]))
        .collect::<Vec<_>>();
    assert_eq!(by_name, [["deployments"]], "{role}");
    // Besides it, the two entries' selector value istio.io/rev=outrigger (not a namespace).
    assert_eq!(
        text.matches("- outrigger\n").count(),
        3,
        "no exclusion of the old namespace is left"
    );
    for excluded in excluded_namespaces(&docs) {
        assert!(!excluded.contains(&"outrigger".to_string()), "{excluded:?}");
    }
}

/// Build an overlay of `resource` with `components` (paths relative to deploy/), as an operator
/// writes one outside the repository.
fn with_components(resource: &str, components: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "outrigger-components-{}-{}",
        std::process::id(),
        components.join("+").replace('/', "_")
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let deploy = deploy_dir().canonicalize().expect("deploy/");
    let up: String = dir
        .canonicalize()
        .expect("temp")
        .components()
        .skip(1)
        .map(|_| "../")
        .collect();
    let rel = |p: &str| {
        format!(
            "{up}{}",
            deploy.join(p).display().to_string().trim_start_matches('/')
        )
    };
    let mut text = format!("resources:\n- {}\n", rel(resource));
    if !components.is_empty() {
        text.push_str("components:\n");
        for c in components {
            text.push_str(&format!("- {}\n", rel(c)));
        }
    }
    std::fs::write(dir.join("kustomization.yaml"), text).expect("write");
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(&dir)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn rbac_follows_the_enabled_features() {
    let base = rendered("base");
    assert!(!args(&base).contains(&"--events".to_string()));
    let all_rules: Vec<serde_json::Value> = base
        .iter()
        .filter(|d| d["kind"] == "ClusterRole")
        .flat_map(|d| d["rules"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(
        all_rules
            .iter()
            .all(|r| !strings(&r["resources"]).contains(&"events".into())),
        "no Events permission without --events: {all_rules:?}"
    );
    assert!(
        all_rules
            .iter()
            .all(|r| !strings(&r["resources"]).contains(&"namespaces".into())
                || !r["resourceNames"].is_null()),
        "no cluster-wide namespace read without OpenShift: {all_rules:?}"
    );
    let docs = rendered_text(&with_components(
        "overlays/ha",
        &[
            "components/events",
            "components/openshift",
            "components/network-policy",
            "components/overlap-detection",
            "components/pod-watch",
            "components/probe",
        ],
    ));
    assert!(args(&docs).contains(&"--events".to_string()));
    // The admission probe: its flags, a namespace of its own that the injector selects, and
    // create on pods there only.
    for flag in ["--probe-interval=1m", "--probe-namespace=outrigger-probe"] {
        assert!(args(&docs).contains(&flag.to_string()), "{flag}");
    }
    let probe_ns = object(&docs, "Namespace", "outrigger-probe");
    // Selected by outrigger only: istiod's selectors never match it.
    assert_eq!(probe_ns["metadata"]["labels"]["istio.io/rev"], "outrigger");
    assert!(probe_ns["metadata"]["labels"]
        .get("istio-injection")
        .is_none());
    let role = object(&docs, "Role", "outrigger-probe");
    assert_eq!(role["metadata"]["namespace"], "outrigger-probe");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}])
    );
    let binding = object(&docs, "RoleBinding", "outrigger-probe");
    assert_eq!(binding["subjects"][0]["name"], "outrigger");
    assert!(args(&docs).contains(&"--detect-overlaps".to_string()));
    let lists = rules_for(
        &docs,
        "ClusterRole",
        "outrigger-overlap-detection",
        "mutatingwebhookconfigurations",
    );
    assert_eq!(strings(&lists[0]["verbs"]), ["list"]);
    assert!(args(&docs).contains(&"--watch-pods".to_string()));
    let pods = rules_for(&docs, "ClusterRole", "outrigger-pod-watch", "pods");
    assert_eq!(strings(&pods[0]["verbs"]), ["list", "watch"]);
    assert_eq!(env(&docs, "PLATFORM").as_deref(), Some("openshift"));
    let events = rules_for(&docs, "ClusterRole", "outrigger-events", "events");
    assert_eq!(strings(&events[0]["verbs"]), ["create", "patch"]);
    let namespaces = rules_for(&docs, "ClusterRole", "outrigger-namespaces", "namespaces");
    assert_eq!(strings(&namespaces[0]["verbs"]), ["get", "list", "watch"]);
    let np = object(&docs, "NetworkPolicy", "outrigger");
    assert_eq!(np["spec"]["ingress"][0]["ports"][0]["port"], 9443);
    assert_eq!(
        np["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "outrigger"
    );
    for binding in [
        "outrigger-events",
        "outrigger-namespaces",
        "outrigger-pod-watch",
    ] {
        let b = object(&docs, "ClusterRoleBinding", binding);
        assert_eq!(b["subjects"][0]["name"], "outrigger");
    }
    let path = std::env::temp_dir().join(format!("outrigger-all-{}.yaml", std::process::id()));
    let text = with_components(
        "overlays/ha",
        &[
            "components/events",
            "components/openshift",
            "components/network-policy",
            "components/overlap-detection",
            "components/pod-watch",
            "components/probe",
        ],
    );
    std::fs::write(&path, text).expect("write");
    let (ok, report) = validate(&[path]);
    assert!(ok, "{report}");
}

fn the_ha_overlay_evicts_replicas_of_lost_nodes_quickly() {
    let docs = rendered("overlays/ha");
    let spec = &object(&docs, "Deployment", "outrigger")["spec"]["template"]["spec"];
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let t = spec["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["key"] == key)
            .unwrap_or_else(|| panic!("no toleration for {key}"));
        assert_eq!(t["effect"], "NoExecute");
        let secs = t["tolerationSeconds"].as_u64().expect("tolerationSeconds");
        assert!(
            secs < 300,
            "{key}: {secs} s is not below the API server's default 300 s"
        );
    }
}

/// The Kubernetes versions of the support matrix (docs/kubernetes.md), by schema: the rendered
/// base validates strictly against each; 1.25 lacks the PDB's `unhealthyPodEvictionPolicy`
/// (the lower bound). `webhook-config --match-conditions` needs 1.27's schema (the field is
/// beta, on by default, from 1.28; GA in 1.30).
fn the_support_matrix_versions_accept_the_manifests() {
    let dir = std::env::temp_dir().join(format!("outrigger-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let base = dir.join("base.yaml");
    std::fs::write(&base, kustomize("base")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["webhook-config", "--match-conditions"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let conditions = dir.join("match-conditions.yaml");
    std::fs::write(&conditions, &out.stdout).expect("write");
    for version in ["1.26.0", "1.28.0", "1.30.0", "1.33.0", "1.37.0"] {
        let (ok, report) = support_validate::kubernetes_validate_at(version, &[&base]);
        assert!(ok, "base on {version}: {report}");
    }
    let (ok, report) = support_validate::kubernetes_validate_at("1.25.0", &[&base]);
    assert!(
        !ok && report.contains("unhealthyPodEvictionPolicy"),
        "1.25: {report}"
    );
    for version in ["1.28.0", "1.30.0", "1.33.0"] {
        let (ok, report) = support_validate::kubernetes_validate_at(version, &[&conditions]);
        assert!(ok, "matchConditions on {version}: {report}");
    }
    let (ok, report) = support_validate::kubernetes_validate_at("1.26.0", &[&conditions]);
    assert!(!ok && report.contains("matchConditions"), "1.26: {report}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    harness::run(trials![
        &[] => [
            webhook_manifest_is_the_generated_one,
            deployment_probes_resources_and_service_port,
            the_shipped_binary_has_no_debug_info_and_benches_keep_it,
            docker_build_context_excludes_target,
            deployment_image_tag_is_the_crate_version,
        ],
        &[Need::KubernetesValidate] => [base_manifests_validate_strictly],
        &[Need::Kubectl] => [
            critical_priority_class_is_covered_by_a_resource_quota,
            deploy_base_webhook_config_and_serve_share_one_set_of_defaults,
            the_base_reads_the_clusters_istio_with_a_role_limited_to_its_configmaps,
            standalone_use_of_the_embedded_default_is_an_explicit_overlay,
            the_base_selects_its_own_value_and_takeover_is_a_separate_overlay,
            the_shipped_webhook_fails_open_until_a_ready_replica_activates_it,
            a_namespace_override_moves_the_exclusion_but_not_the_istio_role,
            the_ha_overlay_evicts_replicas_of_lost_nodes_quickly,
        ],
        &[Need::Kubectl, Need::KubernetesValidate] => [
            kustomize_builds_base_and_ha_overlay_and_output_validates,
            rbac_follows_the_enabled_features,
            the_support_matrix_versions_accept_the_manifests,
        ],
    ])
}
