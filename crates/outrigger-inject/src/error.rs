//! The library's error type. Every message names its cause: the document, field path, template
//! line or annotation that was wrong.
//!
//! Each stage has its own error type where its failures have a structure worth keeping (a YAML
//! error's line, ...); they convert into [`Error`](enum@Error) with `?`. A step that fails inside a larger
//! one is wrapped with [`Error::context`], which puts the outer step in front of the message as
//! Istio does (`failed to run injection template: ...`) and keeps the inner error reachable
//! ([`Error::root`]).

use thiserror::Error;

use crate::config::ConfigError;
use crate::finish::prometheus::ScrapeError;
use crate::go::multierror::format_multierror;
use crate::json::JsonError;
use crate::kube::typed::TypeError;
use crate::kube_inject::WorkloadError;
use crate::merge::strategic::MergeError;
use crate::mesh::MeshError;
use crate::render::RenderError;
use crate::template::TemplateError;
use crate::yaml::YamlError;

/// Errors of the injection pipeline.
///
/// Every variant is at most a `String` wide (stage errors are boxed): results travel through
/// the YAML reader's and the merge's recursion, and a wider error makes every frame wider
/// (a 512-deep document must not overflow a test thread's stack).
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
    Config(ConfigError),
    Render(RenderError),
    Template(TemplateError),
    Type(TypeError),
    Merge(MergeError),
    Mesh(MeshError),
);

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

impl Error {
    /// Put the step that failed in front of the message (`failed to run injection template: ...`).
    pub fn context(self, prefix: &str) -> Error {
        Error::Context(Box::new(ErrorContext {
            context: prefix.to_string(),
            source: self,
        }))
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
    fn context_prefixes_and_root_reaches_the_cause() {
        let e = Error::Internal("bad").context("inner").context("outer");
        assert_eq!(e.to_string(), "outer: inner: internal error: bad");
        assert!(matches!(e.root(), Error::Internal("bad")));
    }
}
