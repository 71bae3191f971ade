//! What `doctor` reads from the cluster, once, with the user's credentials: the webhook
//! configurations, the namespaces, outrigger's Service, its EndpointSlices, the serving
//! certificate's Secret and the Deployment (whose flags and environment say how the server
//! runs). A read that fails is kept as its error, for the checks that need it to report.

use std::time::Duration;

use ::kube::api::{Api, ListParams};
use ::kube::Client;
use anyhow::Result;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::Resource;
use outrigger_inject::decide::selection::DEFAULT_REVISION;

use super::DoctorArgs;
use crate::kube::client::api_error;

/// A read: the object(s), or why they could not be read (the API's message).
pub type Read<T> = std::result::Result<T, String>;

/// How the server runs, from the Deployment's container flags and environment (`serve`'s
/// defaults where the Deployment says nothing, or cannot be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--revision` (`default`: none).
    pub revision: String,
    /// Namespace of Istio's ConfigMaps (`ISTIO_NAMESPACE`).
    pub istio_namespace: String,
    /// `--istio-configmaps`.
    pub istio_configmaps: bool,
    /// `--injectConfigMap NAMESPACE/NAME`.
    pub inject_config_map: Option<String>,
    /// `--meshConfigMap NAMESPACE/NAME`.
    pub mesh_config_map: Option<String>,
    /// `--native-sidecars`, else `ENABLE_NATIVE_SIDECARS`.
    pub native_sidecars: Option<String>,
    /// `--events`.
    pub events: bool,
    /// `--detect-overlaps`.
    pub detect_overlaps: bool,
    /// `--watch-pods`.
    pub watch_pods: bool,
    /// `PLATFORM=openshift`.
    pub openshift: bool,
    /// `--ca-bundle-managed-externally`.
    pub ca_external: bool,
    /// `--failure-policy-once-ready` or `--webhook-owned-by-namespace`: the server patches its
    /// webhook configuration.
    pub activates: bool,
    /// `--fail-open-without-deployment NAME`: the Deployment the server reads.
    pub fail_open_deployment: Option<String>,
    /// `--probe-namespace NS` with `--probe-interval`: where the server creates probe pods.
    pub probe_namespace: Option<String>,
    /// The pod's service account.
    pub service_account: String,
}

impl ServerSettings {
    /// `serve`'s defaults, for an install whose Deployment cannot be read.
    fn defaults(args: &DoctorArgs) -> ServerSettings {
        ServerSettings {
            request_timeout: crate::cli::values::duration(crate::cli::defaults::REQUEST_TIMEOUT)
                .unwrap_or(Duration::from_secs(4)),
            revision: args
                .revision
                .given()
                .map_or(DEFAULT_REVISION, |r| r.as_str())
                .to_string(),
            istio_namespace: args
                .istio_namespace
                .clone()
                .unwrap_or_else(|| "istio-system".into()),
            istio_configmaps: true,
            inject_config_map: None,
            mesh_config_map: None,
            native_sidecars: None,
            events: false,
            detect_overlaps: false,
            watch_pods: false,
            openshift: false,
            ca_external: false,
            activates: true,
            fail_open_deployment: Some(args.deployment.clone()),
            probe_namespace: None,
            service_account: "default".into(),
        }
    }

