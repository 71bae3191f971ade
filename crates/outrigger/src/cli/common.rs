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

/// Native-sidecar mode as Istio's `ENABLE_NATIVE_SIDECARS` / `--native-sidecars` understand it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NativeMode {
    /// Always native sidecars (init containers with `restartPolicy: Always`).
    True,
    /// Never native sidecars.
    False,
    /// Decide from the cluster; offline this follows `ENABLE_NATIVE_SIDECARS`.
    Auto,
}
