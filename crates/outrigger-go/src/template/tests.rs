//! Tests of the template engine: worked examples, Istio functions, printing, truthiness,
//! scoping, errors and the Istio corpus.

use serde_json::{json, Value};

use super::*;

/// Owned inputs of a [`TemplateData`].
pub(super) struct Fx {
    pub(super) meta: Value,
    pub(super) spec: Value,
    pub(super) pc: Value,
    pub(super) mesh: Value,
    pub(super) values: Value,
    pub(super) native: bool,
    pub(super) uid: i64,
    pub(super) env: BTreeMap<String, String>,
}

impl Fx {
    pub(super) fn new(values: Value) -> Fx {
        Fx {
            meta: json!({"name": "hello", "namespace": "default"}),
            spec: json!({"containers": [{"name": "hello", "image": "fake.docker.io/google-samples/hello-go-gke:1.0",
                "ports": [{"name": "http", "containerPort": 80}]}]}),
            pc: json!({}),
            mesh: json!({}),
            values,
            native: false,
            uid: 1337,
            env: BTreeMap::new(),
        }
    }

    pub(super) fn data(&self) -> TemplateData<'_> {
        TemplateData {
            kind: "Deployment",
            api_version: "apps/v1",
            deployment_name: "hello",
            deployment_namespace: "default",
            object_meta: &self.meta,
            spec: &self.spec,
            proxy_config: &self.pc,
            mesh_config: &self.mesh,
            values: &self.values,
            revision: "default",
            native_sidecars: self.native,
            proxy_image: "docker.io/istio/proxyv2:latest",
            proxy_init_image: "docker.io/istio/proxyv2:latest",
            proxy_uid: self.uid,
            proxy_gid: self.uid,
            inbound_traffic_policy_mode: "passthrough",
            compliance_policy: "",
            env: &self.env,
            proto_json: proto_json_fixture,
        }
    }

    fn render(&self, src: &str) -> Result<String, TemplateError> {
        Template::parse("inject", src)?.render(&self.data())
    }

    fn ok(&self, src: &str) -> String {
        match self.render(src) {
            Ok(s) => s,
            Err(e) => panic!("render of {src:?} failed: {e}"),
        }
    }

    fn err(&self, src: &str) -> String {
        match self.render(src) {
            Ok(s) => panic!("render of {src:?} unexpectedly succeeded: {s:?}"),
            Err(e) => e.to_string(),
        }
    }
}

/// The tests' `protoToJSON` encoder: the message's name and its tree, to see what the engine
/// hands over (the injector's encoder follows Istio's rules).
pub(super) fn proto_json_fixture(name: &str, v: &Value) -> String {
    format!("{name}={v}")
}

pub(super) fn values() -> Value {
    json!({
        "revision": null,
        "global": {
            "proxy": {"excludeInboundPorts": "", "statusPort": 15020, "startupProbe": {"enabled": true, "failureThreshold": 600}},
            "caName": "",
            "big": 2000000,
        },
        "pilot": {"env": {"ENABLE_CLUSTER_TRUST_BUNDLE_API": "true"}, "cni": {"enabled": false}},
        "list": ["b", "a", "c"],
        "nullProbe": {"startupProbe": null},
        "x": 2000000,
    })
}

// ------------------------------------------------------------ worked examples

#[test]
fn missing_values_print_no_value_and_quote_to_empty() {
    let fx = Fx::new(values());
    assert_eq!(fx.ok("{{ .Values.global.sds.token.aud }}"), "<no value>");
    assert_eq!(fx.ok("{{ .Values.global.sds.token.aud | quote }}"), "");
}

#[test]
fn annotation_with_missing_default_is_nil_text() {
    let fx = Fx::new(values());
    let src = "{{ annotation .ObjectMeta `sidecar.istio.io/capNetBindService` .Values.global.proxy.capNetBindService }}";
    assert_eq!(fx.ok(src), "<nil>");
    let src2 =
        "{{ eq (annotation .ObjectMeta `x` .Values.global.proxy.capNetBindService) \"true\" }}";
    assert_eq!(fx.ok(src2), "false");
}

#[test]
fn ne_missing_empty_is_true() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ ne .Values.global.proxy.excludeOutboundPorts \"\" }}"),
        "true"
    );
    assert_eq!(
        fx.ok("{{ if ne .Values.global.proxy.excludeOutboundPorts \"\" }}x: \"{{ annotation .ObjectMeta `x` .Values.global.proxy.excludeOutboundPorts }}\"{{end}}"),
        "x: \"<nil>\""
    );
}

#[test]
fn revision_absent_prints_no_value() {
    let mut fx = Fx::new(values());
    fx.values = json!({});
    let src = "istiod{{ if not (eq .Values.revision \"\") }}-{{ .Values.revision }}{{ end }}";
    assert_eq!(fx.ok(src), "istiod-<no value>");
}

#[test]
fn index_on_nil_annotations_defaults() {
    let mut fx = Fx::new(values());
    fx.meta = json!({"name": "x"});
    assert_eq!(
        fx.ok("{{ index .ObjectMeta.Annotations \"x\" | default \"istio\" }}"),
        "istio"
    );
    assert_eq!(fx.ok("{{ .ObjectMeta.Annotations }}"), "map[]");
    assert_eq!(fx.ok("{{ isset .ObjectMeta.Annotations \"x\" }}"), "false");
    assert_eq!(
        fx.ok("{{ range .ObjectMeta.Annotations }}x{{else}}none{{end}}"),
        "none"
    );
}

#[test]
fn int64_default_quote() {
    let mut fx = Fx::new(values());
    fx.uid = 1000689999;
    assert_eq!(
        fx.ok("{{ .ProxyUID | default \"1337\" | quote }}"),
        "\"1000689999\""
    );
    assert_eq!(
        fx.ok("{{ .MeshConfig.ProxyListenPort | default \"15001\" | quote }}"),
        "\"15001\""
    );
}

#[test]
fn printf_bool() {
    let mut fx = Fx::new(values());
    assert_eq!(fx.ok("{{ printf \"%t\" .NativeSidecars }}"), "false");
    fx.native = true;
    assert_eq!(fx.ok("{{ printf \"%t\" .NativeSidecars }}"), "true");
}

#[test]
fn floats_print_go_style() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ .Values.global.proxy.startupProbe.failureThreshold }}"),
        "600"
    );
    assert_eq!(fx.ok("{{ .Values.x }}"), "2e+06");
    assert_eq!(fx.ok("{{ .Values.global.proxy.statusPort }}"), "15020");
}

#[test]
fn eq_string_vs_bool_is_error() {
    let fx = Fx::new(values());
    let e = fx.err("{{ eq (.Values.pilot.env).ENABLE_CLUSTER_TRUST_BUNDLE_API true }}");
    assert!(
        e.contains("error calling eq: incompatible types for comparison"),
        "{e}"
    );
    assert!(e.starts_with("template: inject:1:"), "{e}");
    // Missing key: false, no error.
    assert_eq!(fx.ok("{{ eq (.Values.pilot.env).MISSING true }}"), "false");
}

#[test]
fn null_then_field_is_nil_pointer_error() {
    let fx = Fx::new(values());
    let e = fx.err("{{ .Values.nullProbe.startupProbe.enabled }}");
    assert!(
        e.contains("nil pointer evaluating interface {}.enabled"),
        "{e}"
    );
    assert!(
        e.contains("executing \"inject\" at <.Values.nullProbe.startupProbe.enabled>"),
        "{e}"
    );
    // Printing the null itself gives <no value>.
    assert_eq!(fx.ok("{{ .Values.nullProbe.startupProbe }}"), "<no value>");
}

#[test]
fn range_over_fromjson_error() {
    let fx = Fx::new(values());
    let e = fx.err("{{ range $k, $v := fromJSON \"not json\" }}{{ $k }}{{ end }}");
    assert!(e.contains("range can't iterate over {}"), "{e}");
}

// ------------------------------------------------------------ printing / truthiness

#[test]
fn printing_rules() {
    let fx = Fx::new(values());
    assert_eq!(fx.ok("{{ .Values.list }}"), "[b a c]");
    assert_eq!(
        fx.ok("{{ .Values.pilot.env }}"),
        "map[ENABLE_CLUSTER_TRUST_BUNDLE_API:true]"
    );
    assert_eq!(
        fx.ok("{{ .Values.pilot }}"),
        "map[cni:map[enabled:false] env:map[ENABLE_CLUSTER_TRUST_BUNDLE_API:true]]"
    );
    assert_eq!(fx.ok("{{ .ProxyConfig.InterceptionMode }}"), "REDIRECT");
    assert_eq!(
        fx.ok("{{ .ProxyConfig.InterceptionMode.String }}"),
        "REDIRECT"
    );
    assert_eq!(
        fx.ok(
            "{{ .Spec.ServiceAccountName }}|{{ .TypeMeta.APIVersion }}|{{ .DeploymentMeta.Name }}"
        ),
        "|apps/v1|hello"
    );
    assert_eq!(fx.ok("{{ .Spec.SecurityContext }}"), "<nil>");
    assert_eq!(fx.ok("{{ (index .Spec.Containers 0).Name }}"), "hello");
    assert_eq!(fx.ok("{{ .ProxyConfig.ProxyMetadata }}"), "map[]");
    assert_eq!(fx.ok("{{ list 1 \"a\" true nil }}"), "[1 a true <nil>]");
}

