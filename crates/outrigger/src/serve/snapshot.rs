//! Configuration sources for the webhook: Istio's mounted layout (`config`, `values`, `mesh`) or
//! the embedded default, parsed into a [`Snapshot`] that requests share through an `Arc`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use outrigger_inject::config::defaults;
use outrigger_inject::config::Snapshot;

/// Where the configuration files are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// Injector config (`--injectConfig`).
    pub config: PathBuf,
    /// Injector values (`--injectValues`).
    pub values: PathBuf,
    /// Mesh config (`--meshConfig`).
    pub mesh: PathBuf,
}

/// The raw documents a snapshot was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Texts {
    /// Injector config.
    pub config: String,
    /// Values (empty when the file is absent).
    pub values: String,
    /// Whether the values file exists (the embedded default: always).
    pub values_present: bool,
    /// Mesh config (`None`: Istio's defaults).
    pub mesh: Option<String>,
    /// Whether these are the embedded defaults.
    pub embedded: bool,
}

impl Texts {
    /// The documents by name as the guard rules see them (`None`: the file is absent).
    pub fn documents(&self) -> [(&'static str, Option<&str>); 3] {
        [
            ("config", Some(self.config.as_str())),
            (
                "values",
                self.values_present.then_some(self.values.as_str()),
            ),
            ("mesh", self.mesh.as_deref()),
        ]
    }

    /// A short description for logs.
    pub fn describe(&self, paths: &Paths) -> String {
        if self.embedded {
            "embedded default configuration".to_string()
        } else {
            format!(
                "{} (values {}, mesh {})",
                paths.config.display(),
                paths.values.display(),
                paths.mesh.display()
            )
        }
    }
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow!(e).context(format!("reading {}", path.display()))),
    }
}

/// Read the documents: the files when the config file exists, else the embedded default
/// (with the mounted mesh config, if any).
pub fn read(paths: &Paths) -> Result<Texts> {
    let mesh = read_optional(&paths.mesh)?;
    match read_optional(&paths.config)? {
        Some(config) => {
            let values = read_optional(&paths.values)?;
            Ok(Texts {
                config,
                values_present: values.is_some(),
                values: values.unwrap_or_default(),
                mesh,
                embedded: false,
            })
        }
        None => Ok(Texts {
            config: defaults::CONFIG.to_string(),
            values: defaults::VALUES.to_string(),
            values_present: true,
            mesh: mesh.or_else(|| Some(defaults::MESH.to_string())),
            embedded: true,
        }),
    }
}

/// Parse the documents into a snapshot. A panic inside the library is reported as an error.
pub fn build(texts: &Texts) -> Result<Snapshot> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        Snapshot::load(&texts.config, &texts.values, texts.mesh.as_deref())
            .map(|s| s.with_template_env(crate::template_env::current()))
    }));
    match result {
        Ok(r) => r.context("loading the injector configuration"),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(anyhow!(
                "loading the injector configuration panicked: {msg}"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falls_back_to_the_embedded_default() {
        let dir = std::env::temp_dir().join(format!("outrigger-snap-{}", std::process::id()));
        let paths = Paths {
            config: dir.join("config"),
            values: dir.join("values"),
            mesh: dir.join("mesh"),
        };
        let t = read(&paths).unwrap();
        assert!(t.embedded);
        assert_eq!(t.config, defaults::CONFIG);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config"), "policy: disabled\n").unwrap();
        let t = read(&paths).unwrap();
        assert!(!t.embedded);
        assert_eq!(
            (t.config.as_str(), t.values.as_str(), t.mesh.as_deref()),
            ("policy: disabled\n", "", None)
        );
        assert!(!t.values_present);
        assert_eq!(t.documents()[1], ("values", None));
        std::fs::write(dir.join("values"), "").unwrap();
        let t = read(&paths).unwrap();
        assert_eq!(t.documents()[1], ("values", Some("")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
