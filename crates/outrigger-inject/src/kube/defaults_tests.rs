//! Each rule of [`super`] against a fixture written from the Go function it follows
//! (`pkg/apis/core/v1/defaults.go`, `zz_generated.defaults.go`).

use serde_json::{json, Value};

use super::*;

fn defaulted(pod: Value) -> Value {
    let mut pod = pod;
    default_pod(&mut pod, Gates::for_minor(NEWEST_MINOR));
    let once = pod.clone();
    default_pod(&mut pod, Gates::for_minor(NEWEST_MINOR));
    assert_eq!(pod, once, "defaulting is idempotent");
    pod
}

fn spec_of(spec: Value) -> Value {
    defaulted(json!({"metadata": {}, "spec": spec}))["spec"].clone()
}

/// `SetDefaults_Volume`: a volume with no source is an empty dir (Istio's `workload-socket`,
/// `credential-socket`, `workload-certs`); one with a source keeps it.
#[test]
fn set_defaults_volume_gives_a_sourceless_volume_an_empty_dir() {
    let spec = spec_of(json!({"volumes": [
        {"name": "workload-socket"},
        {"name": "nulls", "secret": null},
        {"name": "data", "emptyDir": {"medium": "Memory"}},
        {"name": "cfg", "configMap": {"name": "c"}}]}));
    assert_eq!(
        spec["volumes"][0],
        json!({"name": "workload-socket", "emptyDir": {}})
    );
    assert_eq!(spec["volumes"][1]["emptyDir"], json!({}));
    assert_eq!(
        spec["volumes"][2],
        json!({"name": "data", "emptyDir": {"medium": "Memory"}})
    );
    assert!(spec["volumes"][3].get("emptyDir").is_none());
}

/// `SetDefaults_Volume` with `ImageVolume` (off through 1.34): the pull policy by the tag.
#[test]
fn image_volumes_pull_policy_only_with_the_gate() {
    let pod = || {
        json!({"spec": {"volumes": [{"name": "m", "image": {"reference": "models:latest"}},
        {"name": "n", "image": {"reference": "models:v1"}}]}})
    };
    let mut off = pod();
    default_pod(&mut off, Gates::for_minor(34));
    assert!(off["spec"]["volumes"][0]["image"]
        .get("pullPolicy")
        .is_none());
    let mut on = pod();
    default_pod(
        &mut on,
        Gates {
            image_volume: true,
            ..Gates::default()
        },
    );
    assert_eq!(on["spec"]["volumes"][0]["image"]["pullPolicy"], "Always");
    assert_eq!(
        on["spec"]["volumes"][1]["image"]["pullPolicy"],
        "IfNotPresent"
    );
}

