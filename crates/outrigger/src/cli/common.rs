//! Flags shared by several subcommands.

/// Istio's configuration files, as `istioctl kube-inject` names its flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigFiles {
    /// Injector config file (the `config` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "injectConfigFile")]
    pub inject_config_file: Option<std::path::PathBuf>,
    /// Injector values file (the `values` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "valuesFile")]
    pub values_file: Option<std::path::PathBuf>,
    /// Mesh config file (the `mesh` key of the istio ConfigMap).
    #[arg(long = "meshConfigFile")]
    pub mesh_config_file: Option<std::path::PathBuf>,
}

/// Which cluster, and which namespace of it holds Istio's ConfigMaps, a `--kube` command reads:
/// the flags of `inject --kube` and `check --kube` (istioctl's `-i/--istioNamespace`, kubectl's
/// `--kubeconfig` and `--context`).
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterTarget {
    /// With --kube: the namespace of Istio's ConfigMaps.
    #[arg(
        short = 'i',
        long = "istioNamespace",
        default_value = "istio-system",
        requires = "kube"
    )]
    pub istio_namespace: String,
    /// With --kube: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long = "kubeconfig", requires = "kube")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// With --kube: the kubeconfig context (default: its current context).
    #[arg(long = "context", requires = "kube")]
    pub context: Option<String>,
}

/// What a `--kube` command lists, as kubectl's `-n`/`-A`/`--chunk-size` say it (`drift`'s pods,
/// `preview`'s workloads).
#[derive(Debug, Clone, clap::Args)]
pub struct ListScope {
    /// With --kube and without -f: the namespace whose objects are read (default: the
    /// kubeconfig context's).
    #[arg(
        short = 'n',
        long = "namespace",
        requires = "kube",
        conflicts_with = "all_namespaces"
    )]
    pub namespace: Option<String>,
    /// With --kube and without -f: read the objects of every namespace.
    #[arg(short = 'A', long = "all-namespaces", requires = "kube")]
    pub all_namespaces: bool,
    /// With --kube: objects read per list request (the API server's `limit`; `continue` pages
    /// on).
    #[arg(long = "chunk-size", default_value_t = 500, requires = "kube",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
}

impl ListScope {
    /// The namespace to list: `None` with `-A`, else `-n` or `context_default` (the kubeconfig
    /// context's namespace).
    pub fn namespace_or(&self, context_default: &str) -> Option<String> {
        (!self.all_namespaces).then(|| {
            self.namespace
                .clone()
                .unwrap_or_else(|| context_default.to_string())
        })
    }
}

/// The `--template-env` flag: what the templates' `env` and `expandenv` may read.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TemplateEnvArgs {
    /// Environment variables the templates' `env` and `expandenv` functions may read, besides
    /// ENABLE_NATIVE_SIDECARS: NAME (its value in this environment) or NAME=VALUE;
    /// comma-separated or repeated. Other variables read as unset.
    #[arg(
        long = "template-env",
        value_name = "NAME[=VALUE]",
        value_delimiter = ','
    )]
    pub template_env: Vec<String>,
}
