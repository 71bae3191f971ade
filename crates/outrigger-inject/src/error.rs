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
use crate::mesh::MeshError;
use crate::yaml::YamlError;

/// Errors of the injection pipeline.
#[derive(Debug, Error)]
pub enum Error {
    /// YAML that could not be parsed, or a tree that cannot be written as YAML.
    #[error(transparent)]
    Yaml(#[from] YamlError),
    /// JSON that could not be parsed or had the wrong shape.
    #[error("{0}")]
    Json(String),
    /// Injector configuration (`config`, `values`, mesh config) could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A template failed to parse or execute (message carries `template: NAME:LINE:COL`).
    #[error("{0}")]
    Template(String),
    /// Pod annotations failed validation (Istio's multierror format).
    #[error("{0}")]
    InvalidAnnotations(String),
    /// Strategic merge of a rendered template failed.
    #[error("{0}")]
    Merge(String),
    /// A value does not fit the Kubernetes Go type of its field.
    #[error("{0}")]
    Type(String),
    /// ProxyConfig / MeshConfig could not be decoded, merged or failed validation.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// Any other injection failure (prometheus scrape configuration, overrides, ...).
    #[error("{0}")]
    Inject(String),
    /// A workload document could not be processed by kube-inject.
    #[error("{0}")]
    Workload(String),
    /// An error of an inner step, with the step that failed in front: `{context}: {source}`.
    #[error("{context}: {source}")]
    Context {
        /// The outer step (`failed to run injection template`, `could not decode pod`, ...).
        context: String,
        /// The inner error.
        source: Box<Error>,
    },
}

impl Error {
    /// Put the step that failed in front of the message (`failed to run injection template: ...`).
    pub fn context(self, prefix: &str) -> Error {
        Error::Context {
            context: prefix.to_string(),
            source: Box::new(self),
        }
    }

    /// The error under every [`Error::Context`] wrapper: what actually failed.
    pub fn root(&self) -> &Error {
        let mut e = self;
        while let Error::Context { source, .. } = e {
            e = source;
        }
        e
    }
}

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