#[test]
fn enum_compares_as_integer() {
    let mut fx = Fx::new(values());
    fx.pc = json!({"interceptionMode": "TPROXY"});
    assert_eq!(fx.ok("{{ .ProxyConfig.InterceptionMode }}"), "TPROXY");
    assert!(fx
        .err("{{ eq .ProxyConfig.InterceptionMode \"TPROXY\" }}")
        .contains("incompatible types"));
    assert_eq!(fx.ok("{{ eq .ProxyConfig.InterceptionMode 1 }}"), "true");
    assert_eq!(
        fx.ok("{{ eq (annotation .ObjectMeta `x` .ProxyConfig.InterceptionMode) \"TPROXY\" }}"),
        "true"
    );
}

#[test]
fn truthiness() {
    let mut fx = Fx::new(values());
    let t = |fx: &Fx, e: &str| fx.ok(&format!("{{{{ if {e} }}}}T{{{{ else }}}}F{{{{ end }}}}"));
    assert_eq!(t(&fx, ".Values.missing"), "F");
    assert_eq!(t(&fx, ".Values.revision"), "F");
    assert_eq!(t(&fx, ".Values.global.caName"), "F");
    assert_eq!(t(&fx, ".Values.list"), "T");
    assert_eq!(t(&fx, ".Values.global.proxy.statusPort"), "T");
    assert_eq!(
        t(&fx, ".Spec.Resources"),
        "F".replace('F', &t(&fx, ".Spec.DNSConfig"))
    );
    assert_eq!(t(&fx, ".ObjectMeta"), "T");
    assert_eq!(t(&fx, ".ProxyConfig.HoldApplicationUntilProxyStarts"), "F");
    assert_eq!(
        t(&fx, ".ProxyConfig.HoldApplicationUntilProxyStarts.GetValue"),
        "F"
    );
    fx.pc = json!({"holdApplicationUntilProxyStarts": false});
    // A non-nil wrapper pointer is true even when it holds false.
    assert_eq!(t(&fx, ".ProxyConfig.HoldApplicationUntilProxyStarts"), "T");
    assert_eq!(
        t(&fx, ".ProxyConfig.HoldApplicationUntilProxyStarts.GetValue"),
        "F"
    );
    fx.pc = json!({"holdApplicationUntilProxyStarts": true});
    assert_eq!(
        t(&fx, ".ProxyConfig.HoldApplicationUntilProxyStarts.GetValue"),
        "T"
    );
}

#[test]
fn resource_guards() {
    let fx = Fx::new(values());
    assert!(fx
        .err("{{ repeat 100000000 \"abcdefgh\" }}")
        .contains("error calling repeat: result exceeds"));
    assert!(fx
        .err("{{ nindent 100000000 \"a\\nb\" }}")
        .contains("error calling nindent: result exceeds"));
    // Go: `%!(NOVERB)%!(EXTRA int=1)` (checked with Go's fmt).
    assert_eq!(
        fx.ok("{{ printf \"%99999999d\" 1 }}"),
        "%!(NOVERB)%!(EXTRA int=1)"
    );
    assert_eq!(
        fx.ok("{{ printf \"%.99999999f\" 1.5 }}"),
        "%!(NOVERB)%!(EXTRA float64=1.5)"
    );
    assert_eq!(
        fx.ok("{{ range 100000000000 }}{{ if eq . 2 }}{{ break }}{{ end }}{{ . }}{{ end }}"),
        "01"
    );
    let e = fx.err("{{ define \"r\" }}{{ template \"r\" . }}{{ end }}{{ template \"r\" . }}");
    assert!(e.contains("exceeded maximum template depth"), "{e}");
}

#[test]
fn template_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Template>();
}

#[test]
fn object_meta_accessors() {
    let mut fx = Fx::new(values());
    fx.meta = json!({"name": "p", "annotations": {"a": "b"}});
    assert_eq!(fx.ok("{{ .ObjectMeta.GetName }}|{{ .ObjectMeta.GetAnnotations }}|{{ .ObjectMeta.GetLabels }}"), "p|map[a:b]|map[]");
    assert_eq!(fx.ok("{{ .DeploymentMeta.String }}"), "default/hello");
}

#[test]
fn scalar_pointers() {
    let mut fx = Fx::new(values());
    fx.spec = json!({"automountServiceAccountToken": false, "terminationGracePeriodSeconds": 30});
    assert_eq!(
        fx.ok("{{ if .Spec.AutomountServiceAccountToken }}T{{ else }}F{{ end }}"),
        "T"
    );
    assert_eq!(fx.ok("{{ .Spec.AutomountServiceAccountToken }}"), "false");
    assert_eq!(fx.ok("{{ .Spec.TerminationGracePeriodSeconds }}"), "30");
    assert_eq!(fx.ok("{{ .Spec.ActiveDeadlineSeconds }}"), "<nil>");
    assert_eq!(
        fx.ok("{{ if .Spec.ActiveDeadlineSeconds }}T{{ else }}F{{ end }}"),
        "F"
    );
}

#[test]
fn method_calls_on_nil_messages() {
    let mut fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ if .ProxyConfig.GetTracing.GetTlsSettings }}T{{ else }}F{{ end }}"),
        "F"
    );
    assert_eq!(
        fx.ok("[{{ .ProxyConfig.GetTracing.GetTlsSettings.GetCaCertificates }}]"),
        "[]"
    );
    fx.pc = json!({"tracing": {"tlsSettings": {"caCertificates": "/etc/certs/root.pem"}}});
    assert_eq!(
        fx.ok("{{ directory .ProxyConfig.GetTracing.GetTlsSettings.GetCaCertificates }}"),
        "/etc/certs/"
    );
    let e = fx.err("{{ .MeshConfig.DefaultConfig.Tracing.Zipkin }}");
    assert!(e.contains("nil pointer evaluating"), "{e}");
    let e = fx.err("{{ .ObjectMeta.NoSuchField }}");
    assert!(
        e.contains("can't evaluate field NoSuchField in type v1.ObjectMeta"),
        "{e}"
    );
}

#[test]
fn struct_zero_values() {
    let mut fx = Fx::new(values());
    fx.meta = Value::Null;
    assert_eq!(
        fx.ok("[{{ .ObjectMeta.Name }}]{{ .ObjectMeta.Generation }}{{ .ObjectMeta.Labels }}"),
        "[]0map[]"
    );
    assert_eq!(
        fx.ok("{{ (index .Spec.Containers 0).Ports }}"),
        "[{http 0 80  }]".replace(
            "{http 0 80  }",
            &fx.ok("{{ index (index .Spec.Containers 0).Ports 0 }}")
        )
    );
    assert_eq!(
        fx.ok("{{ (index (index .Spec.Containers 0).Ports 0).ContainerPort }}"),
        "80"
    );
    assert_eq!(
        fx.ok("{{ .MeshConfig.TrustDomain }}|{{ .MeshConfig.ProxyListenPort }}"),
        "|0"
    );
}

// ------------------------------------------------------------ variables / control flow

#[test]
fn variables_and_scoping() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}"),
        "21"
    );
    assert_eq!(
        fx.ok("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}"),
        "2"
    );
    assert_eq!(
        fx.ok("{{ $c := list }}{{ range .Values.list }}{{ $c = append $c . }}{{ end }}{{ $c }}"),
        "[b a c]"
    );
    assert_eq!(
        fx.ok("{{ range $i, $v := .Values.list }}{{ $i }}={{ $v }};{{ end }}"),
        "0=b;1=a;2=c;"
    );
    assert_eq!(
        fx.ok("{{ with .Values.global.caName }}x{{ else }}empty{{ end }}"),
        "empty"
    );
    assert_eq!(
        fx.ok("{{ with .Values.pilot }}{{ .cni.enabled }}{{ end }}"),
        "false"
    );
    assert_eq!(
        fx.ok("{{ range $.Values.list }}{{ $.Revision }}{{ end }}"),
        "defaultdefaultdefault"
    );
    assert!(fx
        .err("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}")
        .contains("undefined variable"));
}

