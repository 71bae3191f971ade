//! What the loader is told to read: Istio's configuration files ([`ConfigPaths`], with
//! `--config-dir`) and the cluster holding its ConfigMaps ([`ClusterSource`]), as plain values
//! the binary's flag groups convert to.

use std::path::PathBuf;

/// Istio's configuration files a command reads, as `istioctl kube-inject` names its flags
/// (`--injectConfigFile`, `--valuesFile`, `--meshConfigFile`), and `--config-dir`.
#[derive(Debug, Clone, Default)]
pub struct ConfigPaths {
    /// The injector config (the `config` key of the istio-sidecar-injector ConfigMap).
    pub inject_config_file: Option<PathBuf>,
    /// The injector values (the `values` key of the istio-sidecar-injector ConfigMap).
    pub values_file: Option<PathBuf>,
    /// The mesh config (the `mesh` key of the istio ConfigMap).
    pub mesh_config_file: Option<PathBuf>,
    /// A directory holding the inputs not given as files, named [`CONFIG_DIR_FILES`].
    pub config_dir: Option<PathBuf>,
}

/// The file names `--config-dir` reads: the keys of Istio's ConfigMaps, as istiod mounts them.
pub const CONFIG_DIR_FILES: [&str; 3] = ["config", "values", "mesh"];

impl ConfigPaths {
    /// The files to read: the flags, with `--config-dir`'s files for the inputs not given
    /// (`config` and `values` must be there; `mesh` is taken when present).
    pub fn resolved(&self) -> anyhow::Result<ConfigPaths> {
        let Some(dir) = &self.config_dir else {
            return Ok(self.clone());
        };
        if !dir.is_dir() {
            anyhow::bail!(
                "--config-dir {}: {}",
                dir.display(),
                if dir.exists() {
                    "not a directory"
                } else {
                    "no such directory"
                }
            );
        }
        let pick = |given: &Option<std::path::PathBuf>,
                    name: &str,
                    required: bool|
         -> anyhow::Result<Option<std::path::PathBuf>> {
            if given.is_some() {
                return Ok(given.clone());
            }
            let path = dir.join(name);
            if path.is_file() {
                Ok(Some(path))
            } else if required {
                let (cm, key) = match name {
                    "mesh" => ("istio", "mesh"),
                    other => ("istio-sidecar-injector", other),
                };
                Err(crate::report::with_hint(
                    anyhow::anyhow!("--config-dir {}: no file {name:?}", dir.display()),
                    format!(
                        "write it with `kubectl get cm {cm} -n istio-system -o \
                         jsonpath='{{.data.{key}}}' > {}`",
                        path.display()
                    ),
                ))
            } else {
                Ok(None)
            }
        };
        let [config, values, mesh] = CONFIG_DIR_FILES;
        Ok(ConfigPaths {
            inject_config_file: pick(&self.inject_config_file, config, true)?,
            values_file: pick(&self.values_file, values, true)?,
            mesh_config_file: pick(&self.mesh_config_file, mesh, false)?,
            config_dir: None,
        })
    }
}

/// The cluster whose ConfigMaps hold Istio's configuration (`inject --kube`, `drift --kube`,
/// `preview --kube`), as `istioctl kube-inject` names it.
#[derive(Debug, Clone, Default)]
pub struct ClusterSource {
    /// The injector ConfigMap (`-REVISION` is appended to the default name).
    pub inject_config_map_name: String,
    /// The mesh ConfigMap (`-REVISION` is appended to the default name).
    pub mesh_config_map_name: String,
    /// The namespace of Istio's ConfigMaps.
    pub istio_namespace: String,
    /// The kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    pub context: Option<String>,
}
