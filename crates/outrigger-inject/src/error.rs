//! The crate-wide error sum, [`Error`](enum@Error), and [`Result`]. Every message names its
//! cause: the document, field path, template line or annotation that was wrong.
//!
//! The engines (YAML, templates, Kubernetes types, mesh config, configuration) and the stages
//! of the pipeline (ingest, decide, render, merge, finish, patch) return their own error types
//! and never name this sum: an engine's error holds the lower engines' errors it can meet
//! (`ConfigError::Mesh` holds a [`MeshError`], `MeshError::ProxyConfig` another), and a stage's
//! error holds the other stages' and engines' errors it passes on (`MergeError::Type` holds a
//! [`TypeError`]), with its own context wrapper where a step puts its name in front
//! (`MergeError::context`, `ConfigError::context`). The sum sits above the stages, in the
//! orchestrators (`inject`, `webhook`, `kube_inject`, ...), which convert with `?`.
//!
//! The conversions flatten: a stage error becomes the sum's variant of what actually failed,
//! exactly as if that error had been converted on its own, so messages, [`Error::root`] and the
//! webhook's metrics reason stay those of the cause. A [`TypeError`] raised by the merge stage
//! under `unmarshal patched pod` becomes `Error::Context { context: "unmarshal patched pod",
//! source: Error::Type(..) }`, not an `Error::Merge`; a template that fails to execute in the
//! render stage becomes `Error::Template`; a mesh config that is not YAML becomes
//! `Error::Yaml`. A step that fails inside a larger one in an orchestrator is wrapped with
//! [`Error::context`], which puts the outer step in front of the message as Istio does
//! (`failed to run injection template: ...`) and keeps the inner error reachable
//! ([`Error::root`]).

use thiserror::Error;

use crate::config::ConfigError;
use crate::decide::annotations::InvalidAnnotations;
use crate::finish::prometheus::ScrapeError;
use crate::finish::FinishError;
use crate::go::multierror::format_multierror;
use crate::ingest::workload::WorkloadError;
use crate::json::JsonError;
use crate::kube::typed::TypeError;
use crate::merge::strategic::MergeError;
use crate::mesh::MeshError;
use crate::render::RenderError;
use crate::template::TemplateError;
use crate::yaml::YamlError;

/// Errors of the injection pipeline, as the orchestrators return them.
///
/// Every variant is at most a `String` wide (stage errors are boxed), as are the error types the
/// typed round-trip, the strategic merge and the mesh decoder recurse with ([`TypeError`],
/// [`MergeError`], [`MeshError`]): results travel through the YAML reader's, the merge's, the
/// typed round-trip's and the mesh decoder's recursion, and a wider error makes every frame
/// wider (a 512-deep document must not overflow a test thread's stack).
#[derive(Debug, Error)]
pub enum Error {
    /// YAML that could not be parsed, or a tree that cannot be written as YAML.
    #[error(transparent)]
    Yaml(Box<YamlError>),
    /// JSON that could not be parsed or had the wrong shape.
    #[error(transparent)]
    Json(Box<JsonError>),
    /// Injector configuration (`config`, `values`, mesh config) could not be loaded.
    #[error(transparent)]
    Config(Box<ConfigError>),
    /// A template failed to parse or execute.
    #[error(transparent)]
    Template(Box<TemplateError>),
    /// Pod annotations failed validation: one message per invalid annotation, shown in
    /// Istio's multierror format.
    #[error("{}", format_multierror(.0))]
    InvalidAnnotations(Vec<String>),
    /// A rendered template could not be used (template missing, output not a YAML mapping).
    #[error(transparent)]
    Render(Box<RenderError>),
    /// Strategic merge of a rendered template failed.
    #[error(transparent)]
    Merge(Box<MergeError>),
    /// A value does not fit the Kubernetes Go type of its field.
    #[error(transparent)]
    Type(Box<TypeError>),
    /// ProxyConfig / MeshConfig could not be decoded, merged or failed validation.
    #[error(transparent)]
    Mesh(Box<MeshError>),
    /// A Prometheus scrape configuration the agent cannot serve.
    #[error(transparent)]
    Scrape(Box<ScrapeError>),
    /// The injected pod breaks rules of the API server's pod validation that the pod before
    /// injection did not ([`crate::kube::validate`]): the API server would refuse it. One
    /// message per rule, naming it.
    #[error(
        "the injected pod would be refused by the API server: {}",
        .0.join("; ")
    )]
    RefusedPod(Vec<String>),
    /// A state the pipeline never reaches on any input (reported, never panicking).
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// A workload document could not be processed by kube-inject.
    #[error(transparent)]
    Workload(Box<WorkloadError>),
    /// An error of an inner step, with the step that failed in front.
    #[error(transparent)]
    Context(Box<ErrorContext>),
}

/// An inner error with the step that failed in front: `{context}: {source}`.
#[derive(Debug, Error)]
#[error("{context}: {source}")]
pub struct ErrorContext {
    /// The outer step (`failed to run injection template`, `could not decode pod`, ...).
    pub context: String,
    /// The inner error.
    #[source]
    pub source: Error,
}

