//! The library's error type. Every message names its cause: the document, field path, template
//! line or annotation that was wrong.

use thiserror::Error;

/// Errors of the injection pipeline.
#[derive(Debug, Error)]
pub enum Error {
    /// YAML that could not be parsed (message carries line and column).
    #[error("{0}")]
    Yaml(String),
    /// JSON that could not be parsed or had the wrong shape.
    #[error("{0}")]
    Json(String),
    /// Injector configuration (`config`, `values`, mesh config) could not be loaded.
    #[error("{0}")]
    Config(String),
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
    /// ProxyConfig / MeshConfig could not be decoded or failed validation.
    #[error("{0}")]
    ProxyConfig(String),
    /// Any other injection failure (prometheus scrape configuration, overrides, ...).
    #[error("{0}")]
    Inject(String),
    /// A workload document could not be processed by kube-inject.
    #[error("{0}")]
    Workload(String),
}

impl Error {
    /// Prefix the message with context, keeping the variant (`failed to run injection template: ...`).
    pub fn context(self, prefix: &str) -> Error {
        let wrap = |m: String| format!("{prefix}: {m}");
        match self {
            Error::Yaml(m) => Error::Yaml(wrap(m)),
            Error::Json(m) => Error::Json(wrap(m)),
            Error::Config(m) => Error::Config(wrap(m)),
            Error::Template(m) => Error::Template(wrap(m)),
            Error::InvalidAnnotations(m) => Error::InvalidAnnotations(wrap(m)),
            Error::Merge(m) => Error::Merge(wrap(m)),
            Error::Type(m) => Error::Type(wrap(m)),
            Error::ProxyConfig(m) => Error::ProxyConfig(wrap(m)),
            Error::Inject(m) => Error::Inject(wrap(m)),
            Error::Workload(m) => Error::Workload(wrap(m)),
        }
    }
}

/// Result alias of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
