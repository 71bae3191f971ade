//! Differential tests of reuse between renders ([`super::reuse`]): one template rendered over a
//! stream of changing data (pod labels, annotations and spec, proxy and mesh config, values,
//! environment, encoder, clock and zone; changes and changes back) must give, render by render,
//! what a freshly parsed template gives: the same text or error (with its position), the same
//! work counted, the same stop under a work limit.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::tests::{corpus, hello_data, hello_fixture, sidecar_body, values, Fx};
use super::{Clock, Template, TemplateData};
use crate::work::{Budget, Meter};

/// Another `protoToJSON` encoder (the render's encoder is an input like any other).
fn other_proto_json(name: &str, v: &Value) -> String {
    format!("<{name}:{v}>")
}

/// A small deterministic generator (xorshift), so every run sees the same stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One render's inputs besides the fixture's trees.
struct Case {
    fx: Fx,
    proto: fn(&str, &Value) -> String,
    clock: Clock,
    revision: &'static str,
}

impl Case {
    fn data(&self) -> TemplateData<'_> {
        let mut d = self.fx.data();
        d.proto_json = self.proto;
        d.revision = self.revision;
        d
    }
}

/// The `i`th data of the stream: each input changes now and then, and often changes back.
fn case(base: &Fx, rng: &mut Rng) -> Case {
    let mut fx = Fx::new(base.values.clone());
    fx.meta = base.meta.clone();
    fx.spec = base.spec.clone();
    fx.pc = base.pc.clone();
    fx.mesh = base.mesh.clone();
    fx.native = base.native;
    fx.uid = base.uid;
    // Pods: a distinct app label most of the time, annotations now and then.
    let app = match rng.pick(4) {
        0 => "hello".to_string(),
        _ => format!("h{:06}", rng.pick(1_000_000)),
    };
    let meta = fx.meta.as_object_mut().expect("object meta");
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    labels["app"] = json!(app);
    if rng.pick(3) == 0 {
        labels["version"] = json!(format!("v{}", rng.pick(3)));
    }
    match rng.pick(10) {
        0 => {
            meta.insert(
                "annotations".into(),
                json!({"sidecar.istio.io/interceptionMode": "TPROXY", "x": "1"}),
            );
        }
        1 => {
            meta.insert(
                "annotations".into(),
                json!({"x": "1", "sidecar.istio.io/interceptionMode": "TPROXY"}),
            );
        }
        2 => {
            meta.insert(
                "annotations".into(),
                json!({"sidecar.istio.io/proxyCPU": "200m", "status.sidecar.istio.io/port": "0",
                       "sidecar.istio.io/userVolume": "{\"v\": {\"emptyDir\": {}}}"}),
            );
        }
        _ => {}
    }
    if rng.pick(5) == 0 {
        meta.insert(
            "creationTimestamp".into(),
            json!(["2024-03-01T10:00:00Z", "2024-07-01T10:00:00Z"][rng.pick(2) as usize]),
        );
    }
    // Specs: another container, another service account, another port number representation.
    if rng.pick(4) == 0 {
        fx.spec["containers"]
            .as_array_mut()
            .expect("containers")
            .push(
                json!({"name": format!("side{}", rng.pick(2)), "ports": [{"containerPort": 90}]}),
            );
    }
    if rng.pick(5) == 0 {
        fx.spec["serviceAccountName"] = json!("sa");
    }
    if rng.pick(7) == 0 {
        fx.spec["containers"][0]["ports"][0]["containerPort"] = json!(80.0);
    }
    // Config: the proxy config (a pod's annotation), the mesh, the values (a reload).
    match rng.pick(12) {
        0 => fx.pc["concurrency"] = json!(2),
        1 => fx.pc["proxyMetadata"] = json!({"ISTIO_META_ENABLE_HBONE": "true", "A": "b"}),
        2 => fx.pc["interceptionMode"] = json!("TPROXY"),
        _ => {}
    }
    if rng.pick(8) == 0 {
        fx.mesh["trustDomain"] = json!(["other.local", "cluster.local"][rng.pick(2) as usize]);
    }
    match rng.pick(20) {
        0 => fx.values["global"]["caName"] = json!("GkeWorkloadCertificate"),
        1 => fx.values["global"]["proxy"]["statusPort"] = json!(15021),
        2 => fx.values["global"]["proxy"]["statusPort"] = json!(15020.0),
        3 => {
            // The same keys in another order (Go maps have none: printed alike, matched or not).
            let g = fx.values["global"].as_object_mut().expect("global");
            let keys: Vec<String> = g.keys().cloned().collect();
            let mut moved = serde_json::Map::new();
            for k in keys.iter().rev() {
                moved.insert(k.clone(), g[k].clone());
            }
            *g = moved;
        }
        4 => fx.values["pilot"]["cni"]["enabled"] = json!(true),
        _ => {}
    }
    if rng.pick(8) == 0 {
        fx.native = !fx.native;
    }
    if rng.pick(5) == 0 {
        fx.uid = 1000 + rng.pick(2) as i64;
    }
    if rng.pick(8) == 0 {
        fx.env = BTreeMap::from([("FOO".to_string(), format!("{}", rng.pick(2)))]);
    }
    let zone = [
        "UTC",
        "UTC",
        "UTC",
        "UTC",
        "Europe/Paris",
        "America/New_York",
    ][rng.pick(6) as usize];
    let clock = Clock::fixed(1_700_000_000 + 86_400 * rng.pick(2) as i64, 0, zone)
        .or_else(|_| Clock::fixed(1_700_000_000, 0, "UTC"))
        .expect("a UTC clock");
    Case {
        fx,
        proto: if rng.pick(6) == 0 {
            other_proto_json
        } else {
            super::tests::proto_json_fixture
        },
        clock,
        revision: ["default", "canary"][usize::from(rng.pick(6) == 0)],
    }
}