macro_rules! boxed_from {
    ($($variant:ident($ty:ty)),* $(,)?) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Error {
                Error::$variant(Box::new(e))
            }
        }
    )*};
}

boxed_from!(
    Yaml(YamlError),
    Json(JsonError),
    Scrape(ScrapeError),
    Workload(WorkloadError),
    Template(TemplateError),
    Type(TypeError),
);

impl From<crate::kube::validate::RefusedPod> for Error {
    fn from(e: crate::kube::validate::RefusedPod) -> Self {
        Error::RefusedPod(e.0)
    }
}

impl From<crate::kube::quantity::QuantityError> for Error {
    fn from(e: crate::kube::quantity::QuantityError) -> Error {
        TypeError::Quantity(e).into()
    }
}

impl From<crate::go::time::TimeError> for Error {
    fn from(e: crate::go::time::TimeError) -> Error {
        TypeError::Time(e).into()
    }
}

/// `context: source` as the sum's context wrapper, moving the prefix (no copy).
fn with_context(context: String, source: Error) -> Error {
    Error::Context(Box::new(ErrorContext { context, source }))
}

/// A mesh config text that is not YAML is the YAML error; every other mesh error is
/// `Error::Mesh`.
impl From<MeshError> for Error {
    fn from(e: MeshError) -> Error {
        match e {
            MeshError::Yaml(y) => Error::Yaml(y),
            other => Error::Mesh(Box::new(other)),
        }
    }
}

/// `ConfigError::Context` becomes `Error::Context` around its inner error's conversion; every
/// other configuration error is `Error::Config`.
impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        match e {
            ConfigError::Context { context, source } => with_context(context, (*source).into()),
            other => Error::Config(Box::new(other)),
        }
    }
}

/// The decide stage's list of invalid annotations is `Error::InvalidAnnotations`.
impl From<InvalidAnnotations> for Error {
    fn from(e: InvalidAnnotations) -> Error {
        Error::InvalidAnnotations(e.0)
    }
}

/// A template that fails to execute is `Error::Template`; the render stage's own failures are
/// `Error::Render`.
impl From<RenderError> for Error {
    fn from(e: RenderError) -> Error {
        match e {
            RenderError::Template(t) => Error::Template(t),
            other => Error::Render(Box::new(other)),
        }
    }
}

/// The merge stage's wrappers become what the wrapped error becomes (`MergeError::Type` is
/// `Error::Type`, `MergeError::Context` is `Error::Context`, ...); a strategic merge failure is
/// `Error::Merge`.
impl From<MergeError> for Error {
    fn from(e: MergeError) -> Error {
        match e {
            MergeError::Type(t) => Error::Type(t),
            MergeError::Render(r) => (*r).into(),
            MergeError::Json(j) => Error::Json(j),
            MergeError::Context(c) => {
                let c = *c;
                with_context(c.context, c.source.into())
            }
            other => Error::Merge(Box::new(other)),
        }
    }
}

/// Each of the finish stage's errors is the sum's variant of that error.
impl From<FinishError> for Error {
    fn from(e: FinishError) -> Error {
        match e {
            FinishError::Json(j) => Error::Json(j),
            FinishError::Type(t) => Error::Type(t),
            FinishError::Scrape(s) => Error::Scrape(s),
        }
    }
}

impl Error {
    /// Put the step that failed in front of the message (`failed to run injection template: ...`).
    pub fn context(self, prefix: &str) -> Error {
        with_context(prefix.to_string(), self)
    }