#[test]
fn range_order_and_control() {
    let fx = Fx::new(json!({"m": {"b": 2, "a": 1, "c": 3}, "l": [1, 2, 3, 4]}));
    assert_eq!(
        fx.ok("{{ range $k, $v := .Values.m }}{{ $k }}{{ $v }}{{ end }}"),
        "a1b2c3"
    );
    assert_eq!(
        fx.ok("{{ range .Values.l }}{{ if eq . 3.0 }}{{ break }}{{ end }}{{ . }}{{ end }}"),
        "12"
    );
    assert_eq!(
        fx.ok("{{ range .Values.l }}{{ if eq . 2.0 }}{{ continue }}{{ end }}{{ . }}{{ end }}"),
        "134"
    );
    assert_eq!(fx.ok("{{ range 3 }}{{ . }}{{ end }}"), "012");
    assert_eq!(
        fx.ok("{{ range .Values.none }}x{{ else }}empty{{ end }}"),
        "empty"
    );
    assert!(fx
        .err("{{ range \"abc\" }}{{ end }}")
        .contains("range can't iterate over abc"));
}

#[test]
fn define_and_template() {
    let fx = Fx::new(values());
    let src =
        "{{- define \"r\" }}[{{ . }}]{{ end }}a{{ template \"r\" .Revision }}b{{ template \"r\" }}";
    assert_eq!(fx.ok(src), "a[default]b[<no value>]");
    assert!(fx
        .err("{{ template \"nope\" }}")
        .contains("template \"nope\" not defined"));
    let src = "{{ define \"v\" }}{{ $.Revision }}{{ end }}{{ template \"v\" . }}";
    assert_eq!(fx.ok(src), "default");
}

#[test]
fn pipelines_and_chains() {
    let fx = Fx::new(values());
    assert_eq!(fx.ok("{{ \"a\" | printf \"%s-%s\" \"b\" }}"), "b-a");
    assert_eq!(
        fx.ok("{{ (.Values.pilot.env).ENABLE_CLUSTER_TRUST_BUNDLE_API }}"),
        "true"
    );
    assert_eq!(fx.ok("{{ (fromJSON `{\"a\":{\"b\":5}}`).a.b }}"), "5");
    assert_eq!(
        fx.ok("{{ or \"\" \"x\" }}|{{ and 1 0 }}|{{ or false .Values.missing }}"),
        "x|0|<no value>"
    );
    assert_eq!(
        fx.ok("{{ and .Values.missing (index .Values.missing 1) }}"),
        "<no value>"
    );
}

#[test]
fn comment_trimming_follows_go() {
    let fx = Fx::new(values());
    assert_eq!(fx.ok("a  {{- /* c */}}  b"), "a  b");
    assert_eq!(fx.ok("a  {{- /* c */ -}}  b"), "ab");
    assert_eq!(fx.ok("a  {{/* c */ -}}  b"), "a  b");
    assert_eq!(fx.ok("a\n{{- /* multi\nline */}}\nb"), "a\nb");
    assert_eq!(fx.ok("x\n  {{- /* c */}}\n  y: 1"), "x\n  y: 1");
    // Line numbers after a rewritten comment are preserved.
    let e = fx.err("{{- /* one\ntwo */}}\n{{ .Values.nullProbe.startupProbe.enabled }}");
    assert!(e.starts_with("template: inject:3:"), "{e}");
}

#[test]
fn argument_conversion() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ valueOrDefault .Values.missing \"\" | quote }}"),
        "\"\""
    );
    assert_eq!(
        fx.ok("{{ valueOrDefault .Values.global.caName \"d\" }}"),
        "d"
    );
    assert_eq!(
        fx.ok("{{ valueOrDefault .Values.global.proxy.statusPort \"d\" }}"),
        "15020"
    );
    let e = fx.err("{{ contains \"/\" .Values.missing }}");
    assert!(
        e.contains("at <.Values.missing>: invalid value; expected string"),
        "{e}"
    );
    assert_eq!(fx.ok("{{ isset .Values.missing \"k\" }}"), "false");
    let e = fx.err("{{ isset .Values.pilot \"k\" }}");
    assert!(
        e.contains("wrong type for value; expected map[string]string; got map[string]interface {}"),
        "{e}"
    );
}

#[test]
fn parse_errors_name_template_and_line() {
    let e = Template::parse("sidecar", "a\n{{ nosuchfunc 1 }}")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "template: sidecar:2: function \"nosuchfunc\" not defined"
    );
    let e = Template::parse("sidecar", "a\n\n{{ if }}")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("template: sidecar:3:"), "{e}");
    // Unimplemented Sprig names parse and fail at execution.
    let fx = Fx::new(values());
    let e = fx.err("{{ uuidv4 }}");
    assert!(
        e.contains("error calling uuidv4: not implemented by outrigger"),
        "{e}"
    );
}

// ------------------------------------------------------------ Istio functions

#[test]
fn istio_exclude_inbound_port() {
    use super::istio::exclude_inbound_port as f;
    assert_eq!(f("15020", ""), "15020");
    assert_eq!(f("15020", "8080, 9090"), "8080,9090,15020");
    assert_eq!(f("15020", "8080, 15020"), "8080,15020,15020");
    assert_eq!(f("15020", "8080,15020"), "8080,15020");
    assert_eq!(f("0", "1"), "1");
    let fx = Fx::new(values());
    assert_eq!(fx.ok("{{ excludeInboundPort .Values.global.proxy.statusPort .Values.global.proxy.excludeInboundPorts }}"), "15020");
}

#[test]
fn istio_format_duration_and_strings() {
    let mut fx = Fx::new(values());
    fx.pc = json!({"drainDuration": "45s", "terminationDrainDuration": "1.500s"});
    assert_eq!(
        fx.ok("{{ formatDuration .ProxyConfig.DrainDuration }}"),
        "45s"
    );
    assert_eq!(
        fx.ok("{{ formatDuration .ProxyConfig.TerminationDrainDuration }}"),
        "1.5s"
    );
    assert_eq!(
        fx.ok("{{ formatDuration .ProxyConfig.FileFlushInterval }}"),
        "0s"
    );
    assert_eq!(fx.ok("{{ indent 2 \"a\\nb\\n\" }}"), "a\n  b\n  ");
    assert_eq!(fx.ok("{{ nindent 2 \"a\\nb\" }}"), "\n  a\n  b");
    assert_eq!(
        fx.ok("{{ directory \"/a/b/c.pem\" }}|{{ directory \"c.pem\" }}|{{ directory \"/a/b/\" }}"),
        "/a/b/||/a/b/"
    );
    assert_eq!(
        fx.ok("{{ contains \"/\" \"a/b\" }}{{ toLower \"AbC\" }}"),
        "trueabc"
    );
    assert_eq!(
        fx.ok("{{ kubevirtInterfaces \"x\" }}{{ excludeInterfaces \"y\" }}"),
        "xy"
    );
    assert_eq!(
        fx.ok("{{ includeInboundPorts .Spec.Containers }}|{{ applicationPorts .Spec.Containers }}"),
        "80|80"
    );
}

#[test]
fn istio_maps_and_json() {
    let mut fx = Fx::new(values());
    fx.meta = json!({"annotations": {"b": "2", "a": "<1>", "empty": ""}, "labels": {"app": "x"}});
    assert_eq!(
        fx.ok("{{ toJSON .ObjectMeta.Annotations }}"),
        r#"{"a":"\u003c1\u003e","b":"2","empty":""}"#
    );
    assert!(fx
        .err("{{ toJSON .ObjectMeta.OwnerReferences }}")
        .contains("expected map[string]string"));
    assert_eq!(
        fx.ok("{{ toJSON .ObjectMeta.Labels }}|{{ toJSON .Values.missing }}"),
        r#"{"app":"x"}|{}"#
    );
    assert_eq!(
        fx.ok("{{ isset .ObjectMeta.Annotations \"empty\" }}"),
        "true"
    );
    assert_eq!(fx.ok("{{ annotation .ObjectMeta \"empty\" \"d\" }}|{{ annotation .ObjectMeta \"zz\" 15020 }}"), "|15020");
    assert_eq!(
        fx.ok("{{ omit .ObjectMeta.Annotations \"a\" \"b\" }}"),
        "map[empty:]"
    );
    assert_eq!(fx.ok("{{ strdict \"k\" \"v\" \"t\" }}"), "map[k:v t:]");
    assert_eq!(
        fx.ok("{{ toJsonMap (strdict \"k\" \"v\") (strdict \"k\" \"w\" \"a\" \"b\") }}"),
        r#"{"a":"b","k":"w"}"#
    );
    assert_eq!(fx.ok("{{ toJsonMap }}"), "null");
    assert_eq!(
        fx.ok("{{ mergeMaps .ObjectMeta.Labels (strdict \"z\" \"1\") }}"),
        "map[app:x z:1]"
    );
    assert_eq!(fx.ok("{{ (fromJSON `[1,2]`) }}"), "[1 2]");
    assert_eq!(fx.ok("{{ fromJSON `bad` }}"), "{}");
    assert_eq!(fx.ok("{{ structToJSON .Values.missing }}"), "{}");
    assert_eq!(fx.ok("{{ protoToJSON .Values.missing }}"), "{}");
}

