//! The Go oracle (`tests/go-oracle`) for the differential fuzz targets: one process per fuzzing
//! process, one JSON request per line in, one JSON answer per line out. The binary is
//! `$OUTRIGGER_GO_ORACLE`, else `target/go-oracle/go-oracle` of the repository (build it with
//! `tests/go-oracle/build.sh`).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

struct Oracle {
    _child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

fn oracle() -> &'static Mutex<Oracle> {
    static ORACLE: OnceLock<Mutex<Oracle>> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let bin = std::env::var_os("OUTRIGGER_GO_ORACLE").map_or_else(
            || {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target/go-oracle/go-oracle")
            },
            std::path::PathBuf::from,
        );
        let mut child = Command::new(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the Go oracle {}: {e}", bin.display()));
        let stdin = BufWriter::new(child.stdin.take().expect("oracle stdin"));
        let stdout = BufReader::new(child.stdout.take().expect("oracle stdout"));
        Mutex::new(Oracle {
            _child: child,
            stdin,
            stdout,
        })
    })
}

/// Ask the oracle one question; its answer object (`ok` or `err`, and what the mode adds).
pub fn ask(request: &Value) -> Value {
    let mut o = oracle().lock().unwrap_or_else(|e| e.into_inner());
    let req = request.to_string();
    o.stdin.write_all(req.as_bytes()).expect("write to oracle");
    o.stdin.write_all(b"\n").expect("write to oracle");
    o.stdin.flush().expect("flush to oracle");
    let mut line = String::new();
    o.stdout.read_line(&mut line).expect("read from oracle");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("oracle answer {line:?}: {e}"))
}

/// Go's JSON text with its `\ufffd` escapes written as the character: Go's encoder writes that
/// escape for each byte of a string that is not UTF-8 (only `!!binary` scalars make such
/// strings); a Rust string holds the character.
#[allow(dead_code)] // used by yaml_go, not by every target that includes this module
pub fn replacement_chars(json: &str) -> String {
    json.replace("\\ufffd", "\u{FFFD}")
}
