//! The value parsers of the flags: each turns a flag's text into the plain value its command
//! reads, so a bad value is refused by clap (naming the flag, exit status 2) before any command
//! runs.

use std::time::Duration;

use outrigger_inject::decide::native::NativeMode;

/// A revision (or selector) name: a DNS-1123 label, as Istio requires of revisions
/// (`outrigger_inject::decide::selection::is_revision_name`).
pub fn revision_name(s: &str) -> Result<String, String> {
    if outrigger_inject::decide::selection::is_revision_name(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a revision name (a DNS-1123 label: lower-case letters, digits and '-', \
             starting and ending with a letter or digit, at most 63 characters)"
        ))
    }
}

/// A duration flag, with Go's `time.ParseDuration` grammar as istiod's flags are parsed
/// (`300ms`, `1.5s`, `2m`, `1h30m`, a bare `0`; units ns, us, ms, s, m, h). Negative durations
/// are refused. clap names the flag in the error.
pub fn duration(s: &str) -> Result<Duration, String> {
    let d = outrigger_go::go::duration::parse_go_duration(s).map_err(|e| e.to_string())?;
    u64::try_from(d.nanos)
        .map(Duration::from_nanos)
        .map_err(|_| format!("negative duration {s:?}: a time span must be positive or 0"))
}

/// The `--native-sidecars` flag: Istio's `ENABLE_NATIVE_SIDECARS` values, read by the library's
/// parser into its [`NativeMode`].
pub fn native_mode() -> impl clap::builder::TypedValueParser<Value = NativeMode> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new([
        PossibleValue::new("true")
            .help("Always native sidecars (init containers with `restartPolicy: Always`)"),
        PossibleValue::new("false").help("Never native sidecars"),
        PossibleValue::new("auto")
            .help("Decide from the cluster; offline this follows `ENABLE_NATIVE_SIDECARS`"),
    ])
    .map(|value: String| NativeMode::parse(&value).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_go() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("500ms", ms(500)),
            ("300ms", ms(300)),
            ("8s", ms(8_000)),
            ("1.5s", ms(1_500)),
            ("0.5s", ms(500)),
            ("2m", ms(120_000)),
            ("2h", ms(7_200_000)),
            ("1h30m", ms(5_400_000)),
            ("1m0.25s", ms(60_250)),
            ("0", Duration::ZERO),
            ("+5s", ms(5_000)),
            ("250us", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
        ] {
            assert_eq!(duration(text), Ok(want), "{text}");
        }
        assert_eq!(
            duration("3"),
            Err("time: missing unit in duration \"3\"".to_string()),
            "as Go, a bare number other than 0 has no unit"
        );
        assert_eq!(
            duration("5d"),
            Err("time: unknown unit \"d\" in duration \"5d\"".to_string())
        );
        assert_eq!(
            duration("x"),
            Err("time: invalid duration \"x\"".to_string())
        );
        assert!(duration("").is_err());
        assert!(duration("-1s").unwrap_err().contains("negative duration"));
    }
}