    /// The error under every [`Error::Context`] wrapper: what actually failed.
    pub fn root(&self) -> &Error {
        let mut e = self;
        while let Error::Context(c) = e {
            e = &c.source;
        }
        e
    }
}

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_stay_one_string_wide() {
        assert!(std::mem::size_of::<Error>() <= std::mem::size_of::<String>() + 8);
    }

    #[test]
    fn stage_and_engine_errors_stay_one_string_wide() {
        let wide = std::mem::size_of::<String>() + 8;
        assert!(std::mem::size_of::<FinishError>() <= wide);
        assert!(std::mem::size_of::<InvalidAnnotations>() <= wide);
        // TypeError, MergeError and MeshError have the same test next to their recursions.
    }

    #[test]
    fn context_prefixes_and_root_reaches_the_cause() {
        let e = Error::Internal("bad").context("inner").context("outer");
        assert_eq!(e.to_string(), "outer: inner: internal error: bad");
        assert!(matches!(e.root(), Error::Internal("bad")));
    }

    /// A type error of the merge stage's typed round-trip keeps its prefix and becomes the sum's
    /// context around `Error::Type`, as it was when the stage returned the sum.
    #[test]
    fn a_merge_stage_type_error_is_a_type_error_in_context() {
        let mut pod = serde_json::json!({});
        let patch = serde_json::json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "x"}]}]}});
        let e = crate::merge::pod::merge_pod(&mut pod, &patch).expect_err("a string port");
        let e = Error::from(e.context("failed applying injection overlay"));
        let Error::Context(outer) = &e else {
            panic!("not a context: {e:?}");
        };
        assert_eq!(outer.context, "failed applying injection overlay");
        let Error::Context(inner) = &outer.source else {
            panic!("not a context: {:?}", outer.source);
        };
        assert_eq!(inner.context, "unmarshal patched pod");
        assert!(matches!(inner.source, Error::Type(_)), "{e:?}");
        assert!(matches!(e.root(), Error::Type(_)));
        assert_eq!(crate::webhook::error_code(&e), "type");
        assert_eq!(
            e.to_string(),
            "failed applying injection overlay: unmarshal patched pod: json: cannot unmarshal \
             string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
        );
    }

    /// The merge stage's other wrappers become what their errors become on their own.
    #[test]
    fn merge_stage_wrappers_flatten() {
        let strategic = MergeError::PatchNotAnObject;
        let e = Error::from(strategic);
        assert!(matches!(e, Error::Merge(_)));
        assert_eq!(crate::webhook::error_code(&e), "merge");

        let yaml = crate::render::rendered_patch("sidecar", "a: [").expect_err("not YAML");
        let e = Error::from(MergeError::from(yaml));
        assert!(matches!(e, Error::Render(_)), "{e:?}");
        assert_eq!(crate::webhook::error_code(&e), "merge");

        let failed = crate::render::RenderError::from(TemplateError::Exec(
            "template: sidecar:1:3: executing \"sidecar\" at <fail>: no".into(),
        ));
        let e = Error::from(MergeError::from(failed));
        assert!(matches!(e, Error::Template(_)), "{e:?}");
        assert_eq!(crate::webhook::error_code(&e), "template");

        let json = crate::ingest::previous::parse_overrides(&serde_json::json!({
            "metadata": {"annotations": {"proxy.istio.io/overrides": "{"}}
        }))
        .expect_err("not JSON");
        let text = json.to_string();
        let e = Error::from(MergeError::from(json).context("failed to apply sidecar container"));
        assert!(matches!(e.root(), Error::Json(_)), "{e:?}");
        assert_eq!(crate::webhook::error_code(&e), "json");
        assert_eq!(
            e.to_string(),
            format!("failed to apply sidecar container: {text}")
        );
    }

    /// A mesh config that is not YAML is the YAML error; under `ProxyConfig` it stays a mesh
    /// error (`proxy_config`) with the YAML text after the prefix.
    #[test]
    fn mesh_yaml_errors_flatten_only_at_the_top() {
        let e = crate::mesh::apply_mesh_config("a: [", &crate::mesh::default_mesh_config())
            .expect_err("not YAML");
        let e = Error::from(e);
        assert!(matches!(e, Error::Yaml(_)), "{e:?}");
        assert_eq!(crate::webhook::error_code(&e), "yaml");

        let e = crate::mesh::apply_proxy_config("a: [", &crate::mesh::default_mesh_config())
            .expect_err("not YAML");
        let yaml = crate::yaml::from_str("a: [")
            .expect_err("not YAML")
            .to_string();
        let e = Error::from(e);
        assert!(matches!(&e, Error::Mesh(m) if matches!(**m, MeshError::ProxyConfig(_))));
        assert_eq!(crate::webhook::error_code(&e), "proxy_config");
        assert_eq!(
            e.to_string(),
            format!("could not parse proxy config: {yaml}")
        );
    }

    /// The configuration's context wrapper is the sum's, around `Error::Config`.
    #[test]
    fn config_context_flattens() {
        let e = crate::config::inject_file::load_inject_config(
            "kind: ConfigMap\ndata:\n  config: |\n    policy: enabled\n",
        )
        .expect_err("a static text");
        let e = Error::from(e);
        let Error::Context(c) = &e else {
            panic!("not a context: {e:?}");
        };
        assert_eq!(c.context, "the ConfigMap's data.config");
        assert!(matches!(c.source, Error::Config(_)));
        assert_eq!(crate::webhook::error_code(&e), "config");
        assert!(e
            .to_string()
            .starts_with("the ConfigMap's data.config: not an injector config"));
    }

    /// The decide, render and finish stages' errors land on the variants the sum had for them.
    #[test]
    fn decide_render_and_finish_errors_keep_their_variants() {
        let e = Error::from(InvalidAnnotations(vec!["bad".into()]));
        assert!(matches!(&e, Error::InvalidAnnotations(v) if v == &["bad"]));
        assert_eq!(e.to_string(), "1 error occurred:\n\t* bad\n\n");
        assert_eq!(crate::webhook::error_code(&e), "invalid_annotations");

        let missing = Error::from(RenderError::TemplateNotFound {
            name: "x".into(),
            have: vec!["sidecar".into()],
        });
        assert_eq!(crate::webhook::error_code(&missing), "template");
        let not_a_map = Error::from(RenderError::NotAMapping("x".into()));
        assert_eq!(crate::webhook::error_code(&not_a_map), "merge");

        let json = Error::from(FinishError::from(JsonError::PodNotAnObject));
        assert!(matches!(json, Error::Json(_)));
        let ty = Error::from(FinishError::from(TypeError::NotAnObject("metadata".into())));
        assert!(matches!(ty, Error::Type(_)));
        assert_eq!(ty.to_string(), "metadata: expected an object");
    }
}