/// Render within `budget`: the outcome (text or error) and the work counted.
fn counted(t: &Template, c: &Case, budget: &Arc<Budget>) -> (String, u64) {
    let out = crate::work::scope(budget, || match t.render_at(&c.data(), &c.clock) {
        Ok(s) => format!("ok: {s}"),
        Err(e) => format!("error: {e}"),
    });
    (out, budget.work())
}

/// Render `src` warm over `n` data of the stream from `base` and compare each render with a
/// fresh template's: text or error, work, and the stop under work limits around the checks.
fn differential(src: &str, base: &Fx, n: usize, seed: u64) -> (usize, u64) {
    let warm = Template::parse("inject", src).expect("parses");
    let mut rng = Rng(seed);
    let mut oks = 0;
    for i in 0..n {
        let c = case(base, &mut rng);
        let fresh = Template::parse("inject", src).expect("parses");
        let (a, wa) = counted(&warm, &c, &Budget::new(None));
        let (b, wb) = counted(&fresh, &c, &Budget::new(None));
        assert_eq!(a, b, "render {i} of {src:.60}");
        assert_eq!(wa, wb, "work of render {i} of {src:.60}");
        oks += usize::from(a.starts_with("ok"));
        if i % 5 == 4 && wb > Meter::EVERY {
            for limit in [1, 2, 3, 4, 6, 9]
                .iter()
                .map(|k| k * Meter::EVERY)
                .filter(|l| *l <= wb + Meter::EVERY)
            {
                for delta in [0, 1, Meter::EVERY / 2] {
                    let limit = limit + delta;
                    let fresh = Template::parse("inject", src).expect("parses");
                    let a = counted(&warm, &c, &Budget::with_work_limit(None, limit));
                    let b = counted(&fresh, &c, &Budget::with_work_limit(None, limit));
                    assert_eq!(a, b, "render {i} limit {limit} of {src:.60}");
                }
            }
        }
    }
    eprintln!(
        "{} segments replayed in {n} renders of {src:.40}",
        warm.reuse_hits()
    );
    (oks, warm.reuse_hits())
}

