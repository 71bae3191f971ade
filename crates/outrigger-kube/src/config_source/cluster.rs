//! The injector configuration of `--kube`: the cluster's ConfigMaps, as `istioctl kube-inject`
//! reads them, except the inputs given as files.

use std::path::PathBuf;

use anyhow::{Context, Result};
use outrigger_inject::config::Snapshot;

use super::files::{manifests_snapshot_from, Input};
use super::{ClusterSource, ConfigPaths};
use crate::config_watch::{self, ConfigMapRef};
use crate::inject_source::{self, DEFAULT_INJECT_CONFIG_MAP, DEFAULT_MESH_CONFIG_MAP};

/// The snapshot of `inject --kube`: the injector ConfigMap's `config` and `values` keys and the
/// mesh ConfigMap's `mesh` key, as `istioctl kube-inject` reads them, except the inputs given as
/// files. The cluster is not contacted when every input is a file. `drift --kube` reads its
/// configuration in force the same way.
pub fn cluster_snapshot(
    c: &ClusterSource,
    files: &ConfigPaths,
    revision: &str,
) -> Result<Snapshot> {
    let configmap = |name: &str, default: &str| ConfigMapRef {
        namespace: c.istio_namespace.clone(),
        name: inject_source::configmap_name(name, default, revision),
    };
    let inject = configmap(&c.inject_config_map_name, DEFAULT_INJECT_CONFIG_MAP);
    let mesh = configmap(&c.mesh_config_map_name, DEFAULT_MESH_CONFIG_MAP);
    let mut inject_keys = Vec::new();
    if files.inject_config_file.is_none() {
        inject_keys.push(config_watch::CONFIG_KEY);
    }
    if files.values_file.is_none() {
        inject_keys.push(config_watch::VALUES_KEY);
    }
    let read_mesh = files.mesh_config_file.is_none();
    let (mut inject_values, mesh_value) = if inject_keys.is_empty() && !read_mesh {
        (Vec::new(), None)
    } else {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the runtime")?;
        rt.block_on(async {
            let cluster =
                crate::client::connect(c.kubeconfig.as_deref(), c.context.as_deref()).await?;
            let client = cluster.client.clone();
            let hint = |flag: &str, file_flags: &str| {
                format!(
                    "is Istio installed in namespace {}? choose it with --istioNamespace, {flag} \
                     or --revision, or pass {file_flags}",
                    c.istio_namespace
                )
            };
            let inject_values = if inject_keys.is_empty() {
                Vec::new()
            } else {
                inject_source::read_keys(
                    client.clone(),
                    &inject,
                    &inject_keys,
                    &hint(
                        "--injectConfigMapName",
                        "--injectConfigFile and --valuesFile",
                    ),
                )
                .await
                .map_err(|e| cluster.explain(e))?
            };
            let mesh_value = if read_mesh {
                let mut v = inject_source::read_keys(
                    client.clone(),
                    &mesh,
                    &[config_watch::MESH_KEY],
                    &hint("--meshConfigMapName", "--meshConfigFile"),
                )
                .await
                .map_err(|e| cluster.explain(e))?;
                v.pop()
            } else {
                None
            };
            anyhow::Ok((inject_values, mesh_value))
        })
        .map_err(|e| e.context("--kube"))?
    };
    let name =
        |r: &ConfigMapRef, key: &str| format!("ConfigMap {}/{} key {key:?}", r.namespace, r.name);
    let config_name = name(&inject, config_watch::CONFIG_KEY);
    let values_name = name(&inject, config_watch::VALUES_KEY);
    let mesh_name = name(&mesh, config_watch::MESH_KEY);
    // Taken in the order they were asked for.
    let values_text = files
        .values_file
        .is_none()
        .then(|| inject_values.pop())
        .flatten();
    let config_text = files
        .inject_config_file
        .is_none()
        .then(|| inject_values.pop())
        .flatten();
    fn input<'a>(
        file: &'a Option<PathBuf>,
        text: &'a Option<String>,
        name: &'a str,
    ) -> Option<Input<'a>> {
        match (file, text) {
            (Some(p), _) => Some(Input::File(p)),
            (None, Some(t)) => Some(Input::Text { name, text: t }),
            (None, None) => None,
        }
    }
    manifests_snapshot_from(
        input(&files.inject_config_file, &config_text, &config_name),
        input(&files.values_file, &values_text, &values_name),
        input(&files.mesh_config_file, &mesh_value, &mesh_name),
        revision,
    )
}
