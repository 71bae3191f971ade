//! Hot reload: watch the parent directories of the configuration and certificate files
//! (ConfigMap and Secret volumes swap a `..data` symlink), debounce, rebuild, and swap atomically.
//! A broken new configuration or certificate is rejected with a log line and a metric; the last
//! good one keeps serving.
//!
//! The configuration and the certificates reload in two tasks, each woken by every change: a
//! configuration whose check takes long (it renders the templates, within the request
//! deadline) never holds up a rotated certificate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use outrigger_inject::guard;

use super::client_auth::ClientAuth;
use super::failsafe;
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

/// Rounds of [`settled_read`] before the last read is taken as it is.
const MAX_SETTLE_ROUNDS: usize = 20;

/// The configuration files and what the reloader knows of them.
struct FileConfig {
    paths: Paths,
    /// What was last read (so unrelated events cause no work and a refusal is logged once).
    attempted: Texts,
    /// What the configuration in force was built from.
    good: Texts,
}

/// Configuration reload bookkeeping.
struct ConfigReloader {
    state: Arc<State>,
    /// Configuration files.
    config: FileConfig,
    /// Pause between the reads of [`settled_read`].
    settle: Duration,
}

/// Certificate and client CA reload bookkeeping.
struct CertReloader {
    state: Arc<State>,
    certs: Option<CertFiles>,
    last_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// The client CA bundle (`--clientCaFile`).
    client_auth: Option<Arc<ClientAuth>>,
}

/// Start watching the configuration files (`config`: their paths and the documents loaded at
/// start-up), the certificate files and the client CA bundle. The returned watcher must be kept
/// alive.
pub fn spawn(
    state: Arc<State>,
    config: Option<(Paths, Texts)>,
    certs: Option<CertFiles>,
    client_auth: Option<Arc<ClientAuth>>,
    debounce: Duration,
) -> Result<RecommendedWatcher> {
    let (config_tx, config_rx) = mpsc::unbounded_channel();
    let (cert_tx, cert_rx) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        match ev {
            Ok(e) if matches!(e.kind, EventKind::Access(_)) => return,
            Ok(e) => tracing::debug!("Injector watch update: {e:?}"),
            Err(e) => {
                tracing::error!("Watcher error: {e}");
                return;
            }
        }
        let _ = config_tx.send(());
        let _ = cert_tx.send(());
    })
    .context("creating the file watcher")?;
    let config = config.map(|(paths, texts)| FileConfig {
        paths,
        attempted: texts.clone(),
        good: texts,
    });
    let mut files: Vec<&Path> = match &config {
        Some(c) => vec![&c.paths.config, &c.paths.values, &c.paths.mesh],
        None => Vec::new(),
    };
    if let Some(c) = &certs {
        files.push(&c.cert);
        files.push(&c.key);
    }
    if let Some(a) = &client_auth {
        files.push(a.file());
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
    if let Some(config) = config {
        let reloader = ConfigReloader {
            state: state.clone(),
            config,
            settle: debounce.max(Duration::from_millis(10)),
        };
        tokio::spawn(async move {
            let mut reloader = reloader;
            let mut rx = config_rx;
            while changed(&mut rx, debounce).await {
                reloader.reload_config().await;
            }
        });
    }
    let reloader = CertReloader {
        state,
        certs,
        last_cert,
        client_auth,
    };
    tokio::spawn(async move {
        let mut reloader = reloader;
        let mut rx = cert_rx;
        while changed(&mut rx, debounce).await {
            reloader.reload_cert();
            reloader.reload_client_ca();
        }
    });
    Ok(watcher)
}

/// Wait for the next change, then `debounce` more (changes arriving meanwhile are absorbed:
/// Istio's 100 ms debounce); false when the watcher is gone.
async fn changed(rx: &mut mpsc::UnboundedReceiver<()>, debounce: Duration) -> bool {
    if rx.recv().await.is_none() {
        return false;
    }
    tokio::time::sleep(debounce).await;
    while rx.try_recv().is_ok() {}
    true
}

