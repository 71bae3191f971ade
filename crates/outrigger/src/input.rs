//! The `-f` input of `inject` and `check`: a file, or standard input for `-`, read as a stream
//! of YAML documents by the library's [`outrigger_go::yaml::DocumentReader`], so both
//! commands see exactly the same documents.

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, Result};

/// Open the input for streaming: the file, or standard input for `-`.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>> {
    if path.as_os_str() == "-" {
        Ok(Box::new(std::io::stdin().lock()))
    } else {
        let file =
            std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
    }
}

/// How messages name the input: its path, or `standard input` for `-`.
pub fn name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}