/// `protoToJSON` hands the data's encoder the message's full name and canonical tree (a field
/// that is a message included), and a message that is not set is `{}` without asking it.
#[test]
fn proto_to_json_uses_the_datas_encoder() {
    let mut fx = Fx::new(json!({}));
    fx.pc = json!({"discoveryAddress": "d:1", "tracing": {"sampling": 1.5}});
    fx.mesh = json!({"defaultConfig": fx.pc.clone()});
    assert_eq!(
        fx.ok("{{ protoToJSON .ProxyConfig }}"),
        r#"istio.mesh.v1alpha1.ProxyConfig={"discoveryAddress":"d:1","tracing":{"sampling":1.5}}"#
    );
    assert_eq!(
        fx.ok("{{ protoToJSON .ProxyConfig.Tracing }}"),
        r#"istio.mesh.v1alpha1.Tracing={"sampling":1.5}"#
    );
    assert_eq!(
        fx.ok("{{ protoToJSON .MeshConfig.DefaultConfig | len }}"),
        fx.ok("{{ protoToJSON .ProxyConfig | len }}")
    );
    assert_eq!(fx.ok("{{ protoToJSON .ProxyConfig.Concurrency }}"), "{}");
}

#[test]
fn istio_value_or_default_and_omit_nil() {
    let fx = Fx::new(
        json!({"r": {"requests": {"cpu": "100m", "memory": null}, "limits": {"cpu": null}, "empty": {}}}),
    );
    assert_eq!(
        fx.ok("{{ omitNil .Values.r }}"),
        "map[empty:map[] requests:map[cpu:100m]]"
    );
    assert_eq!(
        fx.ok("{{ valueOrDefault 0.0 5 }}|{{ valueOrDefault false 5 }}"),
        "0|false"
    );
    assert_eq!(fx.ok("{{ omitNil .Values.missing }}"), "<no value>");
}

#[test]
fn istio_multus() {
    use super::istio::append_multus_network as f;
    assert_eq!(f("", "default/istio-cni"), "default/istio-cni");
    assert_eq!(f("a, b", "default/istio-cni"), "a, b, default/istio-cni");
    assert_eq!(
        f("a, default/istio-cni", "default/istio-cni"),
        "a, default/istio-cni"
    );
    assert_eq!(
        f(r#"[{"name": "x"}]"#, "default/istio-cni"),
        r#"[{"name": "x"}, {"name": "istio-cni", "namespace": "default"}]"#
    );
    assert_eq!(
        f(
            r#"[{"name": "istio-cni", "namespace": "default"}]"#,
            "default/istio-cni"
        ),
        r#"[{"name": "istio-cni", "namespace": "default"}]"#
    );
    assert_eq!(f("[bad]", "default/istio-cni"), "[bad]");
    assert_eq!(f("[bad", "default/istio-cni"), "[bad, default/istio-cni");
}

#[test]
fn istio_otel_attributes() {
    let mut fx = Fx::new(values());
    let src = "{{ otelResourceAttributes .MeshConfig .ObjectMeta.Annotations .ObjectMeta.Labels .DeploymentMeta.Namespace .Spec.Containers }}";
    assert_eq!(fx.ok(src), "");
    fx.mesh = json!({"extensionProviders": [{"name": "otel", "opentelemetry": {"serviceAttributeEnrichment": "OTEL_SEMANTIC_CONVENTIONS"}}]});
    assert_eq!(fx.ok(src), "service.namespace=default,service.version=1.0,service.instance.id=default.$(POD_NAME).hello");
    fx.meta = json!({"labels": {"app.kubernetes.io/version": "v2"}, "annotations": {"resource.opentelemetry.io/service.namespace": "ns2"}});
    assert_eq!(
        fx.ok(src),
        "service.namespace=ns2,service.version=v2,service.instance.id=default.$(POD_NAME).hello"
    );
}

#[test]
fn istio_env() {
    let mut fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ env \"OUTRIGGER_SURELY_UNSET_VAR\" \"dflt\" }}"),
        "dflt"
    );
    // The process environment is not read: only the map the caller passes.
    assert_eq!(
        fx.ok("{{ env \"PATH\" \"none\" }}|{{ expandenv \"[$PATH]\" }}"),
        "none|[]"
    );
    fx.env = BTreeMap::from([
        ("A".to_string(), "1".to_string()),
        ("EMPTY".to_string(), String::new()),
    ]);
    // Istio's `env`: the default when unset or empty.
    assert_eq!(
        fx.ok("{{ env \"A\" \"d\" }}|{{ env \"EMPTY\" \"d\" }}|{{ env \"B\" \"d\" }}"),
        "1|d|d"
    );
    // Sprig's `expandenv` is Go's os.ExpandEnv over the same map.
    assert_eq!(
        fx.ok(r#"{{ expandenv "$A${A}x$A_ ${B}$ $1${}${A" }}"#),
        "11x $ A"
    );
}

// ------------------------------------------------------------ Sprig

#[test]
fn sprig_common() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ \"x\" | default \"d\" }}{{ \"\" | default \"d\" }}{{ 0 | default 5 }}"),
        "xd5"
    );
    assert_eq!(
        fx.ok("{{ .Spec.SecurityContext | default \"d\" }}{{ .ObjectMeta | empty }}"),
        "dfalse"
    );
    assert_eq!(
        fx.ok("{{ quote \"a\" 1 .Values.missing }}|{{ squote \"a\" }}"),
        "\"a\" \"1\"|'a'"
    );
    assert_eq!(
        fx.ok("{{ join \",\" .Values.list }}|{{ join \"-\" (list 1 nil 2) }}"),
        "b,a,c|1-2"
    );
    assert_eq!(
        fx.ok("{{ trunc 3 \"abcdef\" }}|{{ trunc -2 \"abcdef\" }}|{{ trunc 10 \"ab\" }}"),
        "abc|ef|ab"
    );
    assert_eq!(fx.ok("{{ trimAll \"$\" \"$5.00$\" }}"), "5.00");
    assert!(fx
        .err("{{ append \"s\" 1 }}")
        .contains("error calling append: Cannot push on type string"));
    assert_eq!(
        fx.ok("{{ upper \"a\" }}{{ lower \"B\" }}{{ title \"hello world\" }}"),
        "AbHello World"
    );
    assert_eq!(fx.ok("{{ replace \"a\" \"b\" \"aaa\" }}{{ hasPrefix \"a\" \"abc\" }}{{ hasSuffix \"c\" \"abc\" }}"), "bbbtruetrue");
    assert_eq!(
        fx.ok("{{ splitList \",\" \"a,b\" }}{{ (split \",\" \"a,b\")._1 }}"),
        "[a b]b"
    );
    assert_eq!(
        fx.ok("{{ first .Values.list }}{{ last .Values.list }}{{ sortAlpha .Values.list }}"),
        "bc[a b c]"
    );
    assert_eq!(fx.ok("{{ $d := dict \"a\" 1 \"b\" \"x\" }}{{ hasKey $d \"a\" }}{{ get $d \"b\" }}{{ keys $d }}"), "truex[a b]");
    assert_eq!(
        fx.ok("{{ toJson .Values.pilot }}"),
        r#"{"cni":{"enabled":false},"env":{"ENABLE_CLUSTER_TRUST_BUNDLE_API":"true"}}"#
    );
    assert_eq!(fx.ok("{{ (fromJson `{\"a\":1}`).a }}"), "1");
    assert_eq!(
        fx.ok("{{ b64enc \"hello\" }}|{{ b64dec \"aGVsbG8=\" }}"),
        "aGVsbG8=|hello"
    );
    assert_eq!(fx.ok("{{ add 1 2 3 }}{{ sub 5 2 }}{{ mul 2 3 }}{{ div 7 2 }}{{ mod 7 2 }}{{ max 1 5 }}{{ min 4 2 }}"), "6363152");
    assert_eq!(
        fx.ok("{{ int \"12\" }}{{ int64 3.9 }}{{ float64 \"1.5\" }}{{ atoi \"7\" }}"),
        "1231.57"
    );
    assert_eq!(
        fx.ok("{{ ternary \"y\" \"n\" true }}{{ coalesce \"\" .Values.missing \"c\" }}"),
        "yc"
    );
    assert_eq!(fx.ok("{{ regexMatch \"^a+$\" \"aaa\" }}{{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" }}"), "true-W-xxW-");
    assert_eq!(
        fx.ok("{{ uniq (list 1 1 2) }}{{ without (list 1 2 3) 2 }}{{ has 2 (list 1 2) }}"),
        "[1 2][1 3]true"
    );
    assert_eq!(
        fx.ok("{{ kindIs \"map\" .Values.pilot }}{{ typeOf .Values.x }}{{ kindOf .Values.list }}"),
        "truefloat64slice"
    );
    assert_eq!(
        fx.ok("{{ repeat 3 \"ab\" }}{{ toString 5 }}{{ cat \"a\" 1 }}"),
        "ababab5a 1"
    );
    assert_eq!(
        fx.ok("{{ merge (dict \"a\" 1) (dict \"a\" 2 \"b\" 3) }}"),
        "map[a:1 b:3]"
    );
    assert_eq!(
        fx.ok("{{ toPrettyJson (dict \"a\" \"<\") }}"),
        "{\n  \"a\": \"\\u003c\"\n}"
    );
    assert_eq!(
        fx.ok("{{ snakecase \"FooBar baz\" }}|{{ kebabcase \"fooBar\" }}|{{ camelcase \"foo_bar\" }}|{{ swapcase \"aB\" }}"),
        "foo_bar_baz|foo-bar|FooBar|Ab"
    );
    assert_eq!(
        fx.ok("{{ abbrev 5 \"hello world\" }}|{{ dir \"/a/b\" }}|{{ initials \"a b\" }}"),
        "he...|/a|ab"
    );
}