/// The volume sources' defaults: `SetDefaults_HostPathVolumeSource`, `_SecretVolumeSource`,
/// `_ConfigMapVolumeSource`, `_DownwardAPIVolumeSource`, `_ProjectedVolumeSource`,
/// `_ServiceAccountTokenProjection`, `_ObjectFieldSelector`, the ISCSI, RBD, AzureDisk and
/// ScaleIO defaults, `SetDefaults_PersistentVolumeClaimSpec` of an ephemeral volume.
#[test]
fn volume_source_defaults() {
    let spec = spec_of(json!({"volumes": [
        {"name": "h", "hostPath": {"path": "/x"}},
        {"name": "s", "secret": {"secretName": "s"}},
        {"name": "c", "configMap": {"name": "c", "defaultMode": 256}},
        {"name": "d", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "p", "projected": {"sources": [
            {"serviceAccountToken": {"path": "t", "audience": "istio-ca"}},
            {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
        {"name": "i", "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0}},
        {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
        {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u"}},
        {"name": "o", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0.0005"}}}}}}]}));
    let v = &spec["volumes"];
    assert_eq!(v[0]["hostPath"], json!({"path": "/x", "type": ""}));
    assert_eq!(v[1]["secret"]["defaultMode"], 420);
    assert_eq!(v[2]["configMap"]["defaultMode"], 256);
    assert_eq!(v[3]["downwardAPI"]["defaultMode"], 420);
    assert_eq!(
        v[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(v[4]["projected"]["defaultMode"], 420);
    assert_eq!(
        v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    assert_eq!(
        v[4]["projected"]["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert!(v[4]["projected"]["sources"][1]["downwardAPI"]
        .get("defaultMode")
        .is_none());
    assert_eq!(v[5]["iscsi"]["iscsiInterface"], "default");
    assert_eq!(
        (
            &v[6]["rbd"]["pool"],
            &v[6]["rbd"]["user"],
            &v[6]["rbd"]["keyring"]
        ),
        (&json!("rbd"), &json!("admin"), &json!("/etc/ceph/keyring"))
    );
    assert_eq!(
        v[7]["azureDisk"],
        json!({"diskName": "d", "diskURI": "u", "cachingMode": "ReadWrite",
        "kind": "Shared", "fsType": "ext4", "readOnly": false})
    );
    assert_eq!(
        (&v[8]["scaleIO"]["storageMode"], &v[8]["scaleIO"]["fsType"]),
        (&json!("ThinProvisioned"), &json!("xfs"))
    );
    let claim = &v[9]["ephemeral"]["volumeClaimTemplate"]["spec"];
    assert_eq!(claim["volumeMode"], "Filesystem");
    assert_eq!(claim["resources"]["requests"]["storage"], "1m");
}

/// `SetDefaults_PodSpec` and `SetDefaults_Pod`'s pod fields.
#[test]
fn pod_spec_defaults() {
    let spec = spec_of(json!({"containers": [{"name": "a", "image": "a:1"}]}));
    for (k, v) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("securityContext", json!({})),
        ("terminationGracePeriodSeconds", json!(30)),
        ("schedulerName", json!("default-scheduler")),
        ("enableServiceLinks", json!(true)),
    ] {
        assert_eq!(spec[k], v, "{k}");
    }
    let own = spec_of(json!({"dnsPolicy": "None", "enableServiceLinks": false,
        "terminationGracePeriodSeconds": 0, "containers": []}));
    assert_eq!(own["dnsPolicy"], "None");
    assert_eq!(own["enableServiceLinks"], false);
    assert_eq!(
        own["terminationGracePeriodSeconds"], 0,
        "a pointer: 0 is set"
    );
}

/// `SetDefaults_Pod`: requests from limits for containers and init containers (not
/// ephemeral ones); host ports from container ports with `hostNetwork`.
#[test]
fn requests_from_limits_and_host_network_ports() {
    let spec = spec_of(json!({"hostNetwork": true,
        "initContainers": [{"name": "i", "image": "i:1", "resources": {"limits": {"cpu": "1"}},
                            "ports": [{"containerPort": 9}]}],
        "containers": [{"name": "a", "image": "a:1",
            "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "100m"}},
            "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 8081}]}],
        "ephemeralContainers": [{"name": "e", "image": "e:1", "resources": {"limits": {"cpu": "1"}}}]}));
    assert_eq!(
        spec["initContainers"][0]["resources"]["requests"],
        json!({"cpu": "1"})
    );
    assert_eq!(spec["initContainers"][0]["ports"][0]["hostPort"], 9);
    assert_eq!(
        spec["containers"][0]["resources"]["requests"],
        json!({"cpu": "100m", "memory": "1Gi"})
    );
    assert_eq!(spec["containers"][0]["ports"][0]["hostPort"], 80);
    assert_eq!(spec["containers"][0]["ports"][1]["hostPort"], 8081);
    assert!(spec["ephemeralContainers"][0]["resources"]
        .get("requests")
        .is_none());
    let no_host = spec_of(json!({"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}));
    assert!(no_host["containers"][0]["ports"][0]
        .get("hostPort")
        .is_none());
}

/// `SetDefaults_Container` (also of ephemeral containers), the ports' `protocol`, env field
/// references, `SetDefaults_Probe`, `SetDefaults_HTTPGetAction`, the gRPC probe's service and
/// the lifecycle hooks.
#[test]
fn container_defaults() {
    let spec = spec_of(json!({"containers": [{"name": "a", "image": "a",
        "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
        "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "V", "value": "x"}],
        "livenessProbe": {"grpc": {"port": 9}, "timeoutSeconds": 0},
        "readinessProbe": {"httpGet": {"port": 8080}, "periodSeconds": 5},
        "startupProbe": {"tcpSocket": {"port": 1}},
        "lifecycle": {"preStop": {"httpGet": {"port": 1, "path": "/q"}},
                      "postStart": {"exec": {"command": ["x"]}}}}],
        "ephemeralContainers": [{"name": "dbg", "image": "busybox:1"}]}));
    let c = &spec["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(c["ports"][1]["protocol"], "UDP");
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(c["env"][1], json!({"name": "V", "value": "x"}));
    let probe = |p: &str| {
        (
            c[p]["timeoutSeconds"].clone(),
            c[p]["periodSeconds"].clone(),
            c[p]["successThreshold"].clone(),
            c[p]["failureThreshold"].clone(),
        )
    };
    assert_eq!(
        probe("livenessProbe"),
        (json!(1), json!(10), json!(1), json!(3))
    );
    assert_eq!(
        probe("readinessProbe"),
        (json!(1), json!(5), json!(1), json!(3))
    );
    assert_eq!(
        probe("startupProbe"),
        (json!(1), json!(10), json!(1), json!(3))
    );
    assert_eq!(
        c["livenessProbe"]["grpc"],
        json!({"port": 9, "service": ""})
    );
    assert_eq!(
        c["readinessProbe"]["httpGet"],
        json!({"port": 8080, "path": "/", "scheme": "HTTP"})
    );
    assert_eq!(
        c["lifecycle"]["preStop"]["httpGet"],
        json!({"port": 1, "path": "/q", "scheme": "HTTP"})
    );
    assert_eq!(
        c["lifecycle"]["postStart"],
        json!({"exec": {"command": ["x"]}})
    );
    assert_eq!(
        spec["ephemeralContainers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    assert_eq!(
        spec["ephemeralContainers"][0]["terminationMessagePolicy"],
        "File"
    );
}

/// `SetDefaults_Container`'s pull policy through `ParseImageName`: `latest` (named or implied)
/// is `Always`; another tag, a digest without a tag, or a reference that does not parse is
/// `IfNotPresent`.
#[test]
fn pull_policy_follows_the_parsed_tag() {
    let digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    for (image, want) in [
        ("nginx".to_string(), "Always"),
        ("nginx:latest".into(), "Always"),
        ("nginx:1.27".into(), "IfNotPresent"),
        ("registry:5000/nginx".into(), "Always"),
        ("registry:5000/nginx:1".into(), "IfNotPresent"),
        (format!("nginx@{digest}"), "IfNotPresent"),
        (format!("nginx:latest@{digest}"), "Always"),
        ("docker.io/istio/proxyv2:1.24.6".into(), "IfNotPresent"),
        ("Nginx".into(), "IfNotPresent"),
        ("".into(), "IfNotPresent"),
        ("auto".into(), "Always"),
    ] {
        assert_eq!(pull_policy(&image), want, "{image}");
    }
}

/// `SetDefaults_ResourceList`: quantities rounded up to thousandths, the text otherwise kept.
#[test]
fn resource_lists_round_up_to_milli() {
    let spec = spec_of(json!({"containers": [{"name": "a", "image": "a:1",
        "resources": {"limits": {"cpu": "0.0001", "memory": "1Gi"},
                      "requests": {"cpu": "100.5m", "memory": "1000Mi"}}}],
        "overhead": {"cpu": "1.00001"}}));
    let r = &spec["containers"][0]["resources"];
    assert_eq!(r["limits"], json!({"cpu": "1m", "memory": "1Gi"}));
    assert_eq!(r["requests"], json!({"cpu": "101m", "memory": "1000Mi"}));
    assert_eq!(spec["overhead"]["cpu"], "1001m");
}

/// `PodLevelResources` (on from 1.34): pod-level requests from the containers' requests or
/// from the pod's limits; nothing without pod-level resources or the gate.
#[test]
fn pod_level_resources_with_the_gate() {
    let pod = || {
        json!({"spec": {"resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "250m"}}}]}})
    };
    let mut on = pod();
    default_pod(&mut on, Gates::for_minor(34));
    assert_eq!(
        on["spec"]["resources"]["requests"],
        json!({"cpu": "750m", "memory": "1Gi"})
    );
    let mut off = pod();
    default_pod(&mut off, Gates::for_minor(33));
    assert!(off["spec"]["resources"].get("requests").is_none());
    let mut none = json!({"spec": {"containers": [{"name": "a"}]}});
    default_pod(&mut none, Gates::for_minor(34));
    assert!(none["spec"].get("resources").is_none());
}