    /// The settings of `deployment`'s first container (flags as `--flag=value` or
    /// `--flag value`, in either spelling), the flags given to `doctor` winning.
    pub fn from_deployment(deployment: &Deployment, args: &DoctorArgs) -> ServerSettings {
        let mut s = ServerSettings::defaults(args);
        s.istio_configmaps = false;
        s.activates = false;
        s.fail_open_deployment = None;
        let Some(pod) = deployment.spec.as_ref().map(|d| &d.template) else {
            return s;
        };
        let spec = pod.spec.as_ref();
        s.service_account = spec
            .and_then(|p| p.service_account_name.clone())
            .unwrap_or_else(|| "default".into());
        let Some(c) = spec.and_then(|p| p.containers.first()) else {
            return s;
        };
        let words: Vec<String> = c
            .command
            .iter()
            .flatten()
            .chain(c.args.iter().flatten())
            .cloned()
            .collect();
        let flag = |names: &[&str]| -> Option<Option<String>> {
            words.iter().enumerate().find_map(|(i, w)| {
                let w = w.strip_prefix("--")?;
                let (name, value) = match w.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (w, None),
                };
                names.contains(&name).then(|| {
                    value.or_else(|| words.get(i + 1).filter(|n| !n.starts_with("--")).cloned())
                })
            })
        };
        let env = |name: &str| {
            c.env
                .iter()
                .flatten()
                .find(|e| e.name == name)
                .and_then(|e| e.value.clone())
        };
        if let Some(Some(t)) = flag(&["request-timeout", "requestTimeout"]) {
            if let Ok(d) = crate::cli::values::duration(&t) {
                s.request_timeout = d;
            }
        }
        if args.revision.given().is_none() {
            if let Some(Some(r)) = flag(&["revision"]) {
                s.revision = r;
            }
        }
        if args.istio_namespace.is_none() {
            if let Some(ns) = env("ISTIO_NAMESPACE") {
                s.istio_namespace = ns;
            }
        }
        s.istio_configmaps = flag(&["istio-configmaps", "istioConfigmaps"]).is_some();
        s.inject_config_map = flag(&["injectConfigMap", "inject-config-map"]).flatten();
        s.mesh_config_map = flag(&["meshConfigMap", "mesh-config-map"]).flatten();
        s.native_sidecars = flag(&["native-sidecars", "nativeSidecars"])
            .flatten()
            .or_else(|| env("ENABLE_NATIVE_SIDECARS"));
        s.events = flag(&["events"]).is_some();
        s.detect_overlaps = flag(&["detect-overlaps", "detectOverlaps"]).is_some();
        s.watch_pods = flag(&["watch-pods", "watchPods"]).is_some();
        s.openshift = env("PLATFORM").is_some_and(|p| p.eq_ignore_ascii_case("openshift"));
        s.ca_external =
            flag(&["ca-bundle-managed-externally", "caBundleManagedExternally"]).is_some();
        s.fail_open_deployment = flag(&["fail-open-without-deployment"]).flatten();
        s.probe_namespace =
            flag(&["probe-interval"]).and_then(|_| flag(&["probe-namespace"]).flatten());
        s.activates = flag(&["failure-policy-once-ready", "failurePolicyOnceReady"]).is_some()
            || flag(&["webhook-owned-by-namespace", "webhookOwnedByNamespace"]).is_some()
            || s.fail_open_deployment.is_some();
        s
    }
}

/// Everything the checks read.
#[derive(Debug, Clone)]
pub struct Facts {
    /// outrigger's namespace.
    pub namespace: String,
    /// outrigger's webhook configuration's name.
    pub webhook_config_name: String,
    /// outrigger's Service's name.
    pub service_name: String,
    /// The Deployment's name.
    pub deployment_name: String,
    /// The serving certificate's Secret's name.
    pub secret_name: String,
    /// Every MutatingWebhookConfiguration.
    pub configurations: Read<Vec<MutatingWebhookConfiguration>>,
    /// Every namespace.
    pub namespaces: Read<Vec<Namespace>>,
    /// The Service (`None`: not found).
    pub service: Read<Option<Service>>,
    /// Its EndpointSlices (`kubernetes.io/service-name`).
    pub endpoint_slices: Read<Vec<EndpointSlice>>,
    /// The Secret (`None`: not found).
    pub secret: Read<Option<Secret>>,
    /// The Deployment (`None`: not found).
    pub deployment: Read<Option<Deployment>>,
    /// How the server runs.
    pub server: ServerSettings,
}

impl Facts {
    /// outrigger's webhook configuration, when listed.
    pub fn ours(&self) -> Option<&MutatingWebhookConfiguration> {
        self.configurations
            .as_ref()
            .ok()?
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(self.webhook_config_name.as_str()))
    }
}

fn read<T>(r: std::result::Result<T, ::kube::Error>, what: &str) -> Read<T> {
    r.map_err(|e| format!("{what}: {}", crate::report::chain(&api_error(e))))
}

/// A GET that may find nothing.
async fn get_opt<K>(api: Api<K>, name: &str) -> Read<Option<K>>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    read(
        api.get_opt(name).await,
        &format!("reading {} {name}", K::KIND),
    )
}