#[test]
fn builtins_go_semantics() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ len .Values.list }}{{ len \"abc\" }}{{ len .ObjectMeta.Annotations }}"),
        "330"
    );
    assert!(fx
        .err("{{ len .Values.missing }}")
        .contains("error calling len"));
    assert_eq!(fx.ok("{{ index .Values.list 1 }}"), "a");
    assert!(fx
        .err("{{ index .Values.list 5 }}")
        .contains("index out of range: 5"));
    assert!(fx
        .err("{{ index .Values.missing 1 }}")
        .contains("index of untyped nil"));
    assert_eq!(fx.ok("{{ index .Values.pilot \"nope\" }}"), "<no value>");
    assert_eq!(
        fx.ok("{{ lt 1 2 }}{{ ge 2.0 .Values.global.proxy.statusPort }}{{ gt \"b\" \"a\" }}"),
        "truefalsetrue"
    );
    assert!(fx
        .err("{{ lt .Values.missing 2 }}")
        .contains("error calling lt"));
    assert_eq!(
        fx.ok("{{ print 1 2 \"a\" 3 }}{{ println \"x\" }}"),
        "1 2a3x\n"
    );
    assert_eq!(
        fx.ok("{{ html \"<a&b>\" }}{{ urlquery \"a b&\" }}{{ js \"'\" }}"),
        "&lt;a&amp;b&gt;a+b%26\\'"
    );
    // Sprig's `slice` overrides the builtin (Go consults the FuncMap first): lists only.
    assert_eq!(
        fx.ok("{{ slice .Values.list 1 }}{{ slice .Values.list 0 2 }}"),
        "[a c][b a]"
    );
    assert!(fx
        .err("{{ slice \"abcd\" 1 3 }}")
        .contains("error calling slice: list should be type of slice or array but string"));
    assert_eq!(
        fx.ok("{{ not .Values.missing }}{{ eq 1 2 1 }}{{ eq \"a\" \"a\" }}"),
        "truetruetrue"
    );
}

#[test]
fn error_positions_are_go_shaped() {
    let fx = Fx::new(values());
    let e = fx.err("line1\n  {{ .Values.nullProbe.startupProbe.enabled }}");
    assert_eq!(
        e,
        "template: inject:2:12: executing \"inject\" at <.Values.nullProbe.startupProbe.enabled>: nil pointer evaluating interface {}.enabled"
    );
    let e = fx.err("{{ define \"d\" }}{{ contains 1 }}{{ end }}{{ template \"d\" . }}");
    assert!(e.contains("executing \"d\""), "{e}");
}

// ------------------------------------------------------------ corpus

pub(super) fn corpus() -> Option<std::path::PathBuf> {
    let p = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/istio"
    ));
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("conformance corpus not found at {}: skipping", p.display());
        None
    }
}

/// Tiny reader for the `templates:` map of an injector config (block literals, 4-space body).
pub(super) fn extract_templates(config: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_templates = false;
    let mut cur: Option<(String, String)> = None;
    for line in config.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            if let Some(c) = cur.take() {
                out.push(c);
            }
            in_templates = line.starts_with("templates:");
            continue;
        }
        if !in_templates {
            continue;
        }
        let name_line = line.strip_prefix("  ").filter(|l| !l.starts_with(' '));
        if let Some(l) = name_line {
            if let Some(c) = cur.take() {
                out.push(c);
            }
            if let Some((name, _)) = l.split_once(':') {
                cur = Some((name.trim().to_string(), String::new()));
            }
            continue;
        }
        if let Some((_, body)) = cur.as_mut() {
            body.push_str(line.strip_prefix("    ").unwrap_or(""));
            body.push('\n');
        }
    }
    if let Some(c) = cur.take() {
        out.push(c);
    }
    // Block literals drop trailing blank lines (clip chomping keeps one newline).
    for (_, b) in out.iter_mut() {
        while b.ends_with("\n\n") {
            b.pop();
        }
    }
    out
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_templates_all_parse() {
    let Some(root) = corpus() else { return };
    let mut count = 0;
    let Ok(dirs) = std::fs::read_dir(root.join("settings")) else {
        return;
    };
    for d in dirs.flatten() {
        let Ok(cfg) = std::fs::read_to_string(d.path().join("config.yaml")) else {
            continue;
        };
        let templates = extract_templates(&cfg);
        assert!(
            !templates.is_empty(),
            "no templates in {}",
            d.path().display()
        );
        for (name, body) in templates {
            if let Err(e) = Template::parse(&name, &body) {
                panic!(
                    "{}: template {name} failed to parse: {e}",
                    d.path().display()
                );
            }
            count += 1;
        }
    }
    assert!(count >= 8, "parsed only {count} templates");
}

/// Top-level scalars and the `defaultConfig` block of a (simple) merged mesh config, as proto-JSON.
fn read_mesh(text: &str) -> Value {
    fn scalar(v: &str) -> Value {
        let v = v.trim();
        if let Ok(i) = v.parse::<i64>() {
            return Value::from(i);
        }
        match v {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(v.trim_matches('\'').to_string()),
        }
    }
    let mut mesh = serde_json::Map::new();
    let mut pc = serde_json::Map::new();
    let mut in_pc = false;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(inner) = line.strip_prefix("  ") {
            if in_pc && !inner.starts_with(' ') {
                if let Some((k, v)) = inner.split_once(": ") {
                    pc.insert(k.to_string(), scalar(v));
                }
            }
            continue;
        }
        in_pc = line.starts_with("defaultConfig:");
        if let Some((k, v)) = line.split_once(": ") {
            if !v.trim().is_empty() && !v.starts_with('[') && !v.starts_with('{') {
                mesh.insert(k.to_string(), scalar(v));
            }
        }
    }
    let pc = Value::Object(pc);
    mesh.insert("defaultConfig".into(), pc);
    Value::Object(mesh)
}

/// Template data inputs for the corpus hello pod with the default settings.
pub(super) fn hello_fixture(root: &std::path::Path) -> Fx {
    let values: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("settings/default/values.json")).unwrap_or_default(),
    )
    .unwrap_or(Value::Null);
    let mesh = read_mesh(
        &std::fs::read_to_string(root.join("settings/default/mesh-merged.yaml"))
            .unwrap_or_default(),
    );
    let mut fx = Fx::new(values);
    fx.pc = mesh["defaultConfig"].clone();
    fx.mesh = mesh;
    fx.native = true;
    fx.meta = json!({"labels": {"app": "hello", "tier": "backend", "track": "stable"}});
    fx
}

pub(super) fn hello_data(fx: &Fx) -> TemplateData<'_> {
    let mut d = fx.data();
    d.proxy_image = "registry.istio.io/testing/proxyv2:latest";
    d.proxy_init_image = "registry.istio.io/testing/proxyv2:latest";
    d
}

/// The hello pod of the corpus rendered with the `sidecar` template of the default settings.
fn render_hello_sidecar(root: &std::path::Path, body: &str) -> Result<String, TemplateError> {
    let fx = hello_fixture(root);
    Template::parse("sidecar", body)?.render(&hello_data(&fx))
}

pub(super) fn sidecar_body(root: &std::path::Path) -> Option<String> {
    let cfg = std::fs::read_to_string(root.join("settings/default/config.yaml")).ok()?;
    extract_templates(&cfg)
        .into_iter()
        .find(|(n, _)| n == "sidecar")
        .map(|(_, b)| b)
}

