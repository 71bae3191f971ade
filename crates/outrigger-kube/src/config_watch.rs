//! Injector configuration from the API: watch the injector ConfigMap (keys `config`
//! and `values`) and optionally the mesh ConfigMap (key `mesh`), and turn every change into a
//! new configuration, keeping the last good one when a change does not parse.
//!
//! [`watch_configmaps`] yields the raw documents; [`keep_last_good`] parses them (with
//! [`Snapshot`] in [`snapshots`]) and reports what to swap in.

use std::sync::Arc;

use ::kube::runtime::watcher::{self, watch_object};
use ::kube::runtime::WatchStreamExt;
use ::kube::{Api, Client};
use futures::{stream, Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use outrigger_inject::config::Snapshot;
use outrigger_inject::guard;

/// Key of the injector config in the injector ConfigMap.
pub const CONFIG_KEY: &str = "config";
/// Key of the values in the injector ConfigMap.
pub const VALUES_KEY: &str = "values";
/// Key of the mesh config in the mesh ConfigMap.
pub const MESH_KEY: &str = "mesh";

/// A ConfigMap reference `NAMESPACE/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ConfigMapRef {
    /// Parse `NAMESPACE/NAME` (the `--injectConfigMap` / `--meshConfigMap` flag syntax).
    pub fn parse(s: &str) -> anyhow::Result<ConfigMapRef> {
        let (namespace, name) = crate::webhook_object::parse_namespaced(s)?;
        Ok(ConfigMapRef { namespace, name })
    }
}

/// The three documents of one configuration, as read from the ConfigMaps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawConfig {
    /// Injector config (`config` key).
    pub config: String,
    /// Values (`values` key).
    pub values: String,
    /// Mesh config (`mesh` key); `None` without a mesh ConfigMap (defaults apply).
    pub mesh: Option<String>,
}

/// What a consumer does after a ConfigMap change.
#[derive(Debug, Clone)]
pub enum ConfigEvent<T> {
    /// A new configuration parsed: swap it in.
    Loaded(Arc<T>),
    /// The change was rejected; the previous configuration (if any) stays in force.
    Rejected {
        /// Why (Istio's wording: `failed to read injection config from ConfigMap: ...`).
        error: String,
        /// Whether a previous good configuration is still serving.
        keeping_last_good: bool,
    },
}

/// The current object of one watched ConfigMap (`None`: absent or deleted).
#[derive(Debug, Clone)]
enum Update {
    Inject(Option<ConfigMap>),
    Mesh(Option<ConfigMap>),
}

fn version(cm: &Option<ConfigMap>) -> Option<String> {
    cm.as_ref()
        .and_then(|c| c.metadata.resource_version.clone())
}

fn key(cm: &ConfigMap, key: &str, what: &str) -> Result<String, String> {
    cm.data
        .as_ref()
        .and_then(|d| d.get(key))
        .cloned()
        .ok_or_else(|| format!("missing ConfigMap {what} key {key:?}"))
}

/// Build the raw configuration from the current objects (with istiod's error texts).
/// With `mesh_required`, a mesh ConfigMap that is absent is an error instead of Istio's mesh
/// defaults.
fn assemble(
    inject: &Option<ConfigMap>,
    mesh: Option<&Option<ConfigMap>>,
    mesh_required: bool,
) -> Result<RawConfig, String> {
    let cm = inject
        .as_ref()
        .ok_or_else(|| "no ConfigMap found".to_string())?;
    let config = key(cm, CONFIG_KEY, "config")?;
    let values = key(cm, VALUES_KEY, "values")?;
    let mesh = match mesh {
        Some(None) if mesh_required => return Err("no mesh ConfigMap found".to_string()),
        None | Some(None) => None,
        Some(Some(m)) => Some(key(m, MESH_KEY, "mesh")?),
    };
    Ok(RawConfig {
        config,
        values,
        mesh,
    })
}