/// Segments that read each kind of input, declare and read variables, call defined templates,
/// read the clock, use the root whole, and assign.
const MIXED: &str = r#"{{ $a := .ObjectMeta.Labels.app }}{{ $n := len .Spec.Containers }}{{ $t := eq (annotation .ObjectMeta `sidecar.istio.io/interceptionMode` .ProxyConfig.InterceptionMode) `TPROXY` }}
a={{ $a }} n={{ $n }} t={{ $t }}
{{ if .ObjectMeta.Annotations }}ann={{ toJson .ObjectMeta.Annotations }}{{ end }}
{{ range $i, $c := .Spec.Containers }}{{ $i }}:{{ $c.Name }}:{{ structToJSON $c.Ports }} {{ end }}
{{ with .Values.global.proxy }}{{ .statusPort }}{{ end }} {{ toJson .Values.global }}
{{ .MeshConfig.TrustDomain }} {{ .ProxyConfig.Concurrency }} {{ .ProxyConfig.ProxyMetadata }}
{{ env "FOO" "unset" }} {{ protoToJSON .ProxyConfig }}
{{ .NativeSidecars }} {{ .ProxyUID }} {{ .ProxyGID }} {{ .Revision }} {{ .TypeMeta.Kind }} {{ .DeploymentMeta.Name }} {{ .ProxyImage }}
{{ annotation .ObjectMeta `x` .Values.global.caName }}
{{ define "d" }}[{{ .ObjectMeta.Labels.version }}|{{ $.Spec.ServiceAccountName }}|{{ .Values.pilot.cni.enabled }}]{{ end }}{{ template "d" . }}
{{ define "e" }}<{{ .Name }}>{{ end }}{{ template "e" .ObjectMeta }}
{{ $l := list }}{{ range .Spec.Containers }}{{ $l = append $l .Name }}{{ end }}{{ join "," $l }} {{ $l }}
{{ if $t }}tproxy {{ $a }}{{ else }}{{ $n }}{{ end }}
{{ $a := printf "%s/%d" $a $n }}{{ $a }}
{{ .ObjectMeta.CreationTimestamp }} {{ toDate "2006-01-02" "2024-03-01" }}
{{ now | date "2006-01-02T15" }} {{ toJson . | len }}
{{ if .Values.pilot.cni.enabled }}{{ range $k, $v := .Values.global }}{{ $k }} {{ end }}{{ end }}
{{ $first := true }}{{ range .Spec.Containers }}{{ if not $first }},{{ end }}{{ .Name }}{{ $first = false }}{{ end }} first={{ $first }}
{{ if .Values.pilot.cni.enabled }}{{ $n = 7 }}{{ end }}{{ $n }}{{ $t = not $t }}{{ $t }}{{ range $i, $c := .Spec.Containers }}{{ $n = $i }}{{ end }}{{ $n }}
{{ $f := 1.5 }}{{ $f }}{{ $u := .ObjectMeta }}{{ $u.Name }}{{ $t }}
{{ with .ObjectMeta.Annotations.nope }}{{ . }}{{ else }}{{ .ObjectMeta.Labels.app }}{{ end }}
{{ range .ObjectMeta.Annotations.nope }}{{ . }}{{ else }}{{ .ObjectMeta.Labels.version }}{{ end }}
{{ range .Spec.Containers }}{{ $.ObjectMeta.Labels.app }}{{ .Name }}{{ end }}{{ template "d" $ }}
{{ with $x := .ObjectMeta.Labels }}{{ $x.app }}{{ $.NativeSidecars }}{{ end }}{{ (.ObjectMeta.Labels).app }}
{{ $.ObjectMeta.Labels.app | printf "%s-%v" (.ObjectMeta.GetLabels.version) }}
"#;

/// Failures that depend on the data: an error's text and position must be the fresh one.
const FAILING: &str = r#"{{ $p := .Values.global.proxy.statusPort }}ok {{ $p }}
{{ if eq (index .ObjectMeta.Labels "app") "hello" }}{{ fail "hello is refused" }}{{ end }}
{{ with .ObjectMeta.Annotations }}{{ fromJSON (index . "sidecar.istio.io/userVolume") | toJson }}{{ end }}
{{ if .ProxyConfig.Concurrency }}{{ .ProxyConfig.Concurrency.Nope }}{{ end }}
{{ if eq (index .ObjectMeta.Labels "version") "v2" }}{{ randAlphaNum 3 }}{{ end }}
{{ index .Spec.Containers 1 | toJson }}
"#;

/// A template that changes maps in place (reuse is off, and must stay exact).
const MUTATING: &str = r#"{{ $d := dict }}{{ $_ := set $d "k" .ObjectMeta.Labels.app }}{{ $d.k }}
{{ $_ := set .Values "x" 1 }}{{ .Values.x }} {{ .ObjectMeta.Labels.app }} {{ .Values.global.caName }}
"#;

fn base() -> Fx {
    let mut fx = Fx::new(values());
    fx.meta = json!({"name": "hello", "namespace": "default", "labels": {"app": "hello"}});
    fx
}

#[test]
fn reuse_matches_fresh_renders_over_changing_data() {
    let fx = base();
    let (oks, hits) = differential(MIXED, &fx, 120, 0x9e37_79b9_7f4a_7c15);
    assert!(oks == 120 && hits > 500, "{oks} {hits}");
    let (oks, hits) = differential(FAILING, &fx, 120, 0x2545_f491_4f6c_dd1d);
    assert!(oks > 10 && oks < 110, "both outcomes are seen: {oks}");
    assert!(hits > 50, "{hits}");
    let (oks, hits) = differential(MUTATING, &fx, 60, 7);
    assert_eq!((oks, hits), (60, 0), "no reuse where maps change");
}