/// A YAML line without quotes and with collapsed whitespace (template and golden quote differently).
fn norm(line: &str) -> String {
    line.replace(['"', '\''], "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `- item` lines of the block list following the first line equal to `header` (trimmed).
fn golden_list(golden: &str, header: &str) -> Vec<String> {
    let mut lines = golden.lines().skip_while(|l| l.trim() != header);
    let Some(h) = lines.next() else { return vec![] };
    let indent = h.len() - h.trim_start().len();
    lines
        .take_while(|l| {
            l.len() - l.trim_start().len() >= indent && l.trim_start().starts_with("- ")
        })
        .map(norm)
        .collect()
}

/// Check that `want` lines appear in order among the normalised lines of `out`.
fn assert_in_order(out: &[String], want: &[String], what: &str, raw: &str) {
    let mut at = 0;
    for w in want {
        match out[at..].iter().position(|l| l == w) {
            Some(i) => at += i + 1,
            None => panic!("{what}: {w:?} missing (in order) from rendered sidecar:\n{raw}"),
        }
    }
}

/// Compare the rendered sidecar with fragments of `cases/hello.yaml.injected` that come
/// straight from the template: init-container args, proxy env names (order), probes.
fn check_hello_fragments(out: &str, golden: &str) {
    let lines: Vec<String> = out.lines().map(norm).collect();
    // istio-init args: the golden's first `- args:` list.
    let args = golden_list(golden, "- args:");
    assert!(args.len() >= 18, "golden init args not found");
    assert_in_order(&lines, &args, "init arg", out);
    // Proxy env: every `- name:` of the golden env list, in order.
    let env: Vec<String> = golden
        .lines()
        .skip_while(|l| l.trim() != "env:")
        .filter(|l| l.starts_with("        - name: "))
        .map(norm)
        .collect();
    assert!(env.len() >= 19, "golden env not found");
    assert_in_order(&lines, &env, "env", out);
    for frag in [
        "value: istiod.istio-system.svc:15012",
        "value: kubernetes://apis/apps/v1/namespaces/default/deployments/hello",
        "value: hello",
        "value: cluster.local",
        "value: Kubernetes",
        "value: REDIRECT",
        "{name:http,containerPort:80}",
        "restartPolicy: Always",
        "audience: istio-ca",
        "image: registry.istio.io/testing/proxyv2:latest",
    ] {
        assert!(
            lines.iter().any(|l| l == frag),
            "fragment {frag:?} missing from rendered sidecar:\n{out}"
        );
    }
    // Probes: startup then readiness, with the golden's values.
    let probe = |name: &str| -> Vec<String> {
        let mut it = golden.lines().skip_while(|l| l.trim() != name);
        let Some(h) = it.next() else { return vec![] };
        let indent = h.len() - h.trim_start().len();
        it.take_while(|l| l.len() - l.trim_start().len() > indent)
            .map(norm)
            .collect()
    };
    for p in ["readinessProbe:", "startupProbe:"] {
        let want = probe(p);
        assert!(!want.is_empty(), "golden {p} not found");
        let start = lines
            .iter()
            .position(|l| l == p)
            .unwrap_or_else(|| panic!("{p} missing:\n{out}"));
        let got: Vec<String> = lines[start + 1..].iter().take(8).cloned().collect();
        for w in want {
            assert!(got.contains(&w), "{p}: {w:?} missing from {got:?}");
        }
    }
    assert!(
        !out.contains("<no value>"),
        "unexpected <no value> in rendered sidecar:\n{out}"
    );
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_hello_sidecar_renders() {
    let Some(root) = corpus() else { return };
    let Some(body) = sidecar_body(&root) else {
        panic!("no sidecar template in default config")
    };
    let golden =
        std::fs::read_to_string(root.join("cases/hello.yaml.injected")).unwrap_or_default();
    match render_hello_sidecar(&root, &body) {
        Ok(out) => check_hello_fragments(&out, &golden),
        Err(e) => panic!("sidecar render failed: {e}"),
    }
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn sidecar_render_is_repeatable() {
    let Some(root) = corpus() else { return };
    let Some(body) = sidecar_body(&root) else {
        return;
    };
    let fx = hello_fixture(&root);
    let data = hello_data(&fx);
    let t = Template::parse("sidecar", &body).expect("sidecar parses");
    // Speed lives in the benches (`cargo bench -p outrigger-inject`); here: repeated renders
    // of one parsed template give the same text.
    let first = t.render(&data).expect("sidecar renders");
    for _ in 0..3 {
        assert_eq!(t.render(&data).expect("sidecar renders"), first);
    }
}

#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn corpus_injector_templates_render_for_every_settings_variant() {
    let Some(root) = corpus() else { return };
    let Ok(dirs) = std::fs::read_dir(root.join("settings")) else {
        return;
    };
    let mut rendered = 0;
    for d in dirs.flatten() {
        let Ok(cfg) = std::fs::read_to_string(d.path().join("config.yaml")) else {
            continue;
        };
        let Ok(vals) = std::fs::read_to_string(d.path().join("values.json")) else {
            continue;
        };
        let values: Value = serde_json::from_str(&vals).unwrap_or(Value::Null);
        let mut fx = hello_fixture(&root);
        fx.values = values;
        for (name, body) in extract_templates(&cfg) {
            if !matches!(
                name.as_str(),
                "sidecar" | "gateway" | "grpc-simple" | "grpc-agent"
            ) {
                continue;
            }
            let t = Template::parse(&name, &body).expect("corpus template parses");
            match t.render(&hello_data(&fx)) {
                Ok(out) => assert!(!out.is_empty()),
                Err(e) => panic!("{}: {name}: {e}", d.path().display()),
            }
            rendered += 1;
        }
    }
    assert!(rendered >= 4);
}

/// Outputs produced by Go's own text/template for the same `.Values` data.
#[test]
fn outputs_verified_against_go() {
    let mut v = values();
    v["m"] = json!({"b": 2, "a": 1});
    let fx = Fx::new(v);
    let cases = [
        ("{{-3}}|{{ 1e6 }}|{{ 1.5e-7 }}|{{ 100000.5 }}", "-3|1e+06|1.5e-07|100000.5"),
        ("{{ printf \"%v %v %g\" 1e6 0.1 123456789.0 }}", "1e+06 0.1 1.23456789e+08"),
        ("{{ printf \"%5.1f|%x|%X|%o|%c|%08.3f\" 3.14159 255 255 8 65 3.14159 }}", "  3.1|ff|FF|10|A|0003.142"),
        ("{{ range $i, $e := .Values.list }}{{ if eq $i 1 }}{{ break }}{{ end }}{{ $e }}{{ end }}", "b"),
        ("{{ \"a\\tb\\u00e9\\u0001\" | printf \"%q\" }}", "\"a\\tbé\\x01\""),
        ("{{ print nil }}|{{ println 1 2 }}|{{ print \"a\" \"b\" 1 2 \"c\" }}", "<nil>|1 2\n|ab1 2c"),
        ("{{ len .Values.pilot }}|{{ index .Values.pilot.env \"X\" }}|{{ index .Values.pilot.env \"ENABLE_CLUSTER_TRUST_BUNDLE_API\" }}", "2|<no value>|true"),
        ("{{ printf \"%d\" .Values.x }}|{{ printf \"%s\" .Values.list }}|{{ printf \"%v\" .Values.m }}", "%!d(float64=2e+06)|[b a c]|map[a:1 b:2]"),
        ("{{ printf \"%t\" 1 }}|{{ printf \"%d\" true }}|{{ printf \"%q\" 65 }}", "%!t(int=1)|%!d(bool=true)|'A'"),
        ("a\n  {{- /* x */}}\nb\n{{- /* y */ -}}\n  c {{/* z */ -}}   d", "a\nbc d"),
        ("{{ $x := .Values.list }}{{ $x }}{{ with $y := .Values.m }}{{ $y.a }}{{ end }}", "[b a c]1"),
        ("{{ if and .Values.list (eq (len .Values.list) 3) }}yes{{ end }}", "yes"),
        ("{{ or .Values.missing .Values.revision \"\" }}|{{ and .Values.list .Values.revision }}", "|<no value>"),
        ("{{ eq \"a\" \"b\" \"a\" }}|{{ ne 1 2 }}|{{ lt 1.5 2.5 }}|{{ le \"a\" \"a\" }}", "true|true|true|true"),
        ("{{ not 0 }}{{ not \"\" }}{{ not .Values.list }}", "truetruefalse"),
        ("{{ .Values.global.proxy }}", "map[excludeInboundPorts: startupProbe:map[enabled:true failureThreshold:600] statusPort:15020]"),
    ];
    for (src, want) in cases {
        assert_eq!(fx.ok(src), want, "{src}");
    }
    assert_eq!(fx.ok("{{ js \"a\\nb=c\" }}"), "a\\u000Ab\\u003Dc");
    let e = fx.err("{{ eq .Values.x 2000000 }}");
    assert!(
        e.ends_with(
            "at <eq .Values.x 2000000>: error calling eq: incompatible types for comparison: \
             float64 and int"
        ),
        "{e}"
    );
    let e = fx.err("{{ len .Values.missing }}");
    assert!(
        e.ends_with("error calling len: reflect: call of reflect.Value.Type on zero Value"),
        "{e}"
    );
}

#[test]
fn sprig_must_variants_behave_as_their_base_functions() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ mustRest (list 1 2 3) }}"),
        fx.ok("{{ rest (list 1 2 3) }}")
    );
    assert_eq!(fx.ok("{{ mustRest (list 1 2 3) }}"), "[2 3]");
    assert_eq!(fx.ok("{{ mustRegexFind \"a+\" \"baaac\" }}"), "aaa");
    assert_eq!(fx.ok("{{ mustUniq (list 1 1 2) }}"), "[1 2]");
    // Functions outrigger does not implement still parse and fail when executed.
    assert!(fx
        .err("{{ uuidv4 }}")
        .contains("not implemented by outrigger"));
}

