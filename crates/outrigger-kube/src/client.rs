//! The one way every command connects to a cluster (`inject --kube`, `check --kube`,
//! `serve --kube`), and the one wording of its failures: the kubeconfig named once, as given,
//! and the API server tried; a transport failure said once (`Connection refused`), without
//! kube-rs' and hyper's wrappers (`ServiceError: client error (Connect): ...`).
//!
//! Where the configuration comes from, as kubectl: `--kubeconfig FILE`, else the files of
//! `KUBECONFIG` (merged; missing ones ignored unless all are), else `~/.kube/config`, else the
//! pod's service account (in-cluster).

use std::fmt;
use std::path::{Path, PathBuf};

use ::kube::config::{KubeConfigOptions, Kubeconfig};
use ::kube::{Client, Config};
use anyhow::{anyhow, bail, Context, Result};

use crate::report;

/// A client and what it points at, for messages.
#[derive(Clone)]
pub struct Connected {
    /// The client.
    pub client: Client,
    /// The API server and where its address came from:
    /// `https://10.0.0.1:6443 (kubeconfig ~/.kube/config, context prod)`.
    pub target: String,
}

impl Connected {
    /// `error` of a request to this cluster: when the server could not be reached, says which
    /// server was tried (and from which kubeconfig) in front.
    pub fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        if error.chain().any(|c| c.is::<Unreachable>()) {
            anyhow!(
                "cannot reach the Kubernetes API server {}: {}",
                self.target,
                report::chain(&error)
            )
        } else {
            error
        }
    }
}

/// A request that never got an answer from the API server (connection refused, TLS, DNS,
/// timeout): its innermost cause, said once.
#[derive(Debug)]
pub(crate) struct Unreachable(String);

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

/// A kube-rs error as one message: the API's status message for an answer (404, 403, ...), the
/// transport's own cause for no answer ([`Unreachable`]), else the error's causes said once.
pub fn api_error(error: ::kube::Error) -> anyhow::Error {
    match error {
        ::kube::Error::Api(status) => anyhow!("{}", status.message),
        ::kube::Error::Service(_) | ::kube::Error::HyperError(_) => {
            let mut causes = Vec::new();
            let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&error);
            while let Some(c) = cur {
                causes.push(c.to_string());
                cur = c.source();
            }
            // The wrappers (`ServiceError: ...`, `client error (Connect)`) say nothing of
            // their own; the transport's causes do.
            let own: Vec<&str> = causes
                .iter()
                .map(String::as_str)
                .filter(|t| !t.starts_with("ServiceError") && !t.starts_with("client error ("))
                .collect();
            let mut text = String::new();
            for t in own {
                if !text.contains(t) {
                    if !text.is_empty() {
                        text.push_str(": ");
                    }
                    text.push_str(t);
                }
            }
            anyhow::Error::new(Unreachable(text))
        }
        other => anyhow!("{}", report::chain(&anyhow::Error::new(other))),
    }
}

/// The kubeconfig files of `KUBECONFIG`, or `~/.kube/config`, that exist.
fn kubeconfig_files() -> Result<Option<(Vec<PathBuf>, String)>> {
    if let Some(value) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let listed: Vec<PathBuf> = std::env::split_paths(&value)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        let present: Vec<PathBuf> = listed.iter().filter(|p| p.exists()).cloned().collect();
        if present.is_empty() {
            bail!(
                "no usable Kubernetes configuration: none of the files of KUBECONFIG exists ({})",
                value.to_string_lossy()
            );
        }
        let shown = present
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Ok(Some((
            present,
            format!("kubeconfig {shown} from KUBECONFIG"),
        )));
    }
    let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".kube/config"));
    Ok(home
        .filter(|p| p.exists())
        .map(|p| (vec![p], "kubeconfig ~/.kube/config".to_string())))
}

/// Read and merge kubeconfig files (kubectl's rules: the first file to set a value wins).
fn read_kubeconfig(files: &[PathBuf]) -> Result<Kubeconfig> {
    let mut merged = Kubeconfig::default();
    for path in files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading kubeconfig {}", path.display()))?;
        let file = Kubeconfig::from_yaml(&text)
            .map_err(|e| anyhow!("reading kubeconfig {}: {e}", path.display()))?;
        merged = merged
            .merge(file)
            .map_err(|e| anyhow!("merging kubeconfig {}: {e}", path.display()))?;
    }
    Ok(merged)
}

/// Connect with `kubeconfig` (a file) and `context`, else as kubectl infers (see the module
/// documentation). Nothing is sent to the server yet.
pub async fn connect(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Connected> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let files = match kubeconfig {
        Some(path) => Some((
            vec![path.to_path_buf()],
            format!("kubeconfig {}", path.display()),
        )),
        None => kubeconfig_files()?,
    };
    let (config, source) = match files {
        Some((paths, source)) => {
            let file = read_kubeconfig(&paths)?;
            let config = Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| anyhow!("loading {source}: {e}"))?;
            let source = match context {
                Some(c) => format!("{source}, context {c}"),
                None => source,
            };
            (config, source)
        }
        None if context.is_some() => bail!(
            "--context {}: no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist)",
            context.unwrap_or_default()
        ),
        None => {
            let config = Config::incluster().map_err(|e| {
                report::with_hint(
                    anyhow!(
                        "no usable Kubernetes configuration: KUBECONFIG is unset, ~/.kube/config does \
                         not exist, and this is not a pod with a service account ({e})"
                    ),
                    "pass --kubeconfig FILE, or set KUBECONFIG",
                )
            })?;
            (config, "in-cluster service account".to_string())
        }
    };
    let url = config.cluster_url.to_string();
    let target = format!("{url} ({source})");
    let client = Client::try_from(config)
        .map_err(|e| anyhow!("building a client for {target}: {}", api_error(e)))?;
    Ok(Connected { client, target })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_kubeconfig_is_named_once_as_given() {
        let err = connect(Some(Path::new("/nonexistent/kube/config")), None)
            .await
            .err()
            .expect("refused");
        let text = report::chain(&err);
        assert_eq!(
            text,
            "reading kubeconfig /nonexistent/kube/config: No such file or directory"
        );
    }

    #[tokio::test]
    async fn an_unreachable_server_is_named_with_the_cause_said_once() {
        let dir = std::env::temp_dir().join(format!("outrigger-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("config");
        // Port 1 on loopback: nothing listens there.
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: \
             x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
        )
        .expect("kubeconfig");
        let c = connect(Some(&path), None).await.expect("config loads");
        let api = ::kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(c.client.clone());
        let err = api
            .get("default")
            .await
            .map_err(api_error)
            .context("reading namespace default")
            .expect_err("nothing listens");
        let text = report::chain(&c.explain(err));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            text.starts_with(&format!(
                "cannot reach the Kubernetes API server https://127.0.0.1:1/ (kubeconfig {}): \
                 reading namespace default: ",
                path.display()
            )) && text.contains("Connection refused")
                && !text.contains("client error")
                && !text.contains("ServiceError"),
            "{text}"
        );
    }
}
