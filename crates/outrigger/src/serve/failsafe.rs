//! Keep-last-good for every configuration change, mounted files and ConfigMaps alike: a new
//! configuration replaces the one in force only when the library's guard rules
//! ([`outrigger_inject::guard`]) allow it, and a server whose configuration cannot inject pods
//! reports itself not ready (unless `--allow-empty-config`).
//!
//! The check renders the templates for a probe pod; it runs on the blocking pool within a time
//! budget ([`assess_within`]), so a template that loops for long can neither stall the
//! connection workers nor hold up the reload: past its budget the configuration is refused.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use outrigger_go::work::{self, Budget};
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::NativeMode;
use outrigger_inject::guard::{self, Adds, Unusable};

use super::handler::State;

/// What the server knows about the usability of the configuration in force.
#[derive(Debug)]
pub struct ConfigHealth {
    /// `--allow-empty-config`: serve (and be ready with) a configuration that cannot inject.
    allow_unusable: bool,
    /// Verdict of [`guard::assess`] on the configuration in force.
    verdict: Mutex<Result<Adds, Unusable>>,
    /// Told to read the configuration from the cluster, no configuration was read yet: why
    /// (naming the ConfigMaps). Not ready, and admission requests are refused, until one is.
    pending: Mutex<Option<String>>,
}

impl ConfigHealth {
    /// Health of a first configuration assessed `verdict`.
    pub fn new(allow_unusable: bool, verdict: Result<Adds, Unusable>) -> ConfigHealth {
        ConfigHealth {
            allow_unusable,
            verdict: Mutex::new(verdict),
            pending: Mutex::new(None),
        }
    }

    /// Health of a server told to read its configuration from the cluster that has not read
    /// one yet: `why` names the ConfigMaps and the cause.
    pub fn waiting(allow_unusable: bool, why: String) -> ConfigHealth {
        let health = ConfigHealth::new(allow_unusable, Ok(Adds::default()));
        health.set_pending(Some(why));
        health
    }