#[test]
fn reuse_of_many_segments_stops_where_fresh_renders_stop() {
    // Thousands of steps in a few hundred segments, so that the budget's checks fall inside
    // and between replayed segments.
    let mut src = String::new();
    for i in 0..250 {
        src.push_str(&format!(
            "{{{{ if .ObjectMeta.Annotations.x }}}}A{i}{{{{ else }}}}{{{{ .Values.global.caName }}}}-{{{{ annotation .ObjectMeta `y` `d` | quote }}}}{{{{ end }}}}\n\
             {{{{ $v{i} := printf \"%s-{i}\" (.ObjectMeta.Labels.version | default `none`) }}}}{{{{ $v{i} }}}}\n\
             {{{{ range until 3 }}}}{{{{ $.Revision }}}}{{{{ end }}}}\n"
        ));
    }
    let fx = base();
    let warm = Template::parse("inject", &src).expect("parses");
    let mut rng = Rng(11);
    let c = case(&fx, &mut rng);
    let (_, work) = counted(&warm, &c, &Budget::new(None));
    assert!(work > 4 * Meter::EVERY, "{work}");
    let (oks, hits) = differential(&src, &fx, 40, 3);
    assert!(oks == 40 && hits > 10_000, "{oks} {hits}");
}

#[test]
fn reuse_of_the_istio_sidecar_template_matches_fresh_renders() {
    let Some(root) = corpus() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the corpus is required under CI"
        );
        return;
    };
    let body = sidecar_body(&root).expect("the sidecar template");
    let fx = hello_fixture(&root);
    let (oks, hits) = differential(&body, &fx, 150, 0xdead_beef);
    assert!(oks == 150 && hits > 600, "{oks} {hits}");
    // The injector's own data shape (image names of the hello fixture).
    let warm = Template::parse("sidecar", &body).expect("parses");
    let fresh = |fx: &Fx| {
        Template::parse("sidecar", &body)
            .expect("parses")
            .render(&hello_data(fx))
    };
    let mut fx = hello_fixture(&root);
    for i in 0..20 {
        fx.meta["labels"]["app"] = json!(format!("h{:06}", i / 3));
        let a = warm.render(&hello_data(&fx)).map_err(|e| e.to_string());
        let b = fresh(&fx).map_err(|e| e.to_string());
        assert_eq!(a, b, "render {i}");
    }
    // Pods that differ in their app label alone replay most segments.
    let planned = warm.reuse.as_ref().map_or(0, |p| p.planned());
    assert!(
        warm.reuse_hits() > 19 * planned as u64 * 3 / 4,
        "{} of {planned}",
        warm.reuse_hits()
    );
}

#[test]
fn reuse_is_exact_across_threads() {
    let fx = base();
    let warm = Template::parse("inject", MIXED).expect("parses");
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let warm = &warm;
            let fx = &fx;
            s.spawn(move || {
                let mut rng = Rng(100 + t);
                for i in 0..40 {
                    let c = case(fx, &mut rng);
                    let fresh = Template::parse("inject", MIXED).expect("parses");
                    let a = counted(warm, &c, &Budget::new(None));
                    let b = counted(&fresh, &c, &Budget::new(None));
                    assert_eq!(a, b, "thread {t} render {i}");
                }
            });
        }
    });
}

#[test]
fn reuse_of_every_corpus_template_matches_fresh_renders() {
    let Some(root) = corpus() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the corpus is required under CI"
        );
        return;
    };
    let dirs = std::fs::read_dir(root.join("settings")).expect("settings");
    let mut checked = 0;
    for (k, d) in dirs.flatten().enumerate() {
        let (Ok(cfg), Ok(vals)) = (
            std::fs::read_to_string(d.path().join("config.yaml")),
            std::fs::read_to_string(d.path().join("values.json")),
        ) else {
            continue;
        };
        let mut fx = hello_fixture(&root);
        fx.values = serde_json::from_str(&vals).expect("values.json");
        for (name, body) in super::tests::extract_templates(&cfg) {
            if Template::parse(&name, &body).is_err() {
                continue;
            }
            differential(&body, &fx, 25, 0x5eed + k as u64);
            checked += 1;
        }
    }
    assert!(checked >= 8, "{checked}");
}

#[test]
fn reuse_with_pod_fields_too_large_to_hold_matches_fresh_renders() {
    let mut fx = base();
    let containers: Vec<Value> = (0..120)
        .map(|i| json!({"name": format!("c{i}"), "ports": [{"containerPort": 1000 + i}]}))
        .collect();
    fx.spec = json!({ "containers": containers });
    let (oks, hits) = differential(MIXED, &fx, 80, 0xb16);
    assert!(oks == 80 && hits > 100, "{oks} {hits}");
}