fn watch_one(
    client: &Client,
    r: &ConfigMapRef,
) -> impl Stream<Item = Result<Option<ConfigMap>, watcher::Error>> + Send {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &r.namespace);
    watch_object(api, &r.name).default_backoff()
}

/// A watch error that is part of normal operation: `410 Gone` (the resourceVersion expired),
/// after which the watcher lists again.
fn routine(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchError(s) if s.code == 410)
}

/// Watch the ConfigMaps; yield the raw configuration after every effective change (updates
/// whose resourceVersion did not change are ignored), or the reason it cannot be assembled or
/// read (watch errors other than [`routine`] ones, once a configuration was read). Nothing is
/// yielded until every watched ConfigMap has been read once. With `mesh_required`, an absent
/// mesh ConfigMap is reported (`no mesh ConfigMap found`) instead of meaning Istio's defaults.
pub(crate) fn watch_configmaps(
    client: Client,
    inject: ConfigMapRef,
    mesh: Option<ConfigMapRef>,
    mesh_required: bool,
) -> impl Stream<Item = Result<RawConfig, String>> + Send {
    let inject_updates = watch_one(&client, &inject).map(|r| r.map(Update::Inject));
    let mesh_updates = match &mesh {
        Some(m) => watch_one(&client, m).map(|r| r.map(Update::Mesh)).boxed(),
        None => stream::pending().boxed(),
    };
    let watching_mesh = mesh.is_some();
    // State: the last object of each ConfigMap (outer None until it has been read once).
    let state: (Option<Option<ConfigMap>>, Option<Option<ConfigMap>>) = (None, None);
    stream::select(inject_updates, mesh_updates)
        .scan(state, move |state, item| {
            let out = match item {
                Err(e) => {
                    tracing::warn!(error = %e, "ConfigMap watch failed");
                    // Once a configuration is in force, an unreadable ConfigMap is a failed
                    // reload (counted and logged; the watch retries with backoff). Before, the
                    // start-up wait reports it.
                    let ready = state.0.is_some() && (!watching_mesh || state.1.is_some());
                    if ready && !routine(&e) {
                        Some(Some(Err(format!("ConfigMap watch failed: {e}"))))
                    } else {
                        Some(None)
                    }
                }
                Ok(update) => {
                    let slot = match &update {
                        Update::Inject(_) => &mut state.0,
                        Update::Mesh(_) => &mut state.1,
                    };
                    let object = match update {
                        Update::Inject(o) | Update::Mesh(o) => o,
                    };
                    let unchanged = slot.as_ref().is_some_and(|prev| {
                        version(prev) == version(&object) && prev.is_some() == object.is_some()
                    });
                    *slot = Some(object);
                    let ready = state.0.is_some() && (!watching_mesh || state.1.is_some());
                    match (unchanged, ready, &state.0) {
                        (false, true, Some(inject)) => {
                            Some(Some(assemble(inject, state.1.as_ref(), mesh_required)))
                        }
                        _ => Some(None),
                    }
                }
            };
            futures::future::ready(out)
        })
        .filter_map(futures::future::ready)
}

/// Whether each document may change from the last good raw configuration to `new`
/// ([`guard::document_change`]): a mesh ConfigMap deleted after it was read, or a document
/// emptied, keeps the last good configuration instead of silently meaning "defaults".
fn documents_allowed(good: Option<&RawConfig>, new: &RawConfig) -> Result<(), String> {
    let Some(good) = good else { return Ok(()) };
    let pairs = [
        (
            "config",
            Some(good.config.as_str()),
            Some(new.config.as_str()),
        ),
        (
            "values",
            Some(good.values.as_str()),
            Some(new.values.as_str()),
        ),
        ("mesh", good.mesh.as_deref(), new.mesh.as_deref()),
    ];
    for (name, current, next) in pairs {
        guard::document_change(name, current, next).map_err(|refusal| match refusal {
            guard::Refusal::Disappeared("mesh") => "no mesh ConfigMap found".to_string(),
            other => other.to_string(),
        })?;
    }
    Ok(())
}

