//! Configuration sources for the webhook: Istio's mounted layout (`config`, `values`, `mesh`) or
//! the embedded default, parsed into a [`Snapshot`] that requests share through an `Arc`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use outrigger_inject::config::defaults;
use outrigger_inject::config::input_kind::InputKind;
use outrigger_inject::config::Snapshot;

use crate::config_source::{webhook_document, webhook_documents, Input};

/// Where the configuration files are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// Injector config (`--injectConfigFile`).
    pub config: PathBuf,
    /// Injector values (`--valuesFile`).
    pub values: PathBuf,
    /// Mesh config (`--meshConfigFile`).
    pub mesh: PathBuf,
    /// Whether a missing config file means the embedded default: only when no configuration
    /// flag names a file of its own (each path is Istio's mount path, [`DEFAULT_CONFIG`] and
    /// its siblings). A configuration path given that does not exist is an error, never the
    /// embedded default.
    pub embedded_allowed: bool,
}

/// Istio's mount path of the injector config: `serve --injectConfigFile`'s default.
pub const DEFAULT_CONFIG: &str = "/etc/istio/inject/config";
/// Istio's mount path of the injector values: `serve --valuesFile`'s default.
pub const DEFAULT_VALUES: &str = "/etc/istio/inject/values";
/// Istio's mount path of the mesh config: `serve --meshConfigFile`'s default.
pub const DEFAULT_MESH: &str = "/etc/istio/config/mesh";

impl Paths {
    /// The paths `serve` was given; [`Paths::embedded_allowed`] when all three are the defaults.
    pub fn new(config: PathBuf, values: PathBuf, mesh: PathBuf) -> Paths {
        let embedded_allowed = config == Path::new(DEFAULT_CONFIG)
            && values == Path::new(DEFAULT_VALUES)
            && mesh == Path::new(DEFAULT_MESH);
        Paths {
            config,
            values,
            mesh,
            embedded_allowed,
        }
    }
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
    /// Whether the mesh config file exists (with the embedded default too: the mounted mesh
    /// config applies over it).
    pub mesh_present: bool,
    /// Whether these are the embedded defaults.
    pub embedded: bool,
    /// Whether the values are the `values` key of a whole ConfigMap given as the config file.
    pub values_from_config: bool,
    /// What was read from whole ConfigMaps (`note: PATH is a whole ConfigMap; using its
    /// data.config key`).
    pub notes: Vec<String>,
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

