//! Kubernetes Events for injection outcomes (`--events`): one Event per injection, skip or
//! failure, on the pod's owner (the pod does not exist yet at admission time), carrying the
//! reason code, so `kubectl describe` on the workload answers "why was my pod not injected".

use ::kube::runtime::events::{Event, EventType, Recorder, Reporter};
use ::kube::Client;
use k8s_openapi::api::core::v1::ObjectReference;
use serde_json::Value;

/// Reporting controller name of outrigger's Events.
pub const CONTROLLER: &str = "outrigger";

/// What happened to the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A sidecar was injected.
    Injected,
    /// The injector decided not to inject.
    Skipped,
    /// Injection failed (the pod was admitted or rejected by the failure policy).
    Failed,
}

impl Outcome {
    /// Event `reason` (PascalCase, as `kubectl describe` shows it).
    pub fn reason(self) -> &'static str {
        match self {
            Outcome::Injected => "SidecarInjected",
            Outcome::Skipped => "SidecarInjectionSkipped",
            Outcome::Failed => "SidecarInjectionFailed",
        }
    }

    fn event_type(self) -> EventType {
        match self {
            Outcome::Failed => EventType::Warning,
            Outcome::Injected | Outcome::Skipped => EventType::Normal,
        }
    }
}

/// The object an Event about `pod` (in `namespace`) is recorded on: its controlling owner, else
/// its first owner, else the pod itself when it has a name; `None` when nothing is addressable.
pub fn event_target(pod: &Value, namespace: &str) -> Option<ObjectReference> {
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array);
    let owner = owners.and_then(|o| {
        o.iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            .or_else(|| o.first())
    });
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(o) = owner {
        return Some(ObjectReference {
            api_version: s(o, "apiVersion"),
            kind: s(o, "kind"),
            name: s(o, "name"),
            namespace: Some(namespace.to_string()),
            uid: s(o, "uid"),
            ..ObjectReference::default()
        });
    }
    let meta = pod.get("metadata")?;
    let name = s(meta, "name")?;
    Some(ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name),
        namespace: Some(namespace.to_string()),
        uid: s(meta, "uid"),
        ..ObjectReference::default()
    })
}

/// The human note of an Event: `<reason code>: <message>` (at most 1 kB, as the API requires).
pub fn note(code: &str, message: &str) -> String {
    let mut n = format!("{code}: {message}");
    if n.len() > 1024 {
        let mut cut = 1021;
        while !n.is_char_boundary(cut) {
            cut -= 1;
        }
        n.truncate(cut);
        n.push_str("...");
    }
    n
}

/// Records injection Events (deduplicated into series by kube-rs).
#[derive(Clone)]
pub struct EventRecorder {
    recorder: Recorder,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder").finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder reporting as `outrigger`, instance `instance` (the pod name).
    pub fn new(client: Client, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: CONTROLLER.into(),
            instance,
        };
        EventRecorder {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Record `outcome` for `pod` with its reason code; a pod without an addressable target is
    /// ignored (returns `Ok(false)`).
    pub async fn record(
        &self,
        pod: &Value,
        namespace: &str,
        outcome: Outcome,
        code: &str,
        message: &str,
    ) -> Result<bool, ::kube::Error> {
        let Some(target) = event_target(pod, namespace) else {
            return Ok(false);
        };
        let event = Event {
            type_: outcome.event_type(),
            reason: outcome.reason().into(),
            note: Some(note(code, message)),
            action: "Inject".into(),
            secondary: None,
        };
        self.recorder.publish(&event, &target).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::mock;
    use http::Method;
    use serde_json::json;

    fn pod() -> Value {
        json!({"metadata": {"generateName": "web-7d9f-", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f", "uid": "u-1", "controller": true}]}})
    }

    #[test]
    fn targets() {
        let t = event_target(&pod(), "apps").expect("owner");
        assert_eq!(t.kind.as_deref(), Some("ReplicaSet"));
        assert_eq!(t.name.as_deref(), Some("web-7d9f"));
        assert_eq!(t.namespace.as_deref(), Some("apps"));
        let bare = json!({"metadata": {"name": "solo"}});
        assert_eq!(
            event_target(&bare, "apps").and_then(|t| t.kind),
            Some("Pod".into())
        );
        assert!(event_target(&json!({"metadata": {"generateName": "x-"}}), "apps").is_none());
    }

    #[test]
    fn notes_are_bounded() {
        assert_eq!(note("policy_enabled", "ok"), "policy_enabled: ok");
        let long = note("x", &"é".repeat(2000));
        assert!(long.len() <= 1024 && long.ends_with("..."));
    }

    #[tokio::test]
    async fn skip_event_on_the_owner_with_reason_code() {
        let (client, mut handle) = mock::client();
        let rec = EventRecorder::new(client, Some("outrigger-abc".into()));
        let task = tokio::spawn(async move {
            rec.record(
                &pod(),
                "apps",
                Outcome::Skipped,
                "annotation_disabled",
                "injection explicitly disabled",
            )
            .await
        });
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/apps/events",
        );
        assert_eq!(r.body["reason"], "SidecarInjectionSkipped");
        assert_eq!(r.body["type"], "Normal");
        assert_eq!(
            r.body["note"],
            "annotation_disabled: injection explicitly disabled"
        );
        assert_eq!(r.body["regarding"]["kind"], "ReplicaSet");
        assert_eq!(r.body["regarding"]["uid"], "u-1");
        assert_eq!(r.body["reportingController"], "outrigger");
        assert_eq!(r.body["reportingInstance"], "outrigger-abc");
        let echo = r.body.clone();
        r.respond(201, echo);
        assert!(task.await.expect("task").expect("recorded"));
    }

    #[tokio::test]
    async fn failures_are_warnings() {
        let (client, mut handle) = mock::client();
        let rec = EventRecorder::new(client, None);
        let task = tokio::spawn(async move {
            rec.record(
                &json!({"metadata": {"name": "p"}}),
                "apps",
                Outcome::Failed,
                "template_error",
                "boom",
            )
            .await
        });
        let r = mock::next(&mut handle).await;
        assert_eq!(r.body["type"], "Warning");
        assert_eq!(r.body["reason"], "SidecarInjectionFailed");
        assert_eq!(r.body["regarding"]["kind"], "Pod");
        let echo = r.body.clone();
        r.respond(201, echo);
        assert!(task.await.expect("task").expect("recorded"));
    }
}