fn parent_dir(file: &Path) -> Option<PathBuf> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    dir.is_dir().then_some(dir)
}

/// Read the files until two reads `settle` apart agree (a writer still at work, e.g. a `cp`
/// that truncated the file and has not written all of it, changes them in between).
async fn settled_read(paths: &Paths, settle: Duration) -> Result<Texts> {
    let mut texts = snapshot::read(paths)?;
    for _ in 0..MAX_SETTLE_ROUNDS {
        tokio::time::sleep(settle).await;
        let again = snapshot::read(paths)?;
        if again == texts {
            break;
        }
        texts = again;
    }
    Ok(texts)
}

impl ConfigReloader {
    /// Re-read the files and offer the configuration they make (see [`failsafe::offer`]).
    /// Keep-last-good holds for every breakage: a read or parse error, a config file, values or
    /// mesh file that disappeared or became empty, and a configuration that cannot inject pods
    /// where the one in force can (an empty or truncated config file).
    async fn reload_config(&mut self) {
        let settle = self.settle;
        let fc = &mut self.config;
        let texts = match settled_read(&fc.paths, settle).await {
            Ok(t) => t,
            Err(e) => {
                let source = fc.paths.config.display().to_string();
                return failsafe::refuse(&self.state, &source, &crate::report::chain(&e));
            }
        };
        if texts == fc.attempted {
            return;
        }
        fc.attempted = texts.clone();
        let source = texts.describe(&fc.paths);
        if texts.embedded && !fc.good.embedded {
            let msg = format!("{} disappeared", fc.paths.config.display());
            return failsafe::refuse(&self.state, &source, &msg);
        }
        if !texts.embedded && !fc.good.embedded {
            for ((name, current), (_, new)) in
                fc.good.documents().into_iter().zip(texts.documents())
            {
                if let Err(refusal) = guard::document_change(name, current, new) {
                    return failsafe::refuse(&self.state, &source, &refusal.to_string());
                }
            }
        }
        let (t, p) = (texts.clone(), fc.paths.clone());
        let built = tokio::task::spawn_blocking(move || snapshot::build(&t, &p)).await;
        match built {
            Ok(Ok(snap)) => {
                if failsafe::offer(&self.state, Arc::new(snap), &source).await {
                    for note in &texts.notes {
                        tracing::info!("{}", note.trim_start_matches("note: "));
                    }
                    fc.good = texts;
                }
            }
            Ok(Err(e)) => failsafe::refuse(&self.state, &source, &crate::report::chain(&e)),
            Err(e) => failsafe::refuse(&self.state, &source, &format!("reload task failed: {e}")),
        }
    }
}

impl CertReloader {
    fn reload_client_ca(&self) {
        let Some(auth) = &self.client_auth else {
            return;
        };
        match auth.reload() {
            Ok(false) => {}
            Ok(true) => {
                self.state.metrics.reload("client_ca", true);
                tracing::info!(client_ca = %auth.file().display(), "client CA bundle reloaded");
            }
            Err(e) => {
                self.state.metrics.reload("client_ca", false);
                tracing::error!(client_ca = %auth.file().display(), "client CA bundle reload failed: {}; keeping the current bundle", crate::report::chain(&e));
            }
        }
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
        let (cert_name, key_name) = (
            files.cert.display().to_string(),
            files.key.display().to_string(),
        );
        match tls::load_named(
            (&cert_name, &cert),
            (&key_name, &key),
            &self.state.inject.compliance_policy,
        ) {
            Ok(loaded) => {
                let not_after = loaded.not_after;
                self.state.certs.swap(loaded);
                self.state.metrics.cert_expiry.set(not_after);
                self.state.metrics.reload("certificate", true);
                tracing::info!(cert = %files.cert.display(), not_after, "serving certificate reloaded");
            }
            Err(e) => {
                self.state.metrics.reload("certificate", false);
                tracing::error!(cert = %files.cert.display(), "certificate reload failed: {}; keeping the current certificate", crate::report::chain(&e));
            }
        }
    }
}