#[test]
fn sprig_digests_and_paths_through_templates() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ \"hello\" | sha1sum }}"),
        "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
    );
    assert_eq!(
        fx.ok("{{ adler32sum \"hello\" }} {{ b32enc \"hi\" }}"),
        "103547413 NBUQ===="
    );
    assert_eq!(
        fx.ok("{{ clean \"a/b/../../../c\" }} {{ dir \"/a/../b\" }} {{ osBase \"//a//b//\" }}"),
        "../c / b"
    );
}

#[test]
fn sprig_numeric_helpers_follow_sprig() {
    let fx = Fx::new(values());
    assert_eq!(fx.ok("{{ untilStep 3 10 3 }}"), "[3 6 9]");
    assert_eq!(fx.ok("{{ untilStep 10 3 -3 }}"), "[10 7 4]");
    assert_eq!(fx.ok("{{ untilStep 3 10 -1 }}"), "[]");
    assert_eq!(fx.ok("{{ chunk 2 (list 1 2 3 4 5) }}"), "[[1 2] [3 4] [5]]");
    assert_eq!(fx.ok("{{ chunk 2 (list) }}"), "[]");
    assert_eq!(
        fx.ok("{{ maxf 1 2.5 0.5 }} {{ minf 1 2.5 0.5 }}"),
        "2.5 0.5"
    );
    assert_eq!(
        fx.ok("{{ toDecimal \"0777\" }} {{ toDecimal 777 }} {{ toDecimal \"9\" }}"),
        "511 511 0"
    );
}

#[test]
fn parse_errors_keep_template_and_line() {
    let e = Template::parse("sidecar", "a\n{{ if }}").expect_err("missing condition");
    let TemplateError::Parse { template, line, .. } = &e else {
        panic!("not a parse error: {e:?}");
    };
    assert_eq!((template.as_str(), *line), ("sidecar", 2));
    assert!(e.to_string().starts_with("template: sidecar:2: "), "{e}");
}

/// `set`, `unset` and `merge` change `.Values` in place, as Go's shared map: the change is seen
/// later in the same render (and in `$.Values`), and never by another render.
#[test]
fn map_changes_to_values_are_seen_later_in_the_render_only() {
    let fx = Fx::new(values());
    assert_eq!(
        fx.ok("{{ $_ := set .Values \"added\" \"y\" }}{{ .Values.added }}|{{ $.Values.added }}"),
        "y|y"
    );
    assert_eq!(
        fx.ok("{{ $_ := unset .Values.global \"caName\" }}{{ hasKey .Values.global \"caName\" }}"),
        "false"
    );
    assert_eq!(
        fx.ok("{{ $_ := merge .Values.global.proxy (dict \"added\" 7) }}{{ .Values.global.proxy.added }}"),
        "7"
    );
    // Inside a define, through a variable holding a nested map.
    assert_eq!(
        fx.ok(
            "{{ define \"d\" }}{{ $_ := set .global \"k\" 1 }}{{ end }}{{ $g := .Values.global }}\
               {{ template \"d\" .Values }}{{ $g.k }}"
        ),
        "1"
    );
    // The same template rendered again starts from the data, which is unchanged.
    let t = Template::parse(
        "inject",
        "{{ .Values.added }}{{ $_ := set .Values \"added\" \"y\" }}",
    )
    .expect("parses");
    for _ in 0..2 {
        assert_eq!(t.render(&fx.data()).expect("renders"), "<no value>");
    }
    assert!(fx.values.get("added").is_none());
    assert_eq!(fx.ok("{{ .Values.added }}"), "<no value>");
}