/// Whether the server answers as a Kubernetes API server does: `GET /version` gives a version,
/// or a Kubernetes `Status` refusing it (401, 403: permissions, which the checks report). An
/// answer that is no Kubernetes answer (an HTTP proxy or a web server's 404 page, a body that is
/// not a version) ends the run, as an unreachable server does, instead of every read being
/// blamed on permissions.
pub async fn is_kubernetes_api(client: &Client, target: &str) -> Result<()> {
    const NOT_A_STATUS: &str = "Failed to parse error data";
    let not_api = |what: String| {
        crate::report::with_hint(
            anyhow::anyhow!("{target} is not a Kubernetes API server: GET /version {what}"),
            "check the server of the kubeconfig context (--kubeconfig, --context): a proxy or \
             another service answers there",
        )
    };
    match client.apiserver_version().await {
        Ok(_) => Ok(()),
        Err(::kube::Error::Api(status)) if status.code == 401 || status.code == 403 => {
            if status.reason == NOT_A_STATUS {
                Err(not_api(format!(
                    "answered {} without a Kubernetes Status",
                    status.code
                )))
            } else {
                Ok(())
            }
        }
        Err(::kube::Error::Api(status)) => {
            let body: String = status.message.chars().take(80).collect();
            Err(not_api(if status.reason == NOT_A_STATUS {
                format!("answered {} {body:?}", status.code)
            } else {
                format!("answered {} ({})", status.code, status.message)
            }))
        }
        Err(::kube::Error::SerdeError(e)) => Err(not_api(format!(
            "answered with something other than a version ({e})"
        ))),
        Err(e) => Err(api_error(e).context("reading its version")),
    }
}

/// Read everything (a connection failure ends the run; any other error is kept for the checks).
pub async fn gather(client: &Client, args: &DoctorArgs) -> Result<Facts> {
    let ns = args.namespace.as_str();
    let configurations = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default())
        .await;
    if let Err(e @ (::kube::Error::Service(_) | ::kube::Error::HyperError(_))) = configurations {
        return Err(api_error(e).context("listing mutatingwebhookconfigurations"));
    }
    let configurations =
        read(configurations, "listing mutatingwebhookconfigurations").map(|l| l.items);
    let namespaces = read(
        Api::<Namespace>::all(client.clone())
            .list(&ListParams::default())
            .await,
        "listing namespaces",
    )
    .map(|l| l.items);
    let service = get_opt(
        Api::<Service>::namespaced(client.clone(), ns),
        &args.service,
    )
    .await;
    let endpoint_slices = read(
        Api::<EndpointSlice>::namespaced(client.clone(), ns)
            .list(
                &ListParams::default()
                    .labels(&format!("kubernetes.io/service-name={}", args.service)),
            )
            .await,
        &format!(
            "listing the EndpointSlices of Service {ns}/{}",
            args.service
        ),
    )
    .map(|l| l.items);
    let secret = get_opt(
        Api::<Secret>::namespaced(client.clone(), ns),
        &args.tls_secret,
    )
    .await;
    let deployment = get_opt(
        Api::<Deployment>::namespaced(client.clone(), ns),
        &args.deployment,
    )
    .await;
    let server = match &deployment {
        Ok(Some(d)) => ServerSettings::from_deployment(d, args),
        _ => ServerSettings::defaults(args),
    };
    Ok(Facts {
        namespace: ns.to_string(),
        webhook_config_name: args.webhook_config_name.clone(),
        service_name: args.service.clone(),
        deployment_name: args.deployment.clone(),
        secret_name: args.tls_secret.clone(),
        configurations,
        namespaces,
        service,
        endpoint_slices,
        secret,
        deployment,
        server,
    })
}

/// Flags as `doctor` defaults them, for tests.
#[cfg(test)]
pub(crate) fn test_args() -> DoctorArgs {
    DoctorArgs {
        kubeconfig: None,
        context: None,
        namespace: "outrigger".into(),
        refused_namespace: None,
        webhook_config_name: "outrigger-sidecar-injector".into(),
        service: "outrigger".into(),
        deployment: "outrigger".into(),
        tls_secret: "outrigger-tls".into(),
        revision: Default::default(),
        istio_namespace: None,
        probe_namespace: None,
        expiry_warning: Duration::from_secs(30 * 24 * 3600),
        output: crate::doctor::args::DoctorOutput::Table,
    }
}

/// Facts with these webhook configurations and Secret, nothing else read, for tests.
#[cfg(test)]
pub(crate) fn test_facts(
    configurations: Vec<MutatingWebhookConfiguration>,
    secret: Option<Secret>,
) -> Facts {
    let args = test_args();
    Facts {
        namespace: args.namespace.clone(),
        webhook_config_name: args.webhook_config_name.clone(),
        service_name: args.service.clone(),
        deployment_name: args.deployment.clone(),
        secret_name: args.tls_secret.clone(),
        configurations: Ok(configurations),
        namespaces: Ok(Vec::new()),
        service: Ok(None),
        endpoint_slices: Ok(Vec::new()),
        secret: Ok(secret),
        deployment: Ok(None),
        server: ServerSettings::defaults(&args),
    }
}
