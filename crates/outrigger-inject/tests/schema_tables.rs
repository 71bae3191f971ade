//! The embedded schema tables (`data/*.json`) are what `tools/gen_schema_tables.py` makes of the
//! shared Go/protobuf type facts: regenerate them into a scratch directory and compare bytes, so a
//! hand edit of the tables, or a generator change not followed by a regeneration, fails here.
//!
//! The type facts live beside the checkout (`../shared/schema`); where they are absent the check
//! shows as one ignored test, and with `OUTRIGGER_REQUIRE_CORPUS=1` (CI) it fails instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};

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
        let committed = workspace().join("crates/outrigger-inject/data").join(table);
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
    let name = "schema_tables_match_a_regeneration";
    let trial = if schema.join("k8s-go-types.json").is_file() {
        Trial::test(name, move || regenerate(&schema))
    } else if std::env::var("OUTRIGGER_REQUIRE_CORPUS").is_ok_and(|v| v == "1") {
        Trial::test(name, || {
            Err("../shared/schema is required (OUTRIGGER_REQUIRE_CORPUS=1) but absent".into())
        })
    } else {
        eprintln!("NOTICE: ../shared/schema not found; schema-table regeneration not checked");
        Trial::test(name, || Ok(())).with_ignored_flag(true)
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}