/// A template whose output moves with the clock is never called deterministic (the render memo
/// would otherwise answer with a stale time): each of Sprig's clock-reading functions, rendered
/// at two fixed clocks, gives two outputs, and its template says it is not deterministic.
#[test]
fn templates_that_read_the_clock_are_not_deterministic() {
    let a = Clock::fixed(1_000_000_000, 0, "UTC").expect("clock");
    let b = Clock::fixed(2_000_000_000, 0, "UTC").expect("clock");
    let then = r#"(toDate "2006-01-02" "2001-01-01")"#;
    let texts = [
        "{{ now }}".to_string(),
        r#"{{ date "2006-01-02 15:04:05" now }}"#.to_string(),
        r#"{{ dateInZone "2006-01-02 15:04:05" now "UTC" }}"#.to_string(),
        r#"{{ date_in_zone "2006-01-02 15:04:05" now "UTC" }}"#.to_string(),
        "{{ htmlDate now }}".to_string(),
        r#"{{ htmlDateInZone now "UTC" }}"#.to_string(),
        "{{ unixEpoch now }}".to_string(),
        r#"{{ dateModify "1h" now }}"#.to_string(),
        r#"{{ date_modify "1h" now }}"#.to_string(),
        r#"{{ mustDateModify "1h" now }}"#.to_string(),
        format!("{{{{ ago {then} }}}}"),
        format!("{{{{ durationRound {then} }}}}"),
        r#"{{ date "2006" 0 }}{{ now.Year }}"#.to_string(),
        // A call inside parentheses (a pipeline as an argument), or with a field, is found too.
        "{{ print (now) }}".to_string(),
        "{{ now.Year }}".to_string(),
    ];
    for text in &texts {
        let t = Template::parse("t", text).expect("parses");
        let at_a = t.render_json_at(&json!({}), &a).expect("renders");
        let at_b = t.render_json_at(&json!({}), &b).expect("renders");
        assert_ne!(at_a, at_b, "{text}: the clock should show");
        assert!(!t.is_deterministic(), "{text} reads the clock");
    }
    let fixed = Template::parse("t", r#"{{ toDate "2006-01-02" "2001-01-01" | unixEpoch }}"#)
        .expect("parses");
    assert_eq!(
        fixed.render_json_at(&json!({}), &a).expect("renders"),
        fixed.render_json_at(&json!({}), &b).expect("renders")
    );
    let plain = Template::parse("t", "{{ .x | quote }}").expect("parses");
    assert!(plain.is_deterministic());
    // A pod's metav1.Time (the zero time at admission) reaches `ago` and `durationRound`
    // without any other clock function in the template: `time.Since` reads the clock.
    for text in [
        "{{ durationRound .ObjectMeta.CreationTimestamp }}",
        "{{ ago .ObjectMeta.CreationTimestamp }}",
    ] {
        let t = Template::parse("t", text).expect("parses");
        assert!(!t.is_deterministic(), "{text} reads the clock");
    }
}

/// Sprig's `dig`, `set`, `unset` and the merges (mergo v1.0.2's rules) as Go renders them:
/// each row is also in tests/go_template.rs's table, compared with Go there; here they run
/// with the module's unit tests, which cargo-mutants runs against sprig/dicts.rs
/// (docs/mutation-testing.md).
#[test]
fn dicts_and_merges_render_as_go_renders_them() {
    let fx = Fx::new(values());
    let cases = [
        (r#"{{ dig "a" "d" (dict "a" 1) }}"#, "1"),
        (r#"{{ dig "a" "x" "d" (dict "a" (dict "x" 2)) }}"#, "2"),
        (
            r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" (dict "c" 1))) }}"#,
            "1",
        ),
        (
            r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" (dict "z" 1))) }}"#,
            "d",
        ),
        (
            r#"{{ merge (dict "a" "x") (dict "a" (dict "b" 1)) }}"#,
            "map[a:x]",
        ),
        (
            r#"{{ mergeOverwrite (dict "a" "x") (dict "a" (dict "b" 1)) }}"#,
            "map[a:map[b:1]]",
        ),
        (
            r#"{{ merge (dict "a" (dict "b" 1)) (dict "a" (dict "c" 2)) }}"#,
            "map[a:map[b:1 c:2]]",
        ),
        (
            r#"{{ mergeOverwrite (dict "a" (dict "b" 1)) (dict "a" (dict "c" 2)) }}"#,
            "map[a:map[b:1 c:2]]",
        ),
        (r#"{{ merge (dict) (dict "a" 1) }}"#, "map[a:1]"),
        (r#"{{ merge (dict) (dict "a" (list 1)) }}"#, "map[a:[1]]"),
        (
            r#"{{ merge (dict "a" (list)) (dict "a" (list 1)) }}"#,
            "map[a:[1]]",
        ),
        (
            r#"{{ merge (dict "a" (list 2)) (dict "a" (list 1)) }}"#,
            "map[a:[2]]",
        ),
        (
            r#"{{ mergeOverwrite (dict "a" (list 2)) (dict "a" (list)) }}"#,
            "map[a:[]]",
        ),
        (
            r#"{{ merge (dict "a" (dict)) (dict "a" (dict)) }}"#,
            "map[a:map[]]",
        ),
        (
            r#"{{ mergeOverwrite (dict "a" (dict)) (dict "a" (dict)) }}"#,
            "map[a:map[]]",
        ),
        (
            r#"{{ merge (dict "a" "") (dict "a" (dict)) }}"#,
            "map[a:map[]]",
        ),
        (
            r#"{{ mergeOverwrite (dict "a" 1) (dict "a" (dict)) }}"#,
            "map[a:map[]]",
        ),
        (
            r#"{{ $d := dict "a" 1 }}{{ $_ := unset $d "a" }}{{ $d }}|{{ $_ := set $d "b" 2 }}{{ $d }}"#,
            "map[]|map[b:2]",
        ),
        (
            r#"{{ pick (dict "a" 1 "b" 2 "c" 3) "a" "c" }}|{{ pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3) }}"#,
            "map[a:1 c:3]|[1 3]",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(fx.ok(src), want, "{src}");
    }
    let errors = [
        (r#"{{ dig "a" (dict) }}"#, "error calling dig: dig needs at least three arguments"),
        (
            r#"{{ dig "a" "b" 1 "d" (dict "a" (dict "b" (dict "c" 1))) }}"#,
            "error calling dig: interface conversion: interface {} is int, not string",
        ),
        (
            r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" 1)) }}"#,
            "error calling dig: interface conversion: interface {} is int, not map[string]interface {}",
        ),
        (
            r#"{{ dig "a" "d" (list) }}"#,
            "error calling dig: interface conversion: interface {} is []interface {}, not map[string]interface {}",
        ),
    ];
    for (src, want) in errors {
        let e = fx.err(src);
        assert!(e.ends_with(want), "{src}: {e}");
    }
    // A map made to hold itself, at any depth: Go accepts it and overflows its stack when it
    // prints, encodes or merges it; outrigger refuses at `set` and `merge` (the one listed
    // difference, sprig/dicts.rs).
    for src in [
        r#"{{ $d := dict }}{{ $_ := set $d "x" $d }}ok"#,
        r#"{{ $d := dict }}{{ $_ := set $d "x" (list $d) }}ok"#,
        r#"{{ $d := dict }}{{ $_ := set $d "x" (dict "y" $d) }}ok"#,
        r#"{{ $d := dict }}{{ $_ := merge $d (dict "x" $d) }}ok"#,
    ] {
        let e = fx.err(src);
        assert!(
            e.contains("does not support a map that contains itself"),
            "{src}: {e}"
        );
    }
    // A map holding another map (not itself) is fine.
    assert_eq!(
        fx.ok(r#"{{ $d := dict }}{{ $_ := set $d "x" (list (dict "y" 1)) }}{{ $d }}"#),
        "map[x:[map[y:1]]]"
    );
}

/// Appended to a template, a `set` that never runs: the template then "changes maps in place",
/// which turns off what a render remembers of the root (field-chain prefixes, pure pipelines),
/// so every pipeline is evaluated afresh. Its `if` counts two steps (the node, its command).
const EVALUATE_AFRESH: &str = r#"{{ if false }}{{ $_ := set (dict) "k" 1 }}{{ end }}"#;

/// Render `src` over `fx` within `budget`: the outcome and the work counted.
fn render_counted(
    fx: &Fx,
    src: &str,
    budget: &std::sync::Arc<crate::work::Budget>,
) -> (String, u64) {
    let t = Template::parse("inject", src).expect("parses");
    let out = crate::work::scope(budget, || match t.render(&fx.data()) {
        Ok(s) => format!("ok: {s}"),
        Err(e) => format!("error: {e}"),
    });
    (out, budget.work())
}

#[test]
fn remembered_root_values_match_fresh_evaluation() {
    let mut fx = Fx::new(values());
    fx.meta = json!({"name": "hello", "namespace": "default",
        "annotations": {"a": "1", "sidecar.istio.io/interceptionMode": "TPROXY"},
        "labels": {"app": "hello"}});
    let cases = [
        // Alike pipelines and chains from the root, in actions, conditions and arguments.
        r#"{{ quote .Revision }}{{ quote .Revision }}{{ if eq (quote .Revision) "\"default\"" }}y{{ end }}"#,
        r#"{{ annotation .ObjectMeta `a` "d" }} {{ (annotation .ObjectMeta `a` "d") }} {{ annotation .ObjectMeta `b` "d" }}"#,
        r#"{{ .ObjectMeta.Labels.app }}{{ .ObjectMeta.Labels }}{{ .ObjectMeta.Labels.app }}{{ $.ObjectMeta.Labels.app }}"#,
        r#"{{ .Values.global.proxy.image }}{{ .Values.global }}{{ .Values.global.proxy.image }}"#,
        // A defined template run twice from the root, and once from elsewhere (its `.` and `$`
        // are then not the root).
        r#"{{ define "t" }}[{{ quote .Revision }}|{{ .ObjectMeta.Name }}|{{ $.ObjectMeta.Name }}]{{ end }}{{ template "t" . }}{{ template "t" . }}{{ template "t" .ObjectMeta }}"#,
        r#"{{ define "t" }}{{ .Name }}{{ end }}{{ template "t" .ObjectMeta }}{{ template "t" . }}"#,
        // The root held as an element of a generic list.
        r#"{{ range (list . .) }}{{ quote .Revision }}{{ .ObjectMeta.Name }}{{ .Nope }}{{ end }}"#,
        // Errors after a remembered value: the same message at each pipeline's own place.
        r#"{{ quote .Revision }}
  {{ trunc (quote .Revision) "abc" }}"#,
        r#"{{ quote .Revision }}{{ trunc (quote .Revision | upper) "abc" }}"#,
        r#"{{ annotation .ObjectMeta `a` "d" }}{{ .ObjectMeta.Name.Nope }}"#,
        r#"{{ .ObjectMeta.Name }}
 {{ .ObjectMeta.Name.Nope }}"#,
        r#"{{ .Values.global.proxy }}{{ .Values.global.proxy.image.x }}"#,
        r#"{{ .ObjectMeta.Labels }}{{ .ObjectMeta.Labels "x" }}"#,
        r#"{{ len .Revision }}{{ range len .Revision }}{{ end }}"#,
        r#"{{ .ProxyUID | default "1" }} {{ .ProxyUID | default "1" | quote }} {{ not (.ProxyUID | default "1") }}"#,
        // Values built by functions are never shared between pipelines.
        r#"{{ $l := list 1 }}{{ $a := append (list 1) 2 }}{{ $b := append (list 1) 3 }}{{ $a }}{{ $b }}{{ list 1 }}"#,
        r#"{{ $d := dict "a" 1 }}{{ $e := dict "a" 1 }}{{ $d }}{{ $e }}"#,
    ];
    for src in cases {
        let remembered = fx.render(src).map_err(|e| e.to_string());
        let fresh = fx
            .render(&format!("{src}{EVALUATE_AFRESH}"))
            .map_err(|e| e.to_string());
        assert_eq!(remembered, fresh, "{src}");
        // The same work counted, two steps for the appended `if` aside.
        let (a, wa) = render_counted(&fx, src, &crate::work::Budget::new(None));
        let (b, wb) = render_counted(
            &fx,
            &format!("{src}{EVALUATE_AFRESH}"),
            &crate::work::Budget::new(None),
        );
        if a.starts_with("ok") {
            assert_eq!((a, wa + 2), (b, wb), "{src}");
        }
    }
}

#[test]
fn remembered_root_values_stop_where_fresh_evaluation_stops() {
    let fx = Fx::new(values());
    // Thousands of steps of alike pipelines from the root, so that the budget's checks (every
    // `Meter::EVERY` steps) fall inside and around remembered ones.
    let src = r#"{{ define "t" }}{{ quote .Revision }}{{ trunc 3 (quote .Revision | upper) }}{{ .ObjectMeta.Name }}{{ end }}{{ range until 700 }}{{ template "t" $ }}{{ end }}"#;
    let afresh = format!("{src}{EVALUATE_AFRESH}");
    let (done, work) = render_counted(&fx, src, &crate::work::Budget::new(None));
    let (done_fresh, work_fresh) = render_counted(&fx, &afresh, &crate::work::Budget::new(None));
    assert_eq!((&done, work + 2), (&done_fresh, work_fresh));
    assert!(work > 4 * crate::work::Meter::EVERY, "{work}");
    for limit in (1..=4).map(|k| k * crate::work::Meter::EVERY) {
        let budget = crate::work::Budget::with_work_limit(None, limit);
        let (stopped, _) = render_counted(&fx, src, &budget);
        let budget = crate::work::Budget::with_work_limit(None, limit);
        let (stopped_fresh, _) = render_counted(&fx, &afresh, &budget);
        assert!(stopped.contains("work budget is exhausted"), "{stopped}");
        assert_eq!(stopped, stopped_fresh, "limit {limit}");
    }
}
