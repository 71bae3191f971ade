//! `outrigger webhook-config`: the flags' checks and the printing of the
//! MutatingWebhookConfiguration that routes pods to the injector, built by
//! [`crate::kube::webhook_object`] (which also serves `check` and the kube layer).

pub mod args;

use crate::print;
use anyhow::{bail, Context, Result};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;

use crate::cli::defaults;
use crate::kube::webhook_object::{
    auto_entry_dropped, build, is_dns1123_label, is_dns1123_subdomain, parse_namespaced,
    with_revision, Endpoint, FailurePolicy, WebhookOptions, DEFAULT_SERVICE, ISTIO_SYSTEM,
};

/// What `--istio` means for the cluster, printed on stderr and repeated in the docs.
pub const ISTIO_MODE_NOTE: &str =
    "note: --istio emits Istio's object names and the istio.io/rev label on purpose: \
istiod's own sidecar injector must be off (no default-revision istiod running its webhook \
patcher), or istiod and outrigger will overwrite each other's caBundle forever";

/// What `--selector-revision default` means for the cluster, printed on stderr.
pub const TAKEOVER_NOTE: &str =
    "note: --selector-revision default selects what istiod's default revision selects \
(istio-injection=enabled, istio.io/rev=default, sidecar.istio.io/inject=true): remove istiod's \
injector webhooks first (docs/kubernetes.md, \"Taking over from istiod\"), or every such pod goes \
through both injectors; outrigger doctor fails while they remain";

pub use crate::webhook_config::args::{OutputFormat, WebhookConfigArgs};

const DNS1123_LABEL_HELP: &str =
    "lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";

/// Refuse a URL the API server would refuse in `clientConfig.url`.
fn check_url(url: &str) -> Result<()> {
    let Some(rest) = url.strip_prefix("https://") else {
        bail!("--url {url:?}: the API server only calls webhooks over https://");
    };
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        bail!("--url {url:?}: no host");
    }
    if host.contains('@') {
        bail!("--url {url:?}: user information is not allowed");
    }
    if url.contains('?') || url.contains('#') {
        bail!("--url {url:?}: a query or fragment is not allowed");
    }
    Ok(())
}

/// [`WebhookOptions`] (the kube layer's) from this command's flags.
trait FromArgs: Sized {
    /// Options from the command-line flags (reads the CA bundle file); refuses values the API
    /// server or Istio would refuse.
    fn from_args(args: &WebhookConfigArgs) -> Result<Self>;
}

impl FromArgs for WebhookOptions {
    fn from_args(args: &WebhookConfigArgs) -> Result<WebhookOptions> {
        let revision = args.revision.to_string();
        if !revision.is_empty() && !is_dns1123_label(&revision) {
            bail!("--revision {revision:?} is not a valid revision name ({DNS1123_LABEL_HELP})");
        }
        if let Some(tag) = &args.tag {
            if !is_dns1123_label(tag) {
                bail!("--tag {tag:?} is not a valid revision tag ({DNS1123_LABEL_HELP})");
            }
        }
        if let Some(sel) = &args.selector_revision {
            if !is_dns1123_label(sel) {
                bail!("--selector-revision {sel:?} is not a valid revision name ({DNS1123_LABEL_HELP})");
            }
        }
        if !args.path.starts_with('/') {
            bail!("--path {:?} must start with '/'", args.path);
        }
        let endpoint = match (&args.url, &args.service) {
            (Some(url), _) => {
                check_url(url)?;
                Endpoint::Url(url.clone())
            }
            (None, service) => {
                let (namespace, name) = match service {
                    Some(s) => parse_namespaced(s).with_context(|| format!("--service {s:?}"))?,
                    None if args.istio => {
                        (ISTIO_SYSTEM.to_string(), with_revision("istiod", &revision))
                    }
                    None => (DEFAULT_SERVICE.0.to_string(), DEFAULT_SERVICE.1.to_string()),
                };
                for (what, v) in [("namespace", &namespace), ("name", &name)] {
                    if !is_dns1123_label(v) {
                        bail!("--service: {what} {v:?} is not a DNS-1123 label ({DNS1123_LABEL_HELP})");
                    }
                }
                Endpoint::Service {
                    namespace,
                    name,
                    port: args.port,
                    path: args.path.clone(),
                }
            }
        };
        let ca_bundle = match &args.ca_bundle_file {
            Some(p) => Some(read_ca_bundle(p)?),
            None => None,
        };
        let exclude_namespaces: Vec<String> = match (&args.exclude_namespaces, &endpoint) {
            (Some(given), _) => given.iter().filter(|n| !n.is_empty()).cloned().collect(),
            (None, _) if args.istio => Vec::new(),
            (None, Endpoint::Service { namespace, .. }) => {
                let mut v = vec![namespace.clone()];
                v.extend(
                    defaults::EXCLUDED_NAMESPACES[1..]
                        .iter()
                        .map(|n| n.to_string())
                        .filter(|n| n != namespace),
                );
                v
            }
            (None, Endpoint::Url(_)) => Vec::new(),
        };
        if let Some(bad) = exclude_namespaces.iter().find(|n| !is_dns1123_label(n)) {
            bail!("--exclude-namespaces: {bad:?} is not a namespace name ({DNS1123_LABEL_HELP})");
        }
        let opts = WebhookOptions {
            revision,
            tag: args.tag.clone(),
            selector: args.selector_revision.clone(),
            istio: args.istio,
            endpoint,
            name: args.name.clone(),
            ca_bundle,
            failure_policy: args.failure_policy,
            timeout: Some(args.timeout),
            reinvocation_policy: args.reinvocation_policy,
            enable_namespaces_by_default: args.enable_namespaces_by_default,
            exclude_namespaces,
            match_conditions: args.match_conditions,
        };
        let name = opts.object_name();
        if !is_dns1123_subdomain(&name) {
            bail!(
                "object name {name:?} is not a valid Kubernetes name (a DNS-1123 subdomain: \
                 lower-case letters, digits, '-' and '.', at most 253 characters){}",
                if args.name.is_some() {
                    ""
                } else {
                    "; pass --name"
                }
            );
        }
        Ok(opts)
    }
}