/// Parse every raw configuration with `parse`; a failure keeps the last good one and is
/// reported (and logged) with Istio's wording. A mesh ConfigMap that disappears, or a key that
/// becomes empty, after a good configuration was read is a failure too.
pub(crate) fn keep_last_good<T, S, F>(raw: S, parse: F) -> impl Stream<Item = ConfigEvent<T>> + Send
where
    T: Send + Sync + 'static,
    S: Stream<Item = Result<RawConfig, String>> + Send,
    F: Fn(&RawConfig) -> Result<T, String> + Send + 'static,
{
    raw.scan(None::<RawConfig>, move |good, item| {
        let parsed = item.and_then(|r| {
            documents_allowed(good.as_ref(), &r)?;
            parse(&r).map(|v| (r, v))
        });
        let event = match parsed {
            Ok((r, v)) => {
                *good = Some(r);
                ConfigEvent::Loaded(Arc::new(v))
            }
            Err(e) => {
                let error = format!("failed to read injection config from ConfigMap: {e}");
                tracing::warn!("{error}");
                ConfigEvent::Rejected {
                    error,
                    keeping_last_good: good.is_some(),
                }
            }
        };
        futures::future::ready(Some(event))
    })
}

/// Parse a raw configuration into a [`Snapshot`] (istiod's load errors, with the config text).
pub fn parse_snapshot(raw: &RawConfig) -> Result<Snapshot, String> {
    Snapshot::load(&raw.config, &raw.values, raw.mesh.as_deref())
        .map(|s| s.with_template_env(crate::template_env::current()))
        .map_err(|e| format!("failed reading config: {e}. YAML:\n{}", raw.config))
}

