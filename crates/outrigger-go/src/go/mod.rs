//! Go's formatting and parsing rules where Istio's output depends on them: `strconv` float and
//! quote formatting, `strconv` number parsing, `encoding/json` output, `fmt`'s `%v`, `time.Duration` and RFC 3339 times,
//! the multierror text, and `fmt.Sscanf` of number pairs. Every other module formats Go-shaped text through these.
//! `stack` stands in for Go's growable stacks in the recursive readers.

pub mod duration;
pub mod float;
pub mod fmt;
pub mod json;
pub mod layout;
pub mod multierror;
pub mod net;
pub mod netip;
pub mod quote;
pub mod scan;
pub mod stack;
pub mod strconv;
pub mod time;
pub mod timeval;
pub mod zone;