/// Read a PEM bundle and check that it holds at least one certificate.
pub fn read_ca_bundle(path: &std::path::Path) -> Result<Vec<u8>> {
    let bytes =
        std::fs::read(path).with_context(|| format!("reading CA bundle {}", path.display()))?;
    let certs =
        crate::pki::cert_ders(&bytes).with_context(|| format!("CA bundle {}", path.display()))?;
    if certs.is_empty() {
        bail!(
            "CA bundle {} holds no PEM CERTIFICATE block",
            path.display()
        );
    }
    Ok(bytes)
}

/// Serialise in the requested format (both end with a newline).
pub fn render(v: &MutatingWebhookConfiguration, format: OutputFormat) -> Result<String> {
    let json = serde_json::to_value(v).context("encoding the object")?;
    Ok(match format {
        OutputFormat::Json => print::pretty_json(&json)?,
        OutputFormat::Yaml => outrigger_go::yaml::to_string(&json),
    })
}

/// The warning for `failurePolicy: Fail` without a `caBundle`: the API server cannot verify the
/// injector until one is set, so every pod the entries select is refused.
pub fn missing_ca_bundle(o: &WebhookOptions) -> Option<&'static str> {
    (o.failure_policy == FailurePolicy::Fail && o.ca_bundle.is_none()).then_some(
        "warning: failurePolicy Fail without a caBundle: until one is set (serve --kube keeps it \
         in step; or pass --ca-bundle-file) the API server cannot call the injector and refuses \
         every pod the entries select",
    )
}

/// Run `outrigger webhook-config`.
pub fn run(args: &WebhookConfigArgs) -> Result<()> {
    let opts = WebhookOptions::from_args(args)?;
    if let Some(w) = auto_entry_dropped(&opts) {
        eprintln!("{w}");
    }
    if opts.istio {
        eprintln!("{ISTIO_MODE_NOTE}");
    }
    if opts.is_takeover() {
        eprintln!("{TAKEOVER_NOTE}");
    }
    if let Some(w) = missing_ca_bundle(&opts) {
        eprintln!("{w}");
    }
    print::stdout(&render(&build(&opts), args.output)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_the_api_server_refuses_are_refused() {
        for bad in [
            "http://x/inject",
            "https:///inject",
            "https://u@x/inject",
            "https://x/inject?a=b",
            "https://x/inject#f",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        assert!(check_url("https://10.0.0.1:443/inject").is_ok());
    }

    /// The options `outrigger webhook-config ARGS` builds.
    fn options(args: &[&str]) -> WebhookOptions {
        use clap::FromArgMatches;
        let mut argv = vec!["outrigger", "webhook-config"];
        argv.extend(args);
        let m = crate::cli::command()
            .try_get_matches_from(argv)
            .expect("parses");
        let crate::cli::Cli {
            command: crate::cli::Command::WebhookConfig(a),
        } = crate::cli::Cli::from_arg_matches(&m).expect("typed")
        else {
            panic!("webhook-config");
        };
        WebhookOptions::from_args(&a).expect("valid")
    }

    #[test]
    fn the_default_exclusion_is_the_injectors_namespace_and_kube_system() {
        assert_eq!(
            options(&[]).exclude_namespaces,
            defaults::EXCLUDED_NAMESPACES.map(str::to_string)
        );
        assert_eq!(
            options(&["--service", "mesh/injector"]).exclude_namespaces,
            ["mesh", "kube-system"]
        );
        assert_eq!(
            options(&["--service", "kube-system/injector"]).exclude_namespaces,
            ["kube-system"]
        );
        assert!(options(&["--istio"]).exclude_namespaces.is_empty());
        assert!(options(&["--url", "https://x/inject"])
            .exclude_namespaces
            .is_empty());
        assert!(options(&["--exclude-namespaces", ""])
            .exclude_namespaces
            .is_empty());
        assert_eq!(
            options(&["--exclude-namespaces", "a,b"]).exclude_namespaces,
            ["a", "b"]
        );
    }
}
