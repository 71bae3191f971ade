//! Hot reload: watch the parent directories of the configuration and certificate files
//! (ConfigMap and Secret volumes swap a `..data` symlink), debounce, rebuild, and swap atomically.
//! A broken new configuration or certificate is rejected with a log line and a metric; the last
//! good one keeps serving.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::handler::State;
use super::snapshot::{self, Paths, Texts};
use super::tls;

/// Certificate files to watch.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// PEM chain.
    pub cert: PathBuf,
    /// PEM key.
    pub key: PathBuf,
}

/// Reload bookkeeping: what was last attempted, so unrelated events cause no work.
struct Reloader {
    state: Arc<State>,
    /// Configuration files and what was last read from them (`None`: the configuration comes
    /// from elsewhere, e.g. a ConfigMap under `serve --kube`).
    config: Option<(Paths, Texts)>,
    certs: Option<CertFiles>,
    last_cert: Option<(Vec<u8>, Vec<u8>)>,
}

/// Start watching the configuration files (`config`: their paths and the documents loaded at
/// start-up) and the certificate files. The returned watcher must be kept alive.
pub fn spawn(
    state: Arc<State>,
    config: Option<(Paths, Texts)>,
    certs: Option<CertFiles>,
    debounce: Duration,
) -> Result<RecommendedWatcher> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        let _ = tx.send(ev);
    })
    .context("creating the file watcher")?;
    let mut files: Vec<&Path> = match &config {
        Some((paths, _)) => vec![&paths.config, &paths.values, &paths.mesh],
        None => Vec::new(),
    };
    if let Some(c) = &certs {
        files.push(&c.cert);
        files.push(&c.key);
    }
    let mut dirs: Vec<PathBuf> = files.iter().filter_map(|f| parent_dir(f)).collect();
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        match watcher.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => tracing::info!(dir = %dir.display(), "watching for configuration changes"),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "could not watch {}: {e}", dir.display())
            }
        }
    }
    let last_cert = certs
        .as_ref()
        .and_then(|c| Some((std::fs::read(&c.cert).ok()?, std::fs::read(&c.key).ok()?)));
    let reloader = Reloader {
        state,
        config,
        certs,
        last_cert,
    };
    tokio::spawn(reloader.run(rx, debounce));
    Ok(watcher)
}

fn parent_dir(file: &Path) -> Option<PathBuf> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    dir.is_dir().then_some(dir)
}

impl Reloader {
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
        debounce: Duration,
    ) {
        while let Some(ev) = rx.recv().await {
            match ev {
                Ok(e) if matches!(e.kind, EventKind::Access(_)) => continue,
                Ok(e) => tracing::debug!("Injector watch update: {e:?}"),
                Err(e) => {
                    tracing::error!("Watcher error: {e}");
                    continue;
                }
            }
            // Events arriving while the timer runs are absorbed (Istio's 100 ms debounce).
            tokio::time::sleep(debounce).await;
            while rx.try_recv().is_ok() {}
            self.reload_config().await;
            self.reload_cert();
        }
    }

    async fn reload_config(&mut self) {
        let Some((paths, last_config)) = &mut self.config else {
            return;
        };
        let texts = match snapshot::read(paths) {
            Ok(t) => t,
            Err(e) => return self.config_failed(&format!("{e:#}")),
        };
        if texts == *last_config {
            return;
        }
        let was_files = !last_config.embedded;
        *last_config = texts.clone();
        if texts.embedded && was_files {
            let msg = format!("{} disappeared", paths.config.display());
            return self.config_failed(&msg);
        }
        let source = texts.describe(paths);
        let built = tokio::task::spawn_blocking(move || snapshot::build(&texts)).await;
        match built {
            Ok(Ok(snap)) => {
                for w in &snap.config.warnings {
                    tracing::warn!("{w}");
                }
                self.state.snapshot.store(Arc::new(snap));
                self.state.metrics.reload("config", true);
                tracing::info!(source = %source, "configuration reloaded");
            }
            Ok(Err(e)) => self.config_failed(&format!("{e:#}")),
            Err(e) => self.config_failed(&format!("reload task failed: {e}")),
        }
    }

    fn config_failed(&self, msg: &str) {
        self.state.metrics.reload("config", false);
        tracing::error!("update error: {msg}; keeping the last good configuration");
    }

    fn reload_cert(&mut self) {
        let Some(files) = &self.certs else { return };
        let (cert, key) = match (std::fs::read(&files.cert), std::fs::read(&files.key)) {
            (Ok(c), Ok(k)) => (c, k),
            (Err(e), _) | (_, Err(e)) => {
                self.state.metrics.reload("certificate", false);
                tracing::error!("certificate reload failed: {e}; keeping the current certificate");
                return;
            }
        };
        if self
            .last_cert
            .as_ref()
            .is_some_and(|(c, k)| *c == cert && *k == key)
        {
            return;
        }
        self.last_cert = Some((cert.clone(), key.clone()));
        match tls::load_pem(&cert, &key, &self.state.inject.compliance_policy) {
            Ok(loaded) => {
                let not_after = loaded.not_after;
                self.state.certs.swap(loaded);
                self.state.metrics.cert_expiry.set(not_after);
                self.state.metrics.reload("certificate", true);
                tracing::info!(cert = %files.cert.display(), not_after, "serving certificate reloaded");
            }
            Err(e) => {
                self.state.metrics.reload("certificate", false);
                tracing::error!(cert = %files.cert.display(), "certificate reload failed: {e:#}; keeping the current certificate");
            }
        }
    }
}
