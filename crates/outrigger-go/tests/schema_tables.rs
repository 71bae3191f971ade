//! The embedded schema tables (`data/*.json`) are what `tools/gen_schema_tables.py` makes of the
//! shared Go/protobuf type facts: regenerate them into a scratch directory and compare bytes, so a
//! hand edit of the tables, or a generator change not followed by a regeneration, fails here.
//!
//! The type facts live beside the checkout (`../shared/schema`); where they are absent the check
//! shows as one ignored test, and under CI (or `OUTRIGGER_REQUIRE_CORPUS=1`) it fails instead
//! (`tests/harness/absent.rs`'s rule).

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed};

#[path = "harness/absent.rs"]
mod absent;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn regenerate(schema: &Path) -> Result<(), Failed> {
    let out = std::env::temp_dir().join(format!("outrigger-schema-tables-{}", std::process::id()));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let run = Command::new("python3")
        .arg(workspace().join("tools/gen_schema_tables.py"))
        .arg(schema)
        .arg("--out")
        .arg(&out)
        .output()
        .map_err(|e| format!("running python3 tools/gen_schema_tables.py: {e}"))?;
    if !run.status.success() {
        return Err(format!(
            "tools/gen_schema_tables.py failed: {}",
            String::from_utf8_lossy(&run.stderr)
        )
        .into());
    }
    let mut stale = Vec::new();
    for table in ["k8s-types.json", "proto-types.json"] {
        let committed = workspace().join("crates/outrigger-go/data").join(table);
        let committed = std::fs::read(&committed).map_err(|e| format!("{table}: {e}"))?;
        let fresh = std::fs::read(out.join(table)).map_err(|e| format!("{table}: {e}"))?;
        if committed != fresh {
            stale.push(table);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "committed tables differ from a regeneration: {} (run python3 tools/gen_schema_tables.py)",
            stale.join(", ")
        )
        .into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let schema = workspace().join("../shared/schema");
    let there = schema.join("k8s-go-types.json").is_file();
    let trial = absent::trial(
        "schema_tables_match_a_regeneration",
        move || {
            (!there).then(|| absent::Missing {
                why: "../shared/schema not found beside the checkout".into(),
                var: "OUTRIGGER_REQUIRE_CORPUS",
            })
        },
        move || {
            if let Err(e) = regenerate(&schema) {
                panic!("{}", e.message().unwrap_or("regeneration failed"));
            }
        },
    );
    libtest_mimic::run(&args, vec![trial]).exit();
}