    /// A short description for logs, naming only the files that exist: `embedded default
    /// configuration`, `/etc/istio/inject/config (values /etc/istio/inject/values)`.
    pub fn describe(&self, paths: &Paths) -> String {
        let mut read = Vec::new();
        if self.values_present && !self.embedded && !self.values_from_config {
            read.push(format!("values {}", paths.values.display()));
        }
        if self.mesh_present {
            read.push(format!("mesh {}", paths.mesh.display()));
        }
        let head = if self.embedded {
            "embedded default configuration".to_string()
        } else {
            paths.config.display().to_string()
        };
        if read.is_empty() {
            head
        } else {
            format!("{head} ({})", read.join(", "))
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

/// Read the documents: the files when the config file exists, else, when
/// [`Paths::embedded_allowed`], the embedded default (with the mounted mesh config, if any);
/// a config path given that does not exist is an error naming it. A file holding a whole
/// ConfigMap (`kubectl get cm -o yaml`) is read through its key, and a file holding another
/// input is refused, as every command reads them
/// ([`crate::config_source::webhook_documents`]).
pub fn read(paths: &Paths) -> Result<Texts> {
    let mesh_raw = read_optional(&paths.mesh)?;
    let mesh_present = mesh_raw.is_some();
    let mesh_name = paths.mesh.display().to_string();
    let mesh_input = mesh_raw.as_deref().map(|text| Input::Text {
        name: &mesh_name,
        text,
    });
    match read_optional(&paths.config)? {
        Some(config) => {
            let values = read_optional(&paths.values)?;
            let (config_name, values_name) = (
                paths.config.display().to_string(),
                paths.values.display().to_string(),
            );
            let docs = webhook_documents(
                Input::Text {
                    name: &config_name,
                    text: &config,
                },
                values.as_deref().map(|text| Input::Text {
                    name: &values_name,
                    text,
                }),
                mesh_input,
            )?;
            Ok(Texts {
                config: docs.config,
                values_present: docs.values.is_some(),
                values: docs.values.unwrap_or_default(),
                mesh: docs.mesh,
                mesh_present,
                embedded: false,
                values_from_config: docs.values_from_config,
                notes: docs.notes,
            })
        }
        None if !paths.embedded_allowed => Err(anyhow!(
            "injector config {} does not exist (--injectConfigFile): the embedded default is served \
             only when no configuration flag is given and {DEFAULT_CONFIG} is absent",
            paths.config.display()
        )),
        None => {
            let (mesh, notes) = match mesh_input {
                Some(input) => {
                    let (text, note) = webhook_document(input, InputKind::MeshConfig)?;
                    (Some(text), note.into_iter().collect())
                }
                None => (Some(defaults::MESH.to_string()), Vec::new()),
            };
            Ok(Texts {
                config: defaults::CONFIG.to_string(),
                values: defaults::VALUES.to_string(),
                values_present: true,
                mesh,
                mesh_present,
                embedded: true,
                values_from_config: false,
                notes,
            })
        }
    }
}

/// Parse the documents into a snapshot. A panic inside the library is reported as an error.
/// Errors name the file as `inject` and `check` do: `loading values PATH: ...` for the values,
/// `loading injector config PATH: ...` for the rest.
pub fn build(texts: &Texts, paths: &Paths) -> Result<Snapshot> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if texts.values_present && !texts.embedded {
            let source = if texts.values_from_config {
                &paths.config
            } else {
                &paths.values
            };
            outrigger_inject::config::parse_values(&texts.values)
                .with_context(|| format!("loading values {}", source.display()))?;
        }
        let what = if texts.embedded {
            "loading the embedded default configuration".to_string()
        } else {
            format!("loading injector config {}", paths.config.display())
        };
        Snapshot::load(&texts.config, &texts.values, texts.mesh.as_deref())
            .map(|s| s.with_template_env(crate::template_env::current()))
            .context(what)
    }));
    match result {
        Ok(r) => r,
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
    fn falls_back_to_the_embedded_default_only_when_allowed() {
        let dir = std::env::temp_dir().join(format!("outrigger-snap-{}", std::process::id()));
        let given = Paths::new(dir.join("config"), dir.join("values"), dir.join("mesh"));
        assert!(!given.embedded_allowed);
        let e = read(&given).expect_err("a given path that does not exist");
        assert_eq!(
            e.to_string(),
            format!(
                "injector config {} does not exist (--injectConfigFile): the embedded default is \
                 served only when no configuration flag is given and {DEFAULT_CONFIG} is absent",
                dir.join("config").display()
            )
        );
        assert!(
            Paths::new(
                DEFAULT_CONFIG.into(),
                DEFAULT_VALUES.into(),
                DEFAULT_MESH.into()
            )
            .embedded_allowed
        );
        let paths = Paths {
            embedded_allowed: true,
            ..given
        };
        let t = read(&paths).unwrap();
        assert!(t.embedded);
        assert_eq!(t.config, defaults::CONFIG);
        assert_eq!(t.describe(&paths), "embedded default configuration");
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
        // Only the files that exist are named as sources.
        assert_eq!(t.describe(&paths), paths.config.display().to_string());
        std::fs::write(dir.join("values"), "").unwrap();
        let t = read(&paths).unwrap();
        assert_eq!(t.documents()[1], ("values", Some("")));
        assert_eq!(
            t.describe(&paths),
            format!(
                "{} (values {})",
                paths.config.display(),
                paths.values.display()
            )
        );
        std::fs::remove_file(dir.join("config")).unwrap();
        std::fs::write(dir.join("mesh"), "trustDomain: x\n").unwrap();
        let t = read(&paths).unwrap();
        assert_eq!(
            t.describe(&paths),
            format!(
                "embedded default configuration (mesh {})",
                paths.mesh.display()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