    /// Why no configuration is in force yet (`None`: one is).
    pub fn pending(&self) -> Option<String> {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Set or clear [`ConfigHealth::pending`].
    pub fn set_pending(&self, why: Option<String>) {
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = why;
    }

    /// The verdict on the configuration in force.
    pub fn verdict(&self) -> Result<Adds, Unusable> {
        self.verdict
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, verdict: Result<Adds, Unusable>) {
        *self.verdict.lock().unwrap_or_else(|e| e.into_inner()) = verdict;
    }

    /// Why the server is not ready because of its configuration (`None`: it is).
    pub fn not_ready(&self) -> Option<String> {
        if let Some(why) = self.pending() {
            return Some(why);
        }
        match (self.allow_unusable, self.verdict()) {
            (false, Err(why)) => Some(format!(
                "configuration cannot inject pods: {why} (--allow-empty-config serves it anyway)"
            )),
            _ => None,
        }
    }
}

/// Whether the probe injection renders native sidecars (`auto` probes the non-native form).
pub fn probe_native(mode: NativeMode) -> bool {
    mode == NativeMode::Enabled
}

/// The work the configuration check may take ([`outrigger_go::work`]: template steps, list
/// elements copied, merged list elements): thousands of times what Istio's templates take for
/// the probe pod (a few hundred), a fraction of a second. A work bound, not a time: the verdict on a configuration
/// is the same however loaded the machine is.
pub const CHECK_WORK: u64 = 4_000_000;

/// [`guard::assess`] on the blocking pool, within [`CHECK_WORK`] and `limit` (a backstop in
/// time): past either, the render is stopped and the configuration is unusable (a configuration
/// whose templates take that long for a plain pod cannot inject pods within their deadline).
pub async fn assess_within(
    snapshot: Arc<Snapshot>,
    native: bool,
    limit: Duration,
) -> Result<Adds, Unusable> {
    let budget = Budget::with_work_limit(Some(Instant::now() + limit), CHECK_WORK);
    let b = budget.clone();
    let check = move || work::scope(&b, || guard::assess(&snapshot, native));
    match tokio::task::spawn_blocking(check).await {
        Ok(Err(_)) if budget.is_exhausted() && budget.work() >= CHECK_WORK => {
            Err(Unusable::RenderFails(format!(
                "rendering a probe pod takes more than {CHECK_WORK} template steps"
            )))
        }
        Ok(Err(_)) if budget.is_exhausted() => Err(Unusable::RenderFails(format!(
            "rendering a probe pod takes longer than {limit:?}"
        ))),
        Ok(verdict) => verdict,
        Err(e) => Err(Unusable::RenderFails(format!("the check failed: {e}"))),
    }
}

/// The time backstop of the configuration check.
pub const CHECK_TIME: Duration = Duration::from_secs(60);

/// Assess the configuration the server starts with (within `limit`, see [`assess_within`]);
/// log when it cannot inject pods.
pub async fn initial(
    snapshot: &Arc<Snapshot>,
    native: NativeMode,
    allow_unusable: bool,
    source: &str,
    limit: Duration,
) -> ConfigHealth {
    let verdict = assess_within(snapshot.clone(), probe_native(native), limit).await;
    log_unsupported(source, &verdict);
    if let Ok(adds) = &verdict {
        tracing::info!(source, "configuration adds {adds} to a probe pod");
    }
    if let Err(why) = &verdict {
        if allow_unusable {
            tracing::warn!(
                source,
                "configuration cannot inject pods: {why}; serving it (--allow-empty-config)"
            );
        } else {
            tracing::error!(source, "configuration cannot inject pods: {why}; not ready until a usable configuration is loaded (or start with --allow-empty-config)");
        }
    }
    ConfigHealth::new(allow_unusable, verdict)
}

/// Count and log a refused configuration change; the configuration in force stays.
pub fn refuse(state: &State, source: &str, why: &str) {
    tracing::error!(
        source,
        "update error: {why}; keeping the last good configuration"
    );
    state.metrics.reload("config", false);
}

/// Log each use of what outrigger does not implement in a configuration just read, one line
/// each, with the template and the feature as fields.
fn log_unsupported(source: &str, verdict: &Result<Adds, Unusable>) {
    if let Err(Unusable::Unsupported(found)) = verdict {
        for f in found {
            tracing::error!(source, template = %f.template, feature = %f.feature(), "unsupported template feature: {f}");
        }
    }
}

/// Offer a new configuration read from `source`: swapped in when the guard allows it (returns
/// `true`), else refused with a log line and the failure metric (returns `false`). The check
/// runs within the request deadline ([`assess_within`]).
pub async fn offer(state: &State, snapshot: Arc<Snapshot>, source: &str) -> bool {
    let native = probe_native(state.inject.native_mode);
    let verdict = assess_within(snapshot.clone(), native, CHECK_TIME).await;
    state.metrics.set_unsupported(&verdict);
    log_unsupported(source, &verdict);
    // While waiting for the cluster's configuration, the verdict in force is the placeholder's
    // (adds nothing), which any configuration may replace.
    if let Err(refusal) = guard::replacement(&state.config_health.verdict(), &verdict) {
        refuse(state, source, &refusal.to_string());
        return false;
    }
    for w in &snapshot.config.warnings {
        tracing::warn!("{w}");
    }
    state.snapshot.store(snapshot);
    state.metrics.reload("config", true);
    match &verdict {
        Ok(adds) => tracing::info!(
            source,
            "configuration reloaded; it adds {adds} to a probe pod"
        ),
        Err(why) => match state.config_health.allow_unusable {
            true => tracing::warn!(
                source,
                "configuration reloaded; it cannot inject pods: {why} (--allow-empty-config)"
            ),
            false => tracing::error!(
                source,
                "configuration reloaded; it cannot inject pods: {why}; not ready"
            ),
        },
    }
    state.metrics.config_usable.set(i64::from(verdict.is_ok()));
    state.config_health.set(verdict);
    state.config_health.set_pending(None);
    true
}
