//! # outrigger-go
//!
//! The Go-compatible engines of outrigger, an Istio-compatible sidecar injector: what Go's own
//! libraries would print, parse or refuse, reproduced exactly, with no knowledge of injection.
//! The injector (`outrigger-inject`) depends on this crate, never the reverse (Cargo keeps it
//! so: this crate cannot name the injector).
//!
//! The modules, foundations first (each uses only the ones before it; `tests/layering.rs` of
//! `outrigger-inject` checks the order):
//! - [`go`] and [`work`]: Go's formatting and parsing rules (`strconv`, quoting, `encoding/json`
//!   output, `fmt`'s `%v`, `time`, `net`, zones) and the work budget a review's steps check so
//!   that it ends at its deadline; [`cache_memory`]: the one bound on what the per-thread caches
//!   of all threads keep between calls.
//! - [`json`]: cheap lookups in small JSON objects.
//! - [`kube`]: the Go type facts of Kubernetes' API types and Istio's protobuf messages
//!   ([`kube::schema`], embedded tables: field order, JSON names, `omitempty`, enums), their
//!   per-struct indexes, the typed round-trip ([`kube::typed`]: normalisation as Go's decoder and
//!   encoder would) and resource quantities.
//! - [`yaml`]: YAML as Kubernetes' Go tooling reads and writes it (sigs.k8s.io/yaml over go-yaml
//!   v2).
//! - [`template`]: Go's `text/template` with Sprig v3 and Istio's template functions. What only
//!   the injector knows (the protobuf JSON of mesh configuration messages for `protoToJSON`)
//!   comes in with the data ([`template::TemplateData::proto_json`]).
//!
//! State that outlives a call: the embedded schema tables, the template function table and a
//! few compiled regular expressions (built once on first use, read-only afterwards); a
//! per-thread memo of canonical quantity strings in [`kube::typed`] (a bounded cache of a pure
//! function: results are the same with or without it); the per-thread work budget of [`work`];
//! the YAML reader's per-thread memo of the last document it read and the template executor's
//! reuse states between renders (exact: results are the same with or without them), the former
//! charged to [`cache_memory::CACHES`]; and, with the `test-support` feature only, a per-thread log of the texts [`yaml::from_str`]
//! reads. [`go::zone`] reads `TZ` and `ZONEINFO` as Go's `time` package does.
//!
//! ## Features
//!
//! - `test-support` (off by default): hooks for tests and fuzzing that are not part of the
//!   production API: `yaml::fast_from_str` and `yaml::slow_from_str` (the YAML loader's
//!   two paths separately), `yaml::fast_from_str_cold` and `yaml::fast_memo_counts` (the fast
//!   path without its per-thread memo, and the memo's counts) and `yaml::traced` (the texts the loader read on this thread;
//!   without the feature nothing is recorded).

#![forbid(unsafe_code)]

pub mod cache_memory;
pub mod go;
pub mod json;
pub mod kube;
pub mod template;
pub mod work;
pub mod yaml;