/// The configuration stream `serve --kube` consumes: snapshots to swap in atomically.
pub fn snapshots(
    client: Client,
    inject: ConfigMapRef,
    mesh: Option<ConfigMapRef>,
    mesh_required: bool,
) -> impl Stream<Item = ConfigEvent<Snapshot>> + Send {
    keep_last_good(
        watch_configmaps(client, inject, mesh, mesh_required),
        parse_snapshot,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;
    use serde_json::{json, Value};

    fn cm(name: &str, rv: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "istio-system", "resourceVersion": rv}, "data": data})
    }

    fn list(items: Vec<Value>, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": rv}, "items": items})
    }

    fn refs() -> (ConfigMapRef, ConfigMapRef) {
        (
            ConfigMapRef::parse("istio-system/istio-sidecar-injector").expect("valid"),
            ConfigMapRef::parse("istio-system/istio").expect("valid"),
        )
    }

    /// A stand-in parser (the real one needs the template engine): rejects configs saying "broken".
    fn stub_parse(raw: &RawConfig) -> Result<RawConfig, String> {
        if raw.config.contains("broken") {
            Err(format!(
                "failed reading config: bad template. YAML:\n{}",
                raw.config
            ))
        } else {
            Ok(raw.clone())
        }
    }

    async fn next_event<S: Stream<Item = ConfigEvent<RawConfig>> + Unpin>(
        s: &mut S,
    ) -> ConfigEvent<RawConfig> {
        tokio::time::timeout(std::time::Duration::from_secs(5), s.next())
            .await
            .expect("an event within 5 s")
            .expect("stream open")
    }

    fn loaded(e: ConfigEvent<RawConfig>) -> Arc<RawConfig> {
        match e {
            ConfigEvent::Loaded(v) => v,
            other => panic!("expected a loaded config, got {other:?}"),
        }
    }

    #[test]
    fn assemble_reports_istio_errors() {
        let cm =
            |data: Value| -> Option<ConfigMap> { serde_json::from_value(cm("x", "1", data)).ok() };
        assert_eq!(
            assemble(&None, None, false),
            Err("no ConfigMap found".into())
        );
        assert_eq!(
            assemble(&cm(json!({"values": "{}"})), None, false),
            Err("missing ConfigMap config key \"config\"".into())
        );
        assert_eq!(
            assemble(&cm(json!({"config": "policy: enabled"})), None, false),
            Err("missing ConfigMap values key \"values\"".into())
        );
        let raw = assemble(
            &cm(json!({"config": "c", "values": "v"})),
            Some(&cm(json!({"mesh": "m"}))),
            true,
        )
        .expect("complete");
        assert_eq!(
            raw,
            RawConfig {
                config: "c".into(),
                values: "v".into(),
                mesh: Some("m".into())
            }
        );
        assert_eq!(
            assemble(
                &cm(json!({"config": "c", "values": "v"})),
                Some(&None),
                false
            )
            .expect("ok")
            .mesh,
            None
        );
        // Told to read Istio's ConfigMaps, an absent mesh ConfigMap is not "Istio's defaults".
        assert_eq!(
            assemble(
                &cm(json!({"config": "c", "values": "v"})),
                Some(&None),
                true
            ),
            Err("no mesh ConfigMap found".into())
        );
    }

    #[tokio::test]
    async fn watch_driven_reload_keeps_last_good() {
        let (client, mut handle) = mock::client();
        let (inject, mesh) = refs();
        let mut events = Box::pin(keep_last_good(
            watch_configmaps(client, inject, Some(mesh), false),
            stub_parse,
        ));
        let driver = tokio::spawn(async move {
            let mut inject_watch = None;
            let mut mesh_watch = None;
            // Two lists (any order), then two watches.
            for _ in 0..4 {
                let r = mock::next(&mut handle).await;
                assert_eq!(r.method, Method::GET);
                assert!(
                    r.uri
                        .starts_with("/api/v1/namespaces/istio-system/configmaps?"),
                    "{}",
                    r.uri
                );
                let is_inject = r.uri.contains("metadata.name%3Distio-sidecar-injector");
                assert!(
                    is_inject
                        || r.uri.contains("metadata.name%3Distio&")
                        || r.uri.ends_with("metadata.name%3Distio"),
                    "{}",
                    r.uri
                );
                match (r.uri.contains("watch=true"), is_inject) {
                    (false, true) => r.respond(
                        200,
                        list(
                            vec![cm(
                                "istio-sidecar-injector",
                                "1",
                                json!({"config": "v1", "values": "{}"}),
                            )],
                            "1",
                        ),
                    ),
                    (false, false) => r.respond(
                        200,
                        list(vec![cm("istio", "2", json!({"mesh": "m1"}))], "2"),
                    ),
                    (true, true) => inject_watch = Some(r),
                    (true, false) => mesh_watch = Some(r), // the mesh watch stays silent
                }
            }
            let w = inject_watch.expect("the injector ConfigMap is watched");
            // A resync with the same resourceVersion, a broken change, then a good one, then one
            // without `config`.
            let body: Vec<u8> = [
                ("1", json!({"config": "v1", "values": "{}"})),
                ("3", json!({"config": "broken", "values": "{}"})),
                ("4", json!({"config": "v2", "values": "{}"})),
                ("5", json!({"values": "{}"})),
            ]
            .into_iter()
            .flat_map(|(version, data)| {
                mock::watch_line("MODIFIED", &cm("istio-sidecar-injector", version, data))
            })
            .collect();
            w.respond_raw(200, body);
            (handle, mesh_watch)
        });
        let first = loaded(next_event(&mut events).await);
        assert_eq!(
            *first,
            RawConfig {
                config: "v1".into(),
                values: "{}".into(),
                mesh: Some("m1".into())
            }
        );
        match next_event(&mut events).await {
            ConfigEvent::Rejected {
                error,
                keeping_last_good,
            } => {
                assert!(keeping_last_good);
                assert!(error.starts_with("failed to read injection config from ConfigMap: failed reading config: bad template"), "{error}");
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        assert_eq!(loaded(next_event(&mut events).await).config, "v2");
        match next_event(&mut events).await {
            ConfigEvent::Rejected { error, .. } => assert!(
                error.ends_with("missing ConfigMap config key \"config\""),
                "{error}"
            ),
            other => panic!("expected a rejection, got {other:?}"),
        }
        let _handle = driver.await.expect("driver");
    }

    #[tokio::test]
    async fn deleted_mesh_emptied_keys_and_unreadable_configmaps_keep_the_last_good() {
        let raw = |config: &str, values: &str, mesh: Option<&str>| RawConfig {
            config: config.into(),
            values: values.into(),
            mesh: mesh.map(str::to_string),
        };
        let good = raw("v1", "{\"global\": {}}", Some("m1"));
        let items: Vec<Result<RawConfig, String>> = vec![
            Ok(good.clone()),
            // The mesh ConfigMap was deleted: not "defaults".
            Ok(raw("v1", "{\"global\": {}}", None)),
            // Emptied keys (a truncated edit).
            Ok(raw("v1", "", Some("m1"))),
            Ok(raw("", "{\"global\": {}}", Some("m1"))),
            Ok(raw("v1", "{\"global\": {}}", Some(" "))),
            // The API server stopped answering (RBAC revoked, ...).
            Err("ConfigMap watch failed: forbidden".into()),
            // Recreated: taken.
            Ok(raw("v2", "{\"global\": {}}", Some("m2"))),
        ];
        let events: Vec<ConfigEvent<RawConfig>> =
            keep_last_good(futures::stream::iter(items), stub_parse)
                .collect()
                .await;
        assert_eq!(*loaded(events[0].clone()), good);
        let rejections: Vec<String> = events[1..6]
            .iter()
            .map(|e| match e {
                ConfigEvent::Rejected {
                    error,
                    keeping_last_good: true,
                } => error.clone(),
                other => panic!("expected a rejection keeping the last good, got {other:?}"),
            })
            .collect();
        let prefix = "failed to read injection config from ConfigMap: ";
        assert_eq!(
            rejections,
            [
                "no mesh ConfigMap found".to_string(),
                "the values document is empty (truncated?); the configuration in force had content"
                    .into(),
                "the config document is empty (truncated?); the configuration in force had content"
                    .into(),
                "the mesh document is empty (truncated?); the configuration in force had content"
                    .into(),
                "ConfigMap watch failed: forbidden".into(),
            ]
            .map(|e| format!("{prefix}{e}"))
        );
        assert_eq!(loaded(events[6].clone()).config, "v2");
        // Without a mesh ConfigMap from the start, defaults apply (as in istiod).
        let items = vec![Ok(raw("v1", "{}", None)), Ok(raw("v2", "{}", None))];
        let events: Vec<_> = keep_last_good(futures::stream::iter(items), stub_parse)
            .collect()
            .await;
        assert_eq!(loaded(events[1].clone()).config, "v2");
    }

    #[tokio::test]
    async fn absent_configmap_is_rejected_without_a_last_good() {
        let (client, mut handle) = mock::client();
        let (inject, _) = refs();
        let mut events = Box::pin(keep_last_good(
            watch_configmaps(client, inject, None, false),
            stub_parse,
        ));
        let driver = tokio::spawn(async move {
            let r = mock::next(&mut handle).await;
            r.assert(Method::GET, "/api/v1/namespaces/istio-system/configmaps");
            assert!(
                r.uri
                    .contains("fieldSelector=metadata.name%3Distio-sidecar-injector"),
                "{}",
                r.uri
            );
            r.respond(200, list(vec![], "9"));
            handle
        });
        match next_event(&mut events).await {
            ConfigEvent::Rejected {
                error,
                keeping_last_good,
            } => {
                assert!(!keeping_last_good);
                assert_eq!(
                    error,
                    "failed to read injection config from ConfigMap: no ConfigMap found"
                );
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        let _ = driver.await.expect("driver");
    }
}
