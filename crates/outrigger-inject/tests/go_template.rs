//! Differential test of the template engine against Go: every template of the table below and
//! thousands of generated template/data pairs are executed by outrigger (`Template::render_json`)
//! and by the Go oracle (`text/template` + Sprig + Istio's overrides, `tests/go-oracle`) over the
//! same JSON data, which Go sees as `map[string]interface{}` / `[]interface{}` / `float64` /
//! `string` / `bool` / nil.
//!
//! Agreement: the same output text, or the same error (phase and Go's exact message). The oracle
//! runs Istio's Go (1.26) and Sprig at Istio's pins (Sprig v3.3.0, semver v3.5, mergo v1.0.2,
//! xstrings v1.5.0's `ToPascalCase`; `tests/go-oracle/build.sh`). Two classes are not
//! disagreements but are counted and shown:
//!
//! * **not implemented**: the Sprig functions of [`NOT_IMPLEMENTED`] (the list of
//!   `docs/go-exactness.md`), which fail at execution with `not implemented by outrigger`; any other
//!   function failing so is a disagreement.
//! * **known differences** ([`KNOWN_DIFFERENCES`], each with its reason, also listed in
//!   `docs/go-exactness.md`): the same failure worded differently where outrigger's error comes
//!   from a Rust library (JSON syntax).
//!
//! Any other difference fails the test with the template, the data and both answers.
//! `OUTRIGGER_DIFF_ITERATIONS` sets the number of generated inputs (default 4,000, fixed seed);
//! `OUTRIGGER_DIFF_SEED` changes the seed; `OUTRIGGER_DIFF_DUMP=FILE` writes each batch of
//! generated inputs (JSON lines) before asking Go.

#[path = "../../outrigger-go/tests/go_oracle/mod.rs"]
mod go_oracle;
#[path = "../../outrigger-go/tests/harness/mod.rs"]
mod harness;

use std::collections::BTreeMap;

use go_oracle::{Answer, GoClock, Oracle, Rng};
use outrigger_go::template::{Clock, Template, TemplateData};
use serde_json::{json, Value};

/// What one engine did with one input.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Ok(String),
    Parse(String),
    Exec(String),
}

fn ours(src: &str, data: &Value) -> Outcome {
    match Template::parse("inject", src) {
        Err(e) => Outcome::Parse(e.to_string()),
        Ok(t) => match t.render_json(data) {
            Ok(s) => Outcome::Ok(s),
            Err(e) => Outcome::Exec(e.to_string()),
        },
    }
}

fn go(a: Answer) -> Outcome {
    match a {
        Ok(s) => Outcome::Ok(s),
        Err(e) => match (e.strip_prefix("parse: "), e.strip_prefix("exec: ")) {
            (Some(m), _) => Outcome::Parse(m.to_string()),
            (_, Some(m)) => Outcome::Exec(m.to_string()),
            _ => panic!("oracle answer without a phase: {e}"),
        },
    }
}

/// The Sprig functions outrigger does not implement (randomness, the network, cryptography,
/// URLs); `docs/go-exactness.md` lists the same names with the reasons.
const NOT_IMPLEMENTED: &[&str] = &[
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "shuffle",
    "randInt",
    "getHostByName",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
    "randBytes",
    "uuidv4",
    "urlParse",
    "urlJoin",
];

/// A known difference: its reason, and whether (ours, Go's) is an instance of it.
type Known = (&'static str, fn(&Outcome, &Outcome) -> bool);

/// Differences that are not disagreements, each with its reason (see `docs/go-exactness.md`).
const KNOWN_DIFFERENCES: &[Known] = &[
    (
        "JSON syntax errors of fromJson/mustFromJson name the character as Go does, then word \
         the rest as serde_json's reader does",
        |ours, go| {
            same_error_up_to(ours, go, "invalid character '") && message(go).contains("FromJson")
        },
    ),
    (
        "a byte taken from a string by index is held as an unsigned integer that messages name \
         uint32 (Go: uint8); the value and the rest of the text are the same",
        |ours, go| {
            message(ours).contains("type uint32")
                && message(ours).replace("type uint32", "type uint8") == message(go)
        },
    ),
];

/// The error text of an outcome (empty for an output).
fn message(o: &Outcome) -> &str {
    match o {
        Outcome::Parse(m) | Outcome::Exec(m) => m,
        Outcome::Ok(_) => "",
    }
}

/// Both fail in the same phase with texts equal up to the end of `marker` (found in both at the
/// same place).
fn same_error_up_to(ours: &Outcome, go: &Outcome, marker: &str) -> bool {
    let same_phase = matches!(
        (ours, go),
        (Outcome::Parse(_), Outcome::Parse(_)) | (Outcome::Exec(_), Outcome::Exec(_))
    );
    let (o, g) = (message(ours), message(go));
    match (o.find(marker), g.find(marker)) {
        (Some(i), Some(j)) => same_phase && i == j && o[..i] == g[..j],
        _ => false,
    }
}

/// The function a `not implemented by outrigger` error names (`error calling X: ...`).
fn not_implemented_name(m: &str) -> Option<&str> {
    let head = m.strip_suffix(": not implemented by outrigger")?;
    head.rsplit("error calling ").next()
}

#[derive(Default)]
struct Tally {
    /// Data shown by name in reports.
    table_data: Value,
    compared: usize,
    same_output: usize,
    same_error_message: usize,
    not_implemented: usize,
    known: usize,
    known_shown: Vec<String>,
    disagreements: Vec<String>,
    /// Go's error messages by their last part (shown with `OUTRIGGER_DIFF_VERBOSE`).
    go_errors: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, src: &str, data: &Value, ours: Outcome, go: Outcome) {
        self.compared += 1;
        if let Outcome::Parse(m) | Outcome::Exec(m) = &go {
            let tail = m.rsplit(">: ").next().unwrap_or(m);
            let key: String = tail
                .split(['"', '(', '['])
                .next()
                .unwrap_or("")
                .chars()
                .take(60)
                .collect();
            *self.go_errors.entry(key).or_default() += 1;
        }
        let show = || {
            let d = if *data == self.table_data {
                "(the table's data)".to_string()
            } else {
                data.to_string()
            };
            format!("template {src:?}\n  data {d}\n  ours {ours:?}\n  go   {go:?}")
        };
        match (&ours, &go) {
            (Outcome::Exec(m), _)
                if not_implemented_name(m).is_some_and(|n| NOT_IMPLEMENTED.contains(&n)) =>
            {
                self.not_implemented += 1
            }
            (a, b) if a == b => match a {
                Outcome::Ok(_) => self.same_output += 1,
                _ => self.same_error_message += 1,
            },
            (a, b) if KNOWN_DIFFERENCES.iter().any(|(_, is)| is(a, b)) => {
                self.known += 1;
                self.known_shown.push(show());
            }
            _ => self.disagreements.push(show()),
        }
    }

    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {} inputs; agree {} (same output {}, same error {}); not implemented by \
             outrigger {}; known differences {}; disagreements {}",
            self.compared,
            self.same_output + self.same_error_message,
            self.same_output,
            self.same_error_message,
            self.not_implemented,
            self.known,
            self.disagreements.len()
        );
        let verbose = std::env::var_os("OUTRIGGER_DIFF_VERBOSE").is_some();
        if verbose {
            let mut e: Vec<_> = self.go_errors.iter().collect();
            e.sort_by(|a, b| b.1.cmp(a.1));
            for (k, n) in e.iter().take(25) {
                eprintln!("  go error {n:5} {k}");
            }
        }
        for m in self
            .known_shown
            .iter()
            .take(if verbose { usize::MAX } else { 3 })
        {
            eprintln!("known difference: {m}");
        }
    }

    fn check(&self, what: &str) {
        self.report(what);
        go_oracle::assert_no_disagreements(what, &self.disagreements, 40);
    }
}

fn compare(o: &mut Oracle, cases: &[(String, Value)], tally: &mut Tally) {
    for chunk in cases.chunks(2000) {
        let reqs: Vec<(&str, &Value)> = chunk.iter().map(|(t, d)| (t.as_str(), d)).collect();
        let answers = o.render_phase_many("inject", &reqs);
        for ((t, d), a) in chunk.iter().zip(answers) {
            tally.add(t, d, ours(t, d), go(a));
        }
    }
}

/// The data most table rows run over.
fn data() -> Value {
    json!({
        "s": "hello", "e": "", "sp": "  padded\t", "u": "héllo wörld ✓", "ml": "a\nb\n\nc\n",
        "html": "<a href='x'>\"&\"</a>", "num_s": "42", "yes": "yes", "path": "/a/b/c.pem",
        "csv": "a, b,,c", "camel": "HelloWorld fooBar_baz-qux", "ws": " a  b\tc\n",
        "i": 42, "z": 0, "neg": -7, "f": 1.5, "big": 1000000, "huge": 1e21, "small": 0.00001,
        "i53": 9007199254740993u64, "fneg": -0.5, "pi": 3.25781, "ten": 10,
        "t": true, "no": false, "null": null,
        "list": ["b", "a", "c"], "nums": [3, 1, 2], "mixed": [1, "a", true, null, 2.5, [1], {"k": "v"}],
        "empty_list": [], "empty_map": {},
        "m": {"a": 1, "b": "two", "c": [1, 2], "d": {"e": "f"}, "n": null},
        "sm": {"k1": "v1", "k2": "v2"},
        "nested": {"x": {"y": {"z": "deep"}}},
        "port": 15020, "ports": "8080, 9090",
        "json": "{\"a\": [1, 2.5, \"x\"], \"b\": null}", "bad_json": "{",
        "b64": "aGVsbG8=", "re": "a+b*", "ver": "1.2.3",
    })
}

/// Table of templates over [`data`]: every builtin, every language construct, every Sprig and
/// Istio function outrigger implements (and a few it does not). Inputs only: the expected
/// answers come from the oracle.
const TEMPLATES: &[&str] = &[
    // Text, actions, comments, trimming.
    "",
    "plain text",
    "{{.s}}",
    "{{ .s }} {{ .i }} {{ .f }} {{ .t }} {{ .null }} {{ .missing }}",
    "a  {{- .s -}}  b",
    "a\n\n{{- .s}}\n\n{{- .s -}}\n\nb",
    "{{/* comment */}}x",
    "a {{- /* comment */ -}} b",
    "a {{- /* comment */}} b",
    "a {{/* comment */ -}} b",
    "{{- /* multi\nline */ -}}\n x",
    "{{ /* comment with space */ }}",
    "{{-3}}",
    "{{- 3}}",
    "{{ 3 -}} 4",
    "{{.}}",
    "{{ . }}",
    "{{ $ }}",
    "{{ $.s }}",
    "{{ .m }}",
    "{{ .m.a }} {{ .m.b }} {{ .m.c }} {{ .m.d }} {{ .m.d.e }} {{ .m.n }} {{ .m.missing }}",
    "{{ .m.n.x }}",
    "{{ .missing.x.y }}",
    "{{ .s.x }}",
    "{{ .i.x }}",
    "{{ .list.x }}",
    "{{ .nested.x.y.z }}",
    "{{ .list }} {{ .nums }} {{ .mixed }} {{ .empty_list }} {{ .empty_map }}",
    // Numbers: literals and float formatting.
    "{{ 1 }} {{ -1 }} {{ 1.5 }} {{ 1e3 }} {{ 1e6 }} {{ 1e21 }} {{ 0x10 }} {{ 0o17 }} {{ 017 }} {{ 0b101 }}",
    "{{ 1_000 }} {{ 0x1p4 }} {{ 'a' }} {{ '\\n' }} {{ 1.0 }} {{ -0.0 }} {{ .5 }}",
    "{{ 1i }}",
    "{{ 9223372036854775807 }} {{ 9223372036854775808 }} {{ 18446744073709551615 }} {{ 18446744073709551616 }}",
    "{{ -9223372036854775808 }} {{ 1e400 }}",
    "{{ .i }} {{ .z }} {{ .neg }} {{ .f }} {{ .big }} {{ .huge }} {{ .small }} {{ .i53 }} {{ .fneg }} {{ .pi }}",
    "{{ print .big .huge .small 100000 123456 1234567 0.0001 0.00001 }}",
    "{{ printf \"%v %d %s\" .i .i .i }}",
    // Strings.
    "{{ \"a\\tb\\n\\\"q\\\"\\u00e9\\x41\\101\" }}",
    "{{ `raw\\n string` }}",
    "{{ \"unterminated }}",
    "{{ 'ab' }}",
    // Variables.
    "{{ $x := 1 }}{{ $x }}",
    "{{ $x := .s }}{{ $x = .i }}{{ $x }}",
    "{{ $x = 1 }}",
    "{{ $undefined }}",
    "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}",
    "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}",
    "{{ $x := 0 }}{{ range .nums }}{{ $x = . }}{{ end }}{{ $x }}",
    "{{ $x, $y := 1, 2 }}",
    "{{ with $x := .m }}{{ $x.a }}{{ end }}",
    "{{ $x := .m }}{{ $x.d.e }} {{ $x.missing }}",
    "{{ $ := 1 }}",
    // if / else if / else.
    "{{ if .t }}yes{{ end }}",
    "{{ if .no }}yes{{ else }}no{{ end }}",
    "{{ if .no }}a{{ else if .z }}b{{ else if .s }}c{{ else }}d{{ end }}",
    "{{ if .missing }}a{{ else }}b{{ end }}",
    "{{ if .null }}a{{ else }}b{{ end }}",
    "{{ if .empty_list }}a{{ else }}b{{ end }}{{ if .empty_map }}a{{ else }}b{{ end }}{{ if .e }}a{{ else }}b{{ end }}",
    "{{ if .z }}a{{ else }}b{{ end }}{{ if 0.0 }}a{{ else }}b{{ end }}",
    "{{ if }}x{{ end }}",
    "{{ if .t }}x",
    "{{ end }}",
    "{{ else }}",
    "{{ if .t }}a{{ else }}b{{ else }}c{{ end }}",
    // with.
    "{{ with .m }}{{ .a }}{{ end }}",
    "{{ with .missing }}a{{ else }}b{{ end }}",
    "{{ with .s }}{{ . }}{{ else }}none{{ end }}",
    "{{ with .z }}a{{ else with .s }}{{ . }}{{ end }}",
    "{{ with $x := .list }}{{ len $x }}{{ end }}",
    // range.
    "{{ range .list }}[{{ . }}]{{ end }}",
    "{{ range $i, $v := .list }}{{ $i }}={{ $v }};{{ end }}",
    "{{ range $v := .nums }}{{ $v }}{{ end }}",
    "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}",
    "{{ range .empty_list }}x{{ else }}empty{{ end }}",
    "{{ range .missing }}x{{ else }}none{{ end }}",
    "{{ range .null }}x{{ else }}none{{ end }}",
    "{{ range .s }}x{{ end }}",
    "{{ range .i }}x{{ end }}",
    "{{ range .t }}x{{ end }}",
    "{{ range 3 }}{{ . }}{{ end }}",
    "{{ range $i := 3 }}{{ $i }}{{ end }}",
    "{{ range .list }}{{ if eq . \"a\" }}{{ break }}{{ end }}{{ . }}{{ end }}",
    "{{ range .list }}{{ if eq . \"a\" }}{{ continue }}{{ end }}{{ . }}{{ end }}",
    "{{ break }}",
    "{{ range .list }}{{ $ }}{{ end }}",
    "{{ range .mixed }}{{ . }},{{ end }}",
    "{{ range $k, $v := .sm }}{{ $k }}{{ $v }}{{ end }}",
    "{{ range .m.c }}{{ . }}{{ end }}",
    "{{ range $i, $e := .empty_map }}x{{ else }}y{{ end }}",
    // define / template / block.
    "{{ define \"x\" }}X{{ . }}{{ end }}{{ template \"x\" .s }}",
    "{{ define \"x\" }}X{{ end }}{{ template \"x\" }}",
    "{{ template \"nope\" }}",
    "{{ block \"b\" .i }}B{{ . }}{{ end }}",
    "{{ define \"x\" }}{{ $ }}{{ end }}{{ template \"x\" .m }}",
    "{{ define \"x\" }}{{ .a }}{{ end }}{{ range .mixed }}{{ end }}{{ template \"x\" .m }}",
    "{{ define \"a\" }}a{{ template \"b\" }}{{ end }}{{ define \"b\" }}b{{ end }}{{ template \"a\" }}",
    "{{ define \"x\" }}{{ end }}",
    "text{{ define \"x\" }}x{{ end }}after",
    "{{ define \"x\" }}1{{ end }}{{ define \"x\" }}2{{ end }}{{ template \"x\" }}",
    "{{ if true }}{{ define \"x\" }}{{ end }}{{ end }}",
    "{{ template \"x\" 1 2 }}",
    // Pipelines.
    "{{ .s | printf \"%s!\" }}",
    "{{ .s | printf \"%s-%s\" \"a\" }}",
    "{{ \"x\" | len }}",
    "{{ .i | .s }}",
    "{{ 1 | 2 }}",
    "{{ (.m).a }}",
    "{{ (index .m \"d\").e }}",
    "{{ (1) }}",
    "{{ (.s) | len }}",
    "{{ .s | }}",
    "{{ | .s }}",
    "{{ ( .s }}",
    "{{ nil }}",
    "{{ .s nil }}",
    "{{ .s 1 }}",
    "{{ true }}{{ false }}",
    "{{ $x := \"a\" | printf \"%s%s\" \"b\" }}{{ $x }}",
    // Builtins.
    "{{ and 1 0 }} {{ and 1 2 }} {{ and \"\" (fail \"no\") }} {{ or 0 \"\" }} {{ or 0 \"x\" }} {{ or .missing .s }}",
    "{{ and }}",
    "{{ not 0 }} {{ not 1 }} {{ not .missing }} {{ not .s }}",
    "{{ not 1 2 }}",
    "{{ eq 1 1 }} {{ eq .i 42.0 }} {{ eq .s \"hello\" }} {{ eq .s \"a\" \"hello\" }} {{ eq .t true }}",
    "{{ eq .i 42 }}",
    "{{ eq .s 1 }}",
    "{{ eq .missing \"\" }} {{ eq .missing .missing }} {{ eq .null .missing }}",
    "{{ eq .list .list }}",
    "{{ eq .m .m }}",
    "{{ eq 1 }}",
    "{{ eq 1 1u }}",
    "{{ eq 18446744073709551615 -1 }} {{ eq 1 1.0 }}",
    "{{ ne 1 2 }} {{ ne .missing \"\" }} {{ ne .s \"hello\" }}",
    "{{ ne .i 1 }}",
    "{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1 2 }} {{ ge 2 1 }} {{ lt \"a\" \"b\" }} {{ lt .f .pi }}",
    "{{ lt .i 2 }}",
    "{{ lt true false }}",
    "{{ lt .missing 1 }}",
    "{{ lt -1 18446744073709551615 }} {{ gt 18446744073709551615 -1 }}",
    "{{ len .s }} {{ len .list }} {{ len .m }} {{ len .u }} {{ len .empty_map }}",
    "{{ len .i }}",
    "{{ len .missing }}",
    "{{ len .null }}",
    "{{ len nil }}",
    "{{ index .list 1 }} {{ index .m \"b\" }} {{ index .m \"missing\" }} {{ index .nested \"x\" \"y\" \"z\" }} {{ index .s 0 }}",
    "{{ index .list 5 }}",
    "{{ index .list -1 }}",
    "{{ index .list \"a\" }}",
    "{{ index .m 1 }}",
    "{{ index .missing 1 }}",
    "{{ index .null \"a\" }}",
    "{{ index .i 1 }}",
    "{{ index .list }}",
    "{{ index .list 1.0 }}",
    "{{ index .mixed 6 \"k\" }}",
    "{{ slice .list 1 }} {{ slice .list 1 2 }} {{ slice .s 1 3 }} {{ slice .list }}",
    "{{ slice .list 2 1 }}",
    "{{ slice .list 1 2 3 }}",
    "{{ slice .s 1 2 3 }}",
    "{{ slice .m 1 }}",
    "{{ print }} {{ print 1 2 }} {{ print \"a\" \"b\" }} {{ print 1 \"a\" 2 }} {{ print .null .missing }}",
    "{{ println 1 2 }}{{ println }}{{ println \"a\" \"b\" }}",
    "{{ print .m .list .mixed }}",
    "{{ printf \"%d %s %v %q %t %x %X %o %b %c %e %f %g %%\" 10 \"s\" .m \"q\" true 255 255 8 5 65 1.5 1.5 1.5 }}",
    "{{ printf \"%5d|%-5d|%05d|%+d|% d|%x|%#x|%#o\" 42 42 42 42 42 -255 255 8 }}",
    "{{ printf \"%.2f|%8.3f|%-8.2f|%e|%.3e|%g|%G|%.3g\" .pi .pi .pi .big .pi .huge .small .pi }}",
    "{{ printf \"%s|%10s|%-10s|%.2s|%q|%x|% x|%X\" .s .s .s .s .u .s .s .s }}",
    "{{ printf \"%v|%+v|%#v|%T\" .m .m .s .f }}",
    "{{ printf \"%T %T %T %T %T %T\" .s .i .t .list .m .null }}",
    "{{ printf \"%d\" .s }}{{ printf \"%s\" .i }}{{ printf \"%t\" 1 }}{{ printf \"%d\" .f }}",
    "{{ printf \"%d %d\" 1 }}{{ printf \"%d\" 1 2 }}{{ printf \"%!\" }}{{ printf \"%z\" 1 }}",
    "{{ printf \"%[2]d %[1]d\" 1 2 }}{{ printf \"%*d\" 5 1 }}",
    "{{ printf \"%v %v\" .null .missing }}",
    "{{ printf \"%s\" .list }}{{ printf \"%d\" .nums }}{{ printf \"%v\" .mixed }}",
    "{{ printf \"%6.2v|%v|%.0f|%.1f\" .pi .i53 2.5 0.05 }}",
    "{{ printf \"%c|%q|%U\" 0x1F600 0x1F600 0x1F600 }}",
    "{{ printf }}",
    "{{ printf 1 }}",
    "{{ html .html }} {{ html 1 \"<\" }} {{ html .null }}",
    "{{ js .html }} {{ js \"a\\u2028b\" }} {{ js \"\\u0001\\u007f=`\" }} {{ js .u }}",
    "{{ urlquery .html }} {{ urlquery \"a b/c?d=e&f\" .u }}",
    "{{ call .s }}",
    "{{ call }}",
    // Missing keys and nil through functions.
    "{{ .missing | printf \"%v\" }}",
    "{{ printf \"%v\" .missing }}",
    "{{ .null | printf \"%v\" }}",
    "{{ .missing | len }}",
    "{{ .missing | default \"d\" }} {{ .null | default \"d\" }} {{ .e | default \"d\" }} {{ .z | default 5 }} {{ .s | default \"d\" }}",
    "{{ .missing | quote }}|{{ .null | quote }}|{{ quote .s .i .t .f }}|{{ quote }}",
    "{{ .missing | upper }}",
    "{{ upper .i }}",
    "{{ upper nil }}",
    // Sprig strings.
    "{{ upper .u }} {{ lower \"ÀB\" }} {{ title \"hello wOrld a-b c_d é\" }} {{ untitle \"Hello World\" }}",
    "{{ trim .sp }}|{{ trimAll \"ab\" \"abxba\" }}|{{ trimall \"x\" \"xax\" }}|{{ trimPrefix \"he\" .s }}|{{ trimSuffix \"lo\" .s }}",
    "{{ trunc 2 .s }}|{{ trunc -2 .s }}|{{ trunc 0 .s }}|{{ trunc 99 .s }}|{{ trunc -99 .s }}|{{ trunc 2 .u }}",
    "{{ replace \"l\" \"L\" .s }}|{{ replace \"\" \"-\" \"abc\" }}",
    "{{ hasPrefix \"he\" .s }} {{ hasSuffix \"lo\" .s }} {{ contains \"ll\" .s }} {{ contains .s \"ll\" }}",
    "{{ squote .s .i nil }}|{{ cat .s .i .null \"x\" }}|{{ cat }}",
    "{{ indent 2 .ml }}|{{ indent 0 .s }}|{{ indent -2 .ml }}",
    "{{ nindent 2 .ml }}|{{ nindent 0 .s }}",
    "{{ repeat 3 \"ab\" }}|{{ repeat 0 \"x\" }}|{{ repeat -1 \"x\" }}",
    "{{ substr 1 3 .s }}|{{ substr 0 99 .s }}|{{ substr -1 2 .s }}|{{ substr 3 1 .s }}|{{ substr 2 -1 .s }}",
    "{{ nospace .ws }}|{{ initials \"hello big world\" }}|{{ swapcase \"Hello World\" }}",
    "{{ snakecase .camel }}|{{ kebabcase .camel }}|{{ camelcase \"hello_world_foo\" }}",
    "{{ snakecase \"HTTPServer\" }}|{{ snakecase \"ID1Name2\" }}|{{ kebabcase \"AB C\" }}|{{ camelcase \"a-b c\" }}",
    "{{ abbrev 5 \"hello world\" }}|{{ abbrev 3 \"hello\" }}|{{ abbrevboth 5 10 \"1234 5678 9123\" }}",
    "{{ wrap 5 \"hello world foo\" }}|{{ wrapWith 5 \"\\t\" \"hello world foo\" }}",
    "{{ plural \"one\" \"many\" 1 }} {{ plural \"one\" \"many\" 2 }}",
    "{{ split \",\" .csv }}|{{ splitList \",\" .csv }}|{{ splitn \",\" 2 .csv }}|{{ (split \",\" .csv)._1 }}",
    "{{ join \"-\" .list }}|{{ join \"-\" .mixed }}|{{ join \"-\" .s }}|{{ join \"-\" .nums }}|{{ join \",\" nil }}",
    "{{ sortAlpha .list }}|{{ sortAlpha .nums }}|{{ sortAlpha .s }}",
    "{{ toString .i }}|{{ toString .f }}|{{ toString .null }}|{{ toString .list }}|{{ toString .t }}",
    "{{ toStrings .nums }}|{{ toStrings .mixed }}",
    "{{ regexMatch .re \"aab\" }} {{ regexFind \"[0-9]+\" \"ab12cd34\" }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" -1 }} {{ regexFindAll \"[0-9]\" \"a1b2c3\" 2 }}",
    "{{ regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\" }}|{{ regexReplaceAllLiteral \"a(x*)b\" \"-ab-axxb-\" \"${1}\" }}",
    "{{ regexSplit \"z+\" \"pizza\" -1 }}|{{ regexSplit \"z+\" \"pizza\" 1 }}|{{ regexQuoteMeta \"a.b*c\" }}",
    "{{ regexMatch \"(\" \"x\" }}",
    "{{ mustRegexMatch \"(\" \"x\" }}",
    "{{ mustRegexFind \"[\" \"x\" }}",
    // Sprig conversions and numbers.
    "{{ atoi \"42\" }} {{ atoi \"x\" }} {{ atoi \" 4\" }} {{ int \"42\" }} {{ int .f }} {{ int .t }} {{ int \"0x1A\" }} {{ int \"010\" }} {{ int64 .i }} {{ float64 \"1.5\" }} {{ float64 .i }}",
    "{{ int \"1e3\" }} {{ int64 \"-5\" }} {{ float64 \"x\" }} {{ int nil }} {{ int .list }}",
    "{{ add 1 2 3 }} {{ add1 5 }} {{ sub 5 3 }} {{ mul 2 3 4 }} {{ div 7 2 }} {{ mod 7 3 }} {{ add .f 1 }} {{ add \"2\" 3 }}",
    "{{ div 1 0 }}",
    "{{ mod 1 0 }}",
    "{{ max 1 5 3 }} {{ min 4 2 8 }} {{ biggest 1 9 }} {{ maxf 1.5 2.5 }} {{ minf 1.5 -2.5 }} {{ max 1 }}",
    "{{ addf 1.5 2 }} {{ subf 5 1.5 }} {{ mulf 1.5 2 }} {{ divf 1 3 }} {{ add1f 1.5 }} {{ divf 1 0 }}",
    "{{ floor 1.5 }} {{ ceil 1.2 }} {{ round 1.456 2 }} {{ round 2.5 0 }} {{ round -2.5 0 }}",
    "{{ seq 3 }}|{{ seq 2 5 }}|{{ seq 5 2 }}|{{ seq 0 2 10 }}|{{ seq }}",
    "{{ until 3 }}|{{ untilStep 0 10 3 }}|{{ untilStep 10 0 -4 }}|{{ until 0 }}",
    "{{ toDecimal \"777\" }} {{ toDecimal 10 }} {{ toDecimal \"9\" }}",
    // Sprig lists.
    "{{ list 1 \"a\" .null }}|{{ tuple }}|{{ list }}",
    "{{ append .list \"d\" }}|{{ push .nums 4 }}|{{ prepend .list \"z\" }}",
    "{{ append .s \"d\" }}",
    "{{ first .list }} {{ last .list }} {{ rest .list }} {{ initial .list }} {{ reverse .list }}",
    "{{ first .empty_list }}|{{ last .empty_list }}|{{ rest .empty_list }}|{{ initial .empty_list }}",
    "{{ first .s }}",
    "{{ uniq (list 1 1 2 \"a\" \"a\") }}|{{ without .list \"a\" }}|{{ has \"a\" .list }}|{{ has 4 .nums }}",
    "{{ compact (list 0 1 \"\" \"a\" .null false) }}|{{ concat .list .nums }}",
    "{{ slice .list 1 2 }}|{{ mustSlice .nums 0 1 }}|{{ slice .empty_list }}",
    "{{ chunk 2 .mixed }}|{{ chunk 5 .list }}",
    "{{ chunk 0 .list }}",
    "{{ dig \"a\" \"b\" \"def\" (dict \"a\" (dict \"b\" 1)) }}|{{ dig \"x\" \"def\" .m }}|{{ dig \"d\" \"e\" \"def\" .m }}",
    // Sprig dicts.
    "{{ dict \"a\" 1 \"b\" \"x\" }}|{{ dict }}|{{ dict \"a\" }}|{{ dict 1 2 }}",
    "{{ get .m \"b\" }}|{{ get .m \"zz\" }}|{{ hasKey .m \"a\" }}|{{ hasKey .m \"zz\" }}",
    "{{ set (dict) \"a\" 1 }}|{{ unset (dict \"a\" 1 \"b\" 2) \"a\" }}",
    "{{ keys .m }}|{{ keys .m .sm }}|{{ values .sm }}|{{ pick .m \"a\" \"b\" }}|{{ omit .sm \"k1\" }}",
    "{{ pluck \"a\" .m (dict \"a\" 2) }}",
    "{{ merge (dict \"a\" 1 \"d\" (dict \"x\" 1)) .m }}|{{ mergeOverwrite (dict \"a\" 5 \"z\" 1) .m }}",
    "{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"b\" 2 }}{{ $d }}",
    "{{ get .list \"a\" }}",
    // Sprig defaults, flow, reflection, JSON.
    "{{ empty .e }} {{ empty .z }} {{ empty .list }} {{ empty .empty_map }} {{ empty .missing }} {{ empty .m }} {{ empty .no }}",
    "{{ coalesce .e .z .s }}|{{ coalesce .e .z }}|{{ all 1 \"a\" }}|{{ all 1 0 }}|{{ any 0 \"\" }}|{{ any 0 1 }}",
    "{{ ternary \"y\" \"n\" true }}|{{ ternary \"y\" \"n\" false }}|{{ .t | ternary 1 2 }}",
    "{{ ternary 1 2 .s }}",
    "{{ fail \"boom\" }}",
    "{{ toJson .m }}|{{ toJson .html }}|{{ toJson .mixed }}|{{ toJson .null }}|{{ toJson .huge }}|{{ toJson .small }}",
    "{{ toPrettyJson .m }}|{{ toPrettyJson .empty_map }}|{{ toPrettyJson .empty_list }}",
    "{{ toRawJson .html }}|{{ mustToRawJson .m }}|{{ mustToJson .list }}",
    "{{ fromJson .json }}|{{ fromJson .bad_json }}|{{ (fromJson .json).a }}",
    "{{ mustFromJson .bad_json }}",
    "{{ deepCopy .m }}|{{ deepEqual .m .m }}|{{ deepEqual .list .nums }}",
    "{{ typeOf .s }} {{ typeOf .i }} {{ typeOf .m }} {{ typeOf .list }} {{ typeOf .null }} {{ typeOf .t }} {{ typeOf 1 }}",
    "{{ kindOf .s }} {{ kindOf .i }} {{ kindOf .m }} {{ kindOf .list }} {{ kindOf .null }} {{ kindOf 1 }}",
    "{{ typeIs \"string\" .s }} {{ typeIsLike \"string\" .s }} {{ kindIs \"map\" .m }} {{ kindIs \"int\" .i }}",
    // Sprig paths and encodings.
    "{{ base .path }}|{{ dir .path }}|{{ ext .path }}|{{ clean \"/a/../b/./c//\" }}|{{ isAbs .path }}",
    "{{ osBase .path }}|{{ osDir .path }}|{{ osExt .path }}|{{ osClean \"a//b\" }}|{{ osIsAbs \"x\" }}",
    "{{ b64enc .s }}|{{ b64dec .b64 }}|{{ b32enc .s }}|{{ b32dec \"NBSWY3DP\" }}|{{ b64dec \"!!\" }}",
    "{{ sha1sum .s }}|{{ sha256sum .s }}|{{ adler32sum .s }}",
    "{{ sha512sum .s }}",
    "{{ urlParse \"http://u:p@h:1/p?q=1#f\" }}|{{ urlJoin (dict \"host\" \"h\" \"scheme\" \"https\") }}",
    "{{ semver .ver }}",
    "{{ semverCompare \">1.0\" .ver }}",
    // Maps changed in place are seen later in the same render (Go's maps are shared).
    "{{ $_ := set .m \"k\" 1 }}{{ .m.k }}|{{ $.m.k }}",
    "{{ $_ := unset .m \"a\" }}{{ .m }}",
    "{{ $_ := merge .m (dict \"z\" 1 \"a\" 9) }}{{ .m.z }}{{ .m.a }}",
    "{{ $_ := mergeOverwrite .m (dict \"a\" 9) }}{{ .m.a }}",
    "{{ $d := .m.d }}{{ $_ := set .m.d \"e\" \"g\" }}{{ $d.e }}|{{ .m.d.e }}",
    "{{ range $k, $v := .m }}{{ $_ := set $.m \"zz\" 1 }}{{ end }}{{ .m.zz }}",
    // Semantic versions and constraints (Masterminds/semver v3 through Sprig).
    "{{ semver \"1.2.3\" }}",
    "{{ semver \"v1.2\" }}",
    "{{ semver \"1.2.3-beta.1\" }}",
    "{{ semver \"1.2.3+build.5\" }}",
    "{{ semver \"0.0.1\" }}",
    "{{ semver \"0.3.0\" }}",
    "{{ semver \"2.0.0-rc.1\" }}",
    "{{ semver \"1\" }}",
    "{{ semver \"01.2.3\" }}",
    "{{ semver \"1.2.3-01\" }}",
    "{{ semver \"1.2.3-a_b\" }}",
    "{{ semver \"1.2.3+a_b\" }}",
    "{{ semver \"99999999999999999999.0.0\" }}",
    "{{ semver \"\" }}",
    "{{ semver \"x\" }}",
    "{{ semver \"1.2.x\" }}",
    "{{ semver \"1.2.3-alpha.10\" }}",
    "{{ semver \"1.2.3-alpha.9\" }}",
    "{{ semver \"1.2.3-alpha\" }}",
    "{{ semverCompare \">1.0\" \"1.2.3\" }}",
    "{{ semverCompare \">1.0\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">1.0\" \"1.3.0\" }}",
    "{{ semverCompare \">1.0\" \"0.2.5\" }}",
    "{{ semverCompare \">1.0\" \"2.0.0\" }}",
    "{{ semverCompare \">1.0\" \"1.2.0\" }}",
    "{{ semverCompare \"<2\" \"1.2.3\" }}",
    "{{ semverCompare \"<2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"<2\" \"1.3.0\" }}",
    "{{ semverCompare \"<2\" \"0.2.5\" }}",
    "{{ semverCompare \"<2\" \"2.0.0\" }}",
    "{{ semverCompare \"<2\" \"1.2.0\" }}",
    "{{ semverCompare \"~1.2\" \"1.2.3\" }}",
    "{{ semverCompare \"~1.2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"~1.2\" \"1.3.0\" }}",
    "{{ semverCompare \"~1.2\" \"0.2.5\" }}",
    "{{ semverCompare \"~1.2\" \"2.0.0\" }}",
    "{{ semverCompare \"~1.2\" \"1.2.0\" }}",
    "{{ semverCompare \"~1.2.3\" \"1.2.3\" }}",
    "{{ semverCompare \"~1.2.3\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"~1.2.3\" \"1.3.0\" }}",
    "{{ semverCompare \"~1.2.3\" \"0.2.5\" }}",
    "{{ semverCompare \"~1.2.3\" \"2.0.0\" }}",
    "{{ semverCompare \"~1.2.3\" \"1.2.0\" }}",
    "{{ semverCompare \"^1.2\" \"1.2.3\" }}",
    "{{ semverCompare \"^1.2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"^1.2\" \"1.3.0\" }}",
    "{{ semverCompare \"^1.2\" \"0.2.5\" }}",
    "{{ semverCompare \"^1.2\" \"2.0.0\" }}",
    "{{ semverCompare \"^1.2\" \"1.2.0\" }}",
    "{{ semverCompare \"^0.2.3\" \"1.2.3\" }}",
    "{{ semverCompare \"^0.2.3\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"^0.2.3\" \"1.3.0\" }}",
    "{{ semverCompare \"^0.2.3\" \"0.2.5\" }}",
    "{{ semverCompare \"^0.2.3\" \"2.0.0\" }}",
    "{{ semverCompare \"^0.2.3\" \"1.2.0\" }}",
    "{{ semverCompare \"^0.0.3\" \"1.2.3\" }}",
    "{{ semverCompare \"^0.0.3\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"^0.0.3\" \"1.3.0\" }}",
    "{{ semverCompare \"^0.0.3\" \"0.2.5\" }}",
    "{{ semverCompare \"^0.0.3\" \"2.0.0\" }}",
    "{{ semverCompare \"^0.0.3\" \"1.2.0\" }}",
    "{{ semverCompare \"1.2.x\" \"1.2.3\" }}",
    "{{ semverCompare \"1.2.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"1.2.x\" \"1.3.0\" }}",
    "{{ semverCompare \"1.2.x\" \"0.2.5\" }}",
    "{{ semverCompare \"1.2.x\" \"2.0.0\" }}",
    "{{ semverCompare \"1.2.x\" \"1.2.0\" }}",
    "{{ semverCompare \"*\" \"1.2.3\" }}",
    "{{ semverCompare \"*\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"*\" \"1.3.0\" }}",
    "{{ semverCompare \"*\" \"0.2.5\" }}",
    "{{ semverCompare \"*\" \"2.0.0\" }}",
    "{{ semverCompare \"*\" \"1.2.0\" }}",
    "{{ semverCompare \">= 1.2, < 2.0\" \"1.2.3\" }}",
    "{{ semverCompare \">= 1.2, < 2.0\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">= 1.2, < 2.0\" \"1.3.0\" }}",
    "{{ semverCompare \">= 1.2, < 2.0\" \"0.2.5\" }}",
    "{{ semverCompare \">= 1.2, < 2.0\" \"2.0.0\" }}",
    "{{ semverCompare \">= 1.2, < 2.0\" \"1.2.0\" }}",
    "{{ semverCompare \">=1.2 <=1.3\" \"1.2.3\" }}",
    "{{ semverCompare \">=1.2 <=1.3\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">=1.2 <=1.3\" \"1.3.0\" }}",
    "{{ semverCompare \">=1.2 <=1.3\" \"0.2.5\" }}",
    "{{ semverCompare \">=1.2 <=1.3\" \"2.0.0\" }}",
    "{{ semverCompare \">=1.2 <=1.3\" \"1.2.0\" }}",
    "{{ semverCompare \"1.1 - 1.3\" \"1.2.3\" }}",
    "{{ semverCompare \"1.1 - 1.3\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"1.1 - 1.3\" \"1.3.0\" }}",
    "{{ semverCompare \"1.1 - 1.3\" \"0.2.5\" }}",
    "{{ semverCompare \"1.1 - 1.3\" \"2.0.0\" }}",
    "{{ semverCompare \"1.1 - 1.3\" \"1.2.0\" }}",
    "{{ semverCompare \"<1.2.3 || >1.5\" \"1.2.3\" }}",
    "{{ semverCompare \"<1.2.3 || >1.5\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"<1.2.3 || >1.5\" \"1.3.0\" }}",
    "{{ semverCompare \"<1.2.3 || >1.5\" \"0.2.5\" }}",
    "{{ semverCompare \"<1.2.3 || >1.5\" \"2.0.0\" }}",
    "{{ semverCompare \"<1.2.3 || >1.5\" \"1.2.0\" }}",
    "{{ semverCompare \"!=1.2.3\" \"1.2.3\" }}",
    "{{ semverCompare \"!=1.2.3\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"!=1.2.3\" \"1.3.0\" }}",
    "{{ semverCompare \"!=1.2.3\" \"0.2.5\" }}",
    "{{ semverCompare \"!=1.2.3\" \"2.0.0\" }}",
    "{{ semverCompare \"!=1.2.3\" \"1.2.0\" }}",
    "{{ semverCompare \"!=1.2.x\" \"1.2.3\" }}",
    "{{ semverCompare \"!=1.2.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"!=1.2.x\" \"1.3.0\" }}",
    "{{ semverCompare \"!=1.2.x\" \"0.2.5\" }}",
    "{{ semverCompare \"!=1.2.x\" \"2.0.0\" }}",
    "{{ semverCompare \"!=1.2.x\" \"1.2.0\" }}",
    "{{ semverCompare \"=>1.2\" \"1.2.3\" }}",
    "{{ semverCompare \"=>1.2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"=>1.2\" \"1.3.0\" }}",
    "{{ semverCompare \"=>1.2\" \"0.2.5\" }}",
    "{{ semverCompare \"=>1.2\" \"2.0.0\" }}",
    "{{ semverCompare \"=>1.2\" \"1.2.0\" }}",
    "{{ semverCompare \"=<1.2\" \"1.2.3\" }}",
    "{{ semverCompare \"=<1.2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"=<1.2\" \"1.3.0\" }}",
    "{{ semverCompare \"=<1.2\" \"0.2.5\" }}",
    "{{ semverCompare \"=<1.2\" \"2.0.0\" }}",
    "{{ semverCompare \"=<1.2\" \"1.2.0\" }}",
    "{{ semverCompare \">1.2.x\" \"1.2.3\" }}",
    "{{ semverCompare \">1.2.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">1.2.x\" \"1.3.0\" }}",
    "{{ semverCompare \">1.2.x\" \"0.2.5\" }}",
    "{{ semverCompare \">1.2.x\" \"2.0.0\" }}",
    "{{ semverCompare \">1.2.x\" \"1.2.0\" }}",
    "{{ semverCompare \"<=1.x\" \"1.2.3\" }}",
    "{{ semverCompare \"<=1.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"<=1.x\" \"1.3.0\" }}",
    "{{ semverCompare \"<=1.x\" \"0.2.5\" }}",
    "{{ semverCompare \"<=1.x\" \"2.0.0\" }}",
    "{{ semverCompare \"<=1.x\" \"1.2.0\" }}",
    "{{ semverCompare \"~>1.2\" \"1.2.3\" }}",
    "{{ semverCompare \"~>1.2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"~>1.2\" \"1.3.0\" }}",
    "{{ semverCompare \"~>1.2\" \"0.2.5\" }}",
    "{{ semverCompare \"~>1.2\" \"2.0.0\" }}",
    "{{ semverCompare \"~>1.2\" \"1.2.0\" }}",
    "{{ semverCompare \"^1.x\" \"1.2.3\" }}",
    "{{ semverCompare \"^1.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"^1.x\" \"1.3.0\" }}",
    "{{ semverCompare \"^1.x\" \"0.2.5\" }}",
    "{{ semverCompare \"^1.x\" \"2.0.0\" }}",
    "{{ semverCompare \"^1.x\" \"1.2.0\" }}",
    "{{ semverCompare \"^0.x\" \"1.2.3\" }}",
    "{{ semverCompare \"^0.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"^0.x\" \"1.3.0\" }}",
    "{{ semverCompare \"^0.x\" \"0.2.5\" }}",
    "{{ semverCompare \"^0.x\" \"2.0.0\" }}",
    "{{ semverCompare \"^0.x\" \"1.2.0\" }}",
    "{{ semverCompare \"^0.0.x\" \"1.2.3\" }}",
    "{{ semverCompare \"^0.0.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"^0.0.x\" \"1.3.0\" }}",
    "{{ semverCompare \"^0.0.x\" \"0.2.5\" }}",
    "{{ semverCompare \"^0.0.x\" \"2.0.0\" }}",
    "{{ semverCompare \"^0.0.x\" \"1.2.0\" }}",
    "{{ semverCompare \"1.2.3-beta.2\" \"1.2.3\" }}",
    "{{ semverCompare \"1.2.3-beta.2\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"1.2.3-beta.2\" \"1.3.0\" }}",
    "{{ semverCompare \"1.2.3-beta.2\" \"0.2.5\" }}",
    "{{ semverCompare \"1.2.3-beta.2\" \"2.0.0\" }}",
    "{{ semverCompare \"1.2.3-beta.2\" \"1.2.0\" }}",
    "{{ semverCompare \"foo\" \"1.2.3\" }}",
    "{{ semverCompare \"foo\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"foo\" \"1.3.0\" }}",
    "{{ semverCompare \"foo\" \"0.2.5\" }}",
    "{{ semverCompare \"foo\" \"2.0.0\" }}",
    "{{ semverCompare \"foo\" \"1.2.0\" }}",
    "{{ semverCompare \"\" \"1.2.3\" }}",
    "{{ semverCompare \"\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"\" \"1.3.0\" }}",
    "{{ semverCompare \"\" \"0.2.5\" }}",
    "{{ semverCompare \"\" \"2.0.0\" }}",
    "{{ semverCompare \"\" \"1.2.0\" }}",
    "{{ semverCompare \"1.2 ||\" \"1.2.3\" }}",
    "{{ semverCompare \"1.2 ||\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"1.2 ||\" \"1.3.0\" }}",
    "{{ semverCompare \"1.2 ||\" \"0.2.5\" }}",
    "{{ semverCompare \"1.2 ||\" \"2.0.0\" }}",
    "{{ semverCompare \"1.2 ||\" \"1.2.0\" }}",
    "{{ semverCompare \"~0.0.0\" \"1.2.3\" }}",
    "{{ semverCompare \"~0.0.0\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \"~0.0.0\" \"1.3.0\" }}",
    "{{ semverCompare \"~0.0.0\" \"0.2.5\" }}",
    "{{ semverCompare \"~0.0.0\" \"2.0.0\" }}",
    "{{ semverCompare \"~0.0.0\" \"1.2.0\" }}",
    "{{ semverCompare \">=1.2.3-alpha\" \"1.2.3\" }}",
    "{{ semverCompare \">=1.2.3-alpha\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">=1.2.3-alpha\" \"1.3.0\" }}",
    "{{ semverCompare \">=1.2.3-alpha\" \"0.2.5\" }}",
    "{{ semverCompare \">=1.2.3-alpha\" \"2.0.0\" }}",
    "{{ semverCompare \">=1.2.3-alpha\" \"1.2.0\" }}",
    "{{ semverCompare \">1.x\" \"1.2.3\" }}",
    "{{ semverCompare \">1.x\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">1.x\" \"1.3.0\" }}",
    "{{ semverCompare \">1.x\" \"0.2.5\" }}",
    "{{ semverCompare \">1.x\" \"2.0.0\" }}",
    "{{ semverCompare \">1.x\" \"1.2.0\" }}",
    "{{ semverCompare \">1.0\" \"bad\" }}",
    // semver values: Go's *semver.Version, its methods and its unexported fields.
    "{{ (semver \"1.20.3\").Minor }}",
    "{{ (semver \"1.20.3\").Major }}.{{ (semver \"1.20.3\").Patch }}",
    "{{ (semver \"v1.2.3-rc.1+b.7\").Prerelease }}|{{ (semver \"v1.2.3-rc.1+b.7\").Metadata }}",
    "{{ (semver \"v1.2\").Original }}|{{ (semver \"v1.2\").String }}|{{ semver \"v1.2\" }}",
    "{{ (semver \"1.2.3\").IncPatch }}|{{ (semver \"1.2.3-rc.1\").IncPatch }}|{{ (semver \"1.2.3+m\").IncPatch }}",
    "{{ (semver \"1.2.3\").IncMinor }}|{{ (semver \"v1.2.3-a\").IncMajor }}",
    "{{ (semver \"1.2.3\").IncMinor.Minor }}|{{ (semver \"v1.2.3\").IncMajor.String }}",
    "{{ (semver \"1.2.3\").IncMajor.Original }}",
    "{{ (semver \"1.2.3\").major }}",
    "{{ (semver \"1.2.3\").IncPatch.major }}",
    "{{ (semver \"1.2.3\").Nope }}",
    "{{ (semver \"1.2.3\").LessThan (semver \"1.3.0\") }}|{{ (semver \"1.2.3\").GreaterThan (semver \"1.3.0\") }}",
    "{{ (semver \"1.2.3\").Equal (semver \"v1.2.3+meta\") }}|{{ (semver \"1.2.3\").Compare (semver \"1.2.3-a\") }}",
    "{{ (semver \"1.2.3-a.10\").Compare (semver \"1.2.3-a.9\") }}|{{ (semver \"1.0.0\").LessThanEqual (semver \"1\") }}",
    "{{ semver \"2.0.0\" | (semver \"1.0.0\").GreaterThanEqual }}",
    "{{ (semver \"1.2.3\").LessThan }}",
    "{{ (semver \"1.2.3\").LessThan \"1.3.0\" }}",
    "{{ (semver \"1.2.3\").LessThan nil }}",
    "{{ (semver \"1.2.3\").Minor 1 }}",
    "{{ (semver \"1.2.3\").SetPrerelease \"rc.1\" }}|{{ (semver \"1.2.3-x\").SetPrerelease \"\" }}|{{ (semver \"v1.2.3\").SetMetadata \"b.1\" }}",
    "{{ (semver \"1.2.3\").SetPrerelease \"01\" }}",
    "{{ (semver \"1.2.3\").SetMetadata \"a..b\" }}",
    "{{ ((semver \"1.2.3\").SetPrerelease \"rc\").Prerelease }}",
    "{{ (semver \"1.2.3\").SetPrerelease 1 }}",
    "{{ typeOf (semver \"1.2.3\") }}|{{ kindOf (semver \"1.2.3\") }}|{{ typeOf (semver \"1.2.3\").IncPatch }}|{{ kindOf (semver \"1.2.3\").IncPatch }}",
    "{{ toJson (semver \"v1.2.3-a\") }}|{{ toJson (list (semver \"1\")) }}|{{ printf \"%v %s %q\" (semver \"1\") (semver \"1\") (semver \"1\") }}",
    "{{ toString (semver \"1.2\") }}|{{ print (semver \"1.2\") }}|{{ empty (semver \"1.2\") }}|{{ if semver \"0.0.0\" }}y{{ end }}",
    "{{ $v := semver \"1.2.3\" }}{{ $v.Minor }}{{ with $v }}{{ .Patch }}{{ end }}",
    "{{ (semver \"18446744073709551615.0.0\").Major }}",
    "{{ (semver \"18446744073709551615.0.0\").IncMajor }}",
    "{{ (semver \"1.18446744073709551615.0\").IncMinor }}",
    "{{ (semver \"1.0.18446744073709551615\").IncPatch }}",
    "{{ (semver \"1.0.18446744073709551615-a\").IncPatch }}",
    "{{ semver \"1.2.3-\" }}",
    "{{ semver \"1.2.3+\" }}",
    "{{ semver \"1.2.3-a..b\" }}",
    "{{ semver \"V1.2.3\" }}",
    "{{ semver \"1.2.3.4\" }}",
    "{{ semver \"01.002.0003\" }}",
    "{{ semver \"1.2.3-0a.01\" }}",
    "{{ semver \" 1.2.3\" }}",
    "{{ semverCompare \"!=1.2.3\" \"1.2.3-beta.1\" }}|{{ semverCompare \"!=1.2.3-alpha\" \"1.2.3-beta.1\" }}",
    "{{ semverCompare \">=1.2.0-0 <2\" \"1.5.0-rc.1\" }}|{{ semverCompare \">=1.2.0 <2\" \"1.5.0-rc.1\" }}",
    "{{ semverCompare \">=1.2.0-0 || <2\" \"1.5.0-rc.1\" }}|{{ semverCompare \"<2 || >=1.2.0-0\" \"1.5.0-rc.1\" }}",
    "{{ semverCompare \"^0.0.x\" \"0.0.7\" }}|{{ semverCompare \"^0.0.x\" \"0.1.0\" }}|{{ semverCompare \"^0.0\" \"0.0.9\" }}|{{ semverCompare \"^0\" \"0.9.0\" }}",
    "{{ semverCompare \"^0.0.3\" \"0.0.3\" }}|{{ semverCompare \"^0.0.3\" \"0.0.4\" }}|{{ semverCompare \"^0.2.x\" \"0.2.9\" }}|{{ semverCompare \"^0.x.x\" \"0.5.1\" }}",
    "{{ semverCompare \"~0\" \"0.5.0\" }}|{{ semverCompare \"~0.0\" \"0.0.5\" }}|{{ semverCompare \"~0.0.0\" \"4.0.0\" }}|{{ semverCompare \"~>2.x\" \"2.9.9\" }}",
    "{{ semverCompare \"1.2 - 1.4\" \"1.4.5\" }}|{{ semverCompare \"1.2 - 1.4.x\" \"1.4.5\" }}|{{ semverCompare \"1.2-1.4\" \"1.3.0\" }}",
    "{{ semverCompare \"1.2.3 - 2\" \"2.9.9\" }}|{{ semverCompare \">1 - 2\" \"1.5.0\" }}",
    "{{ semverCompare \">1.2.3-alpha\" \"1.2.3-beta\" }}|{{ semverCompare \"<1.2.3-beta\" \"1.2.3-alpha.1\" }}|{{ semverCompare \"=1.2.3-beta\" \"1.2.3-beta+m\" }}",
    "{{ semverCompare \"!=1.x\" \"1.0.0-rc\" }}|{{ semverCompare \"!=1.2.x-rc\" \"1.2.0-rc\" }}|{{ semverCompare \"!=1.2.x-rc\" \"1.2.0-rd\" }}",
    "{{ semverCompare \">1.x\" \"2.0.0\" }}|{{ semverCompare \">1.x\" \"1.9.0\" }}|{{ semverCompare \"<=1.2.x\" \"1.2.9\" }}|{{ semverCompare \"<=1.2.x\" \"1.3.0\" }}",
    "{{ semverCompare \"x\" \"1.0.0-a\" }}|{{ semverCompare \"*-0\" \"1.0.0-a\" }}|{{ semverCompare \"\" \"1.0.0\" }}",
    "{{ semverCompare \">= 1.2 , < 2\" \"1.5.0\" }}",
    "{{ semverCompare \"1.2.3 ||\" \"1.2.3\" }}",
    "{{ semverCompare \"|| 1.2.3\" \"1.2.3\" }}",
    "{{ semverCompare \">=a\" \"1.2.3\" }}",
    "{{ semverCompare \"=01.2.3\" \"1.2.3\" }}|{{ semverCompare \"1.02\" \"1.2.9\" }}",
    "{{ semverCompare \"v1.2.3\" \"v1.2.3\" }}|{{ semverCompare \">=1.2.3\" \"v1.2.3\" }}",
    "{{ semverCompare \"1.2.3\" \"1.2.3.4\" }}",
    "{{ semverCompare \"~1.2.3-beta.2\" \"1.2.3-beta.10\" }}|{{ semverCompare \"^1.2.3-beta.2\" \"1.9.0-alpha\" }}",
    // Regular expressions (Go's RE2 syntax and semantics; the syntax tables are compared in go_regexp).
    "{{ regexMatch \"^[a-z]+\\\\d*$\" \"abc12\" }}|{{ regexMatch \"(?i)ABC\" \"xabcx\" }}|{{ regexMatch \"\\\\bfoo\\\\b\" \"a foo b\" }}",
    "{{ regexFindAll \"a*\" \"baaab\" -1 }}|{{ regexFindAll \"\" \"abc\" -1 }}|{{ regexFindAll \"x*\" \"\" -1 }}",
    "{{ regexFindAll \"[[:alpha:]]+\" \"ab1cd2\" 0 }}|{{ regexFindAll \"\\\\pL+\" \"héllo wörld\" -1 }}|{{ regexFindAll \"\\\\p{Greek}\" \"aβγ\" -1 }}",
    "{{ regexFind \"(?s)a.b\" \"a\\nb\" }}|{{ regexFind \"a.b\" \"a\\nb\" }}|{{ regexFind \"(?m)^b$\" \"a\\nb\\nc\" }}|{{ regexFind \"^b$\" \"a\\nb\" }}",
    "{{ regexFind \"(?U)a+\" \"aaa\" }}|{{ regexFind \"a+?\" \"aaa\" }}|{{ regexFind \"a{2,3}\" \"aaaa\" }}|{{ regexFind \"a{2,}?\" \"aaaa\" }}",
    "{{ regexReplaceAll \"(?P<first>\\\\w+) (?P<last>\\\\w+)\" \"ada lovelace\" \"${last}, $first\" }}|{{ regexReplaceAll \"a\" \"banana\" \"$0$0\" }}",
    "{{ regexReplaceAll \"(a)\" \"banana\" \"$1x\" }}|{{ regexReplaceAll \"(a)\" \"banana\" \"${1}x\" }}|{{ regexReplaceAll \"(a)\" \"banana\" \"$2\" }}|{{ regexReplaceAll \"(a)\" \"banana\" \"$$\" }}",
    "{{ regexReplaceAll \"\" \"abc\" \"-\" }}|{{ regexReplaceAll \"x*\" \"abc\" \"-\" }}|{{ regexReplaceAllLiteral \"b\" \"abc\" \"$0\" }}",
    "{{ regexSplit \",\" \"a,b,,c\" -1 }}|{{ regexSplit \",\" \"a,b,,c\" 0 }}|{{ regexSplit \",\" \"a,b,,c\" 2 }}|{{ regexSplit \"\" \"abc\" -1 }}|{{ regexSplit \"x*\" \"axbc\" -1 }}",
    "{{ regexSplit \",\" \"\" -1 }}|{{ len (regexSplit \",\" \"\" -1) }}|{{ regexSplit \"a\" \"a\" -1 }}",
    "{{ regexQuoteMeta \"\\\\.+*?()|[]{}^$\" }}|{{ regexQuoteMeta \"héllo\" }}",
    "{{ regexFind \"\\\\x{263a}\" \"☺\" }}|{{ regexFind \"[^a]\" \"aé\" }}|{{ regexFind \"\\\\C\" \"x\" }}",
    "{{ regexMatch \"a++\" \"a\" }}",
    "{{ regexMatch \"(?<name>a)\" \"a\" }}",
    "{{ regexMatch \"\\\\8\" \"a\" }}",
    "{{ regexMatch \"a{1001}\" \"a\" }}",
    "{{ regexMatch \"(?i\" \"a\" }}",
    "{{ regexMatch \"[z-a]\" \"a\" }}",
    "{{ regexMatch \"x{2}{3}\" \"a\" }}",
    "{{ regexMatch \"\\\\Q.\\\\E\" \".\" }}|{{ regexMatch \"[[:word:]]\" \"_\" }}|{{ regexMatch \"\\\\z\" \"a\" }}",
    "{{ regexFindAll \"a\" \"aaaa\" 2 }}|{{ regexFindAll \"a\" \"aaaa\" -5 }}",
    "{{ mustRegexFindAll \"(\" \"x\" -1 }}",
    "{{ mustRegexReplaceAll \"(\" \"x\" \"y\" }}",
    "{{ mustRegexSplit \"*\" \"x\" -1 }}",
    "{{ mustRegexReplaceAllLiteral \"a\" \"banana\" \"$1\" }}|{{ mustRegexFind \"n+\" \"banana\" }}|{{ mustRegexFindAll \"n\" \"banana\" 1 }}",
    // Dicts and merges (mergo v1.0.2 through Sprig 3.3.0).
    "{{ merge (dict \"a\" \"\") (dict \"a\" \"x\") }}|{{ merge (dict \"a\" 0) (dict \"a\" 5) }}|{{ merge (dict \"a\" false) (dict \"a\" true) }}",
    "{{ merge (dict \"a\" nil) (dict \"a\" 1) }}|{{ merge (dict \"a\" 1) (dict \"a\" nil) }}|{{ mergeOverwrite (dict \"a\" 1) (dict \"a\" nil) }}",
    "{{ mergeOverwrite (dict \"a\" 1) (dict \"a\" \"\") }}|{{ mergeOverwrite (dict \"a\" 1) (dict \"a\" 0) }}|{{ mergeOverwrite (dict \"a\" true) (dict \"a\" false) }}",
    "{{ merge (dict \"a\" (list 1)) (dict \"a\" (list 2 3)) }}|{{ mergeOverwrite (dict \"a\" (list 1)) (dict \"a\" (list 2 3)) }}|{{ mergeOverwrite (dict \"a\" (list 1)) (dict \"a\" (list)) }}",
    "{{ merge (dict \"a\" (list)) (dict \"a\" (list 2)) }}|{{ mergeOverwrite (dict \"a\" \"x\") (dict \"a\" (list 2)) }}|{{ mergeOverwrite (dict \"a\" (list 2)) (dict \"a\" \"x\") }}",
    "{{ merge (dict \"a\" (dict \"b\" 1)) (dict \"a\" (dict \"b\" 2 \"c\" 3)) }}|{{ mergeOverwrite (dict \"a\" (dict \"b\" 1)) (dict \"a\" (dict \"b\" 2 \"c\" 3)) }}",
    "{{ mergeOverwrite (dict \"a\" (dict \"b\" 1)) (dict \"a\" \"x\") }}|{{ mergeOverwrite (dict \"a\" \"x\") (dict \"a\" (dict \"b\" 1)) }}|{{ merge (dict \"a\" \"x\") (dict \"a\" (dict \"b\" 1)) }}",
    "{{ mergeOverwrite (dict \"a\" (dict)) (dict \"a\" (dict \"b\" 1)) }}|{{ mergeOverwrite (dict \"a\" (dict \"b\" 1)) (dict \"a\" (dict)) }}",
    "{{ merge (dict \"a\" (dict \"b\" (dict \"c\" 1))) (dict \"a\" (dict \"b\" (dict \"d\" 2))) }}",
    "{{ mergeOverwrite (dict \"a\" (dict \"b\" (dict \"c\" 1))) (dict \"a\" (dict \"b\" (dict \"c\" nil))) }}",
    "{{ merge (dict) (dict \"a\" 1) (dict \"a\" 2 \"b\" 3) }}|{{ mergeOverwrite (dict) (dict \"a\" 1) (dict \"a\" 2 \"b\" 3) }}",
    "{{ mustMerge (dict \"a\" 1) (dict \"b\" 2) }}|{{ mustMergeOverwrite (dict \"a\" 1) (dict \"a\" 2) }}",
    "{{ merge .m .sm }}|{{ mergeOverwrite (dict \"c\" \"s\") .m }}",
    "{{ merge (dict \"x\" .m) (dict \"x\" (dict \"a\" 7 \"q\" 1)) }}|{{ .m }}",
    "{{ merge nil (dict \"a\" 1) }}",
    "{{ merge (dict \"a\" 1) nil }}",
    "{{ merge (dict \"a\" 1) .s }}",
    "{{ merge .list (dict \"a\" 1) }}",
    "{{ $d := dict \"a\" (dict \"b\" 1) }}{{ $e := merge (dict) $d }}{{ $_ := set $e.a \"c\" 2 }}{{ $d }}|{{ $e }}",
    "{{ $d := dict \"a\" (list 1) }}{{ $e := mergeOverwrite (dict \"a\" (list 0)) $d }}{{ $e }}|{{ $d }}",
    "{{ set .sm \"k\" \"v\" }}",
    "{{ set (dict) \"a\" }}",
    "{{ unset (dict) \"a\" }}|{{ unset .m \"zz\" }}|{{ $_ := unset .m \"zz\" }}{{ len .m }}",
    "{{ pick (dict \"a\" 1 \"b\" 2) \"b\" \"z\" }}|{{ omit (dict \"a\" 1 \"b\" 2) \"a\" \"z\" }}|{{ pick .m }}",
    "{{ dig \"a\" \"x\" (dict \"a\" 1) }}",
    "{{ dig \"a\" \"b\" \"x\" (dict \"a\" 1) }}",
    "{{ dig \"a\" \"x\" .sm }}",
    // The rows of template::tests::dicts_and_merges_render_as_go_renders_them (what kills the
    // mutants of sprig/dicts.rs, docs/mutation-testing.md).
    r#"{{ dig "a" "d" (dict "a" 1) }}"#,
    r#"{{ dig "a" "x" "d" (dict "a" (dict "x" 2)) }}"#,
    r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" (dict "c" 1))) }}"#,
    r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" (dict "z" 1))) }}"#,
    r#"{{ dig "a" "b" 1 "d" (dict "a" (dict "b" (dict "c" 1))) }}"#,
    r#"{{ dig "a" "b" "c" "d" (dict "a" (dict "b" 1)) }}"#,
    r#"{{ dig "a" (dict) }}"#,
    r#"{{ dig "a" "d" (list) }}"#,
    r#"{{ merge (dict "a" "x") (dict "a" (dict "b" 1)) }}"#,
    r#"{{ mergeOverwrite (dict "a" "x") (dict "a" (dict "b" 1)) }}"#,
    r#"{{ merge (dict "a" (dict "b" 1)) (dict "a" (dict "c" 2)) }}"#,
    r#"{{ mergeOverwrite (dict "a" (dict "b" 1)) (dict "a" (dict "c" 2)) }}"#,
    r#"{{ merge (dict) (dict "a" 1) }}"#,
    r#"{{ merge (dict) (dict "a" (list 1)) }}"#,
    r#"{{ merge (dict "a" (list)) (dict "a" (list 1)) }}"#,
    r#"{{ merge (dict "a" (list 2)) (dict "a" (list 1)) }}"#,
    r#"{{ mergeOverwrite (dict "a" (list 2)) (dict "a" (list)) }}"#,
    r#"{{ merge (dict "a" (dict)) (dict "a" (dict)) }}"#,
    r#"{{ mergeOverwrite (dict "a" (dict)) (dict "a" (dict)) }}"#,
    r#"{{ merge (dict "a" "") (dict "a" (dict)) }}"#,
    r#"{{ mergeOverwrite (dict "a" 1) (dict "a" (dict)) }}"#,
    r#"{{ $d := dict "a" 1 }}{{ $_ := unset $d "a" }}{{ $d }}|{{ $_ := set $d "b" 2 }}{{ $d }}"#,
    r#"{{ pick (dict "a" 1 "b" 2 "c" 3) "a" "c" }}|{{ pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3) }}"#,
    r#"{{ $d := dict }}{{ $_ := set $d "x" (list (dict "y" 1)) }}{{ $d }}"#,
    "{{ hasKey (dict \"a\" nil) \"a\" }}|{{ get (dict \"a\" nil) \"a\" }}|{{ get (dict) \"a\" | typeOf }}",
    "{{ deepCopy (dict \"a\" (list 1 (dict \"b\" 2))) }}|{{ deepCopy nil }}|{{ deepCopy .s }}",
    "{{ mustDeepCopy .m }}|{{ deepEqual (dict \"a\" 1) (dict \"a\" 1) }}|{{ deepEqual (dict \"a\" 1) (dict \"a\" 1.0) }}",
    "{{ sortAlpha (keys (dict \"b\" 1 \"a\" 2) (dict \"a\" 3)) }}|{{ len (values .m) }}",
    // Lists.
    "{{ append (list 1 2) (list 3) }}|{{ prepend (list) nil }}|{{ append nil 1 }}",
    "{{ append .sm 1 }}",
    "{{ concat (list 1) nil (list 2 3) }}|{{ concat }}|{{ concat .list .sl }}",
    "{{ concat (list 1) \"a\" }}",
    "{{ first (list) }}|{{ last nil }}|{{ rest nil }}|{{ initial (list 1) }}|{{ reverse (list) }}",
    "{{ uniq (list (list 1) (list 1) (dict \"a\" 1) (dict \"a\" 1) nil nil) }}",
    "{{ without (list 1 2 1 3) 1 3 }}|{{ without (list) 1 }}|{{ has nil (list nil) }}|{{ has 1 nil }}",
    "{{ has 1.0 (list 1) }}|{{ has \"1\" (list 1) }}|{{ has (list 1) (list (list 1)) }}",
    "{{ compact (list (list) (dict) 0.0 nil \"x\") }}|{{ compact nil }}",
    "{{ slice (list 1 2 3) 1 }}|{{ slice (list 1 2 3) 0 3 }}|{{ slice \"hello\" 1 3 }}",
    "{{ slice (list 1 2 3) 2 1 }}",
    "{{ slice (list 1 2 3) 0 4 }}",
    "{{ mustSlice (list 1 2 3) 2 1 }}",
    "{{ chunk 1 (list) }}|{{ chunk 3 (list 1 2 3 4 5 6 7) }}|{{ chunk 2 (splitList \",\" \"a,b,c\") }}",
    "{{ sortAlpha (list \"b\" \"B\" \"a\" \"10\" \"9\" \"é\") }}|{{ sortAlpha (list 3 1 2.5) }}|{{ sortAlpha nil }}",
    "{{ until -3 }}|{{ untilStep 0 -10 -3 }}|{{ untilStep 0 10 0 }}|{{ seq 1 -1 }}|{{ seq 10 -3 1 }}",
    "{{ mustFirst (list) }}|{{ mustLast (list 1 2) }}|{{ mustRest (list 1 2) }}|{{ mustInitial (list 1 2) }}|{{ mustReverse (list 1 2) }}",
    "{{ mustUniq (list 1 1) }}|{{ mustWithout (list 1 2) 1 }}|{{ mustHas 1 (list 1) }}|{{ mustCompact (list 0 1) }}|{{ mustChunk 1 (list 1 2) }}",
    "{{ mustAppend (list) 1 }}|{{ mustPrepend (list 1) 0 }}|{{ mustPush (list) 2 }}",
    "{{ mustFirst .s }}",
    "{{ mustAppend .sm 1 }}",
    "{{ index (list 1 (list 2 3)) 1 0 }}|{{ index (dict \"a\" (list 9)) \"a\" 0 }}|{{ index (list 1 2) 1.0 }}",
    "{{ index (list 1 2) 2 }}",
    "{{ index (list 1 2) -1 }}",
    "{{ len (list 1 2) }}|{{ len (until 5) }}|{{ len (splitList \",\" \"a,b\") }}|{{ len (chunk 2 (list 1 2 3)) }}",
    "{{ typeOf (until 2) }}|{{ typeOf (splitList \",\" \"a\") }}|{{ typeOf (chunk 1 (list 1)) }}|{{ typeOf (list) }}|{{ typeOf (rest (list)) }}",
    "{{ join \",\" (list 1 nil \"a\" 2.5 true) }}|{{ join \",\" (until 3) }}|{{ toStrings (list 1 nil (list 2)) }}",
    // Functions outrigger does not implement (the clock's are compared at fixed clocks in
    // `dates_agree_with_go`; the real clock is the same in both here only to the second).
    "{{ randAlpha 3 }}",
    "{{ uuidv4 }}",
    "{{ genPrivateKey \"rsa\" }}",
    "{{ date \"2006\" 0 }}",
    "{{ env \"OUTRIGGER_SURELY_UNSET\" }}|{{ expandenv \"$OUTRIGGER_SURELY_UNSET\" }}",
    // Istio overrides and additions.
    "{{ indent 4 \"a\\nb\" }}|{{ contains \"b\" \"abc\" }}|{{ env \"OUTRIGGER_SURELY_UNSET\" \"dflt\" }}",
    "{{ toYaml .m }}|{{ toYaml .list }}|{{ toYaml .null }}|{{ toYaml .empty_map }}|{{ toYaml .s }}|{{ toYaml .yes }}",
    "{{ toYaml . }}",
    "{{ toJSON .sm }}|{{ toJSON nil }}",
    "{{ toJSON .m }}",
    "{{ fromJSON .json }}|{{ fromJSON .bad_json }}|{{ fromJSON \"1e6\" }}",
    "{{ range fromJSON .bad_json }}x{{ end }}",
    "{{ valueOrDefault .missing \"d\" }}|{{ valueOrDefault .e \"d\" }}|{{ valueOrDefault .z \"d\" }}|{{ valueOrDefault .no 1 }}|{{ valueOrDefault .s 1 }}",
    "{{ strdict \"a\" \"1\" \"b\" }}|{{ strdict }}|{{ toJsonMap (strdict \"b\" \"2\") (strdict \"a\" \"1\" \"b\" \"3\") }}|{{ toJsonMap }}",
    "{{ mergeMaps (strdict \"a\" \"1\") (strdict \"a\" \"2\" \"c\" \"3\") }}|{{ mergeMaps }}",
    "{{ isset (strdict \"a\" \"\") \"a\" }} {{ isset (strdict) \"a\" }} {{ isset nil \"a\" }}",
    "{{ isset .sm \"k1\" }}",
    "{{ omit (strdict \"a\" \"1\" \"b\" \"2\") \"a\" }}",
    "{{ directory .path }}|{{ directory \"c.pem\" }}|{{ directory \"/a/b/\" }}",
    "{{ toLower \"ÀBC\" }}",
    "{{ excludeInboundPort .port .ports }}|{{ excludeInboundPort \"15020\" \"\" }}|{{ excludeInboundPort 0 \"1\" }}|{{ excludeInboundPort \"9090\" \"8080, 9090\" }}|{{ excludeInboundPort .big \"x\" }}",
    "{{ kubevirtInterfaces \"a\" }}|{{ excludeInterfaces \"b\" }}",
    "{{ strdict 1 }}",
    // Argument conversion.
    "{{ upper 1 }}",
    "{{ repeat \"x\" \"y\" }}",
    "{{ repeat .i \"y\" }}",
    "{{ repeat 2.0 \"y\" }}",
    "{{ trunc .f \"abc\" }}",
    "{{ indent .missing \"x\" }}",
    "{{ contains \"/\" .missing }}",
    "{{ printf .i }}",
    "{{ upper \"a\" \"b\" }}",
    "{{ nofunc }}",
    "{{ .s | nofunc }}",
    "{{ list 1 2 | len }}",
    "{{ 3 | printf \"%d\" }}",
    "{{ \"a\" | printf \"%s %s\" \"b\" }}",
    "{{ nil | printf \"%v\" }}",
];

/// Rows with their own data (data that matters for the row: top-level scalars, null, arrays).
fn data_rows() -> Vec<(&'static str, Value)> {
    vec![
        ("{{ . }}", json!(null)),
        ("{{ .x }}", json!(null)),
        ("{{ . }}", json!("str")),
        ("{{ .x }}", json!("str")),
        ("{{ . }}", json!(1.5)),
        ("{{ .x }}", json!(1.5)),
        ("{{ . }}", json!([1, 2])),
        ("{{ .x }}", json!([1, 2])),
        (
            "{{ range . }}{{ .x }}{{ end }}",
            json!([{"x": 1}, {"y": 2}, null]),
        ),
        ("{{ range . }}{{ .x }}{{ end }}", json!([1])),
        ("{{ index . 0 }}", json!([[1, 2]])),
        ("{{ len . }}", json!({"a": 1})),
        ("{{ . }}", json!(true)),
        ("{{ . }}", json!({})),
        ("{{ if . }}y{{ else }}n{{ end }}", json!({})),
        ("{{ if . }}y{{ else }}n{{ end }}", json!(0)),
        (
            "{{ range $k, $v := . }}{{ $k }}{{ end }}",
            json!({"b": 1, "a": 2, "B": 3, "é": 4, "_": 5}),
        ),
        ("{{ . }}", json!({"b": 1, "a": 2, "B": 3, "é": 4, "_": 5})),
        ("{{ .a }}", json!({"a": 123456789012345678u64})),
        ("{{ .a }}", json!({"a": 0.000001})),
        ("{{ .a }}", json!({"a": 5e-324})),
        ("{{ .a }}", json!({"a": 1.7976931348623157e308})),
        (
            "{{ .a }} {{ toJson .a }}",
            json!({"a": 100000000000000000000.0}),
        ),
        ("{{ .a }} {{ toJson .a }}", json!({"a": -1e-7})),
        (
            "{{ .a }} {{ toJson . }}",
            json!({"a": "\u{2028}\u{2029}<>&"}),
        ),
    ]
}

fn template_table_agrees_with_go() {
    let mut o = Oracle::get("template_table_agrees_with_go");
    let d = data();
    let mut cases: Vec<(String, Value)> = TEMPLATES
        .iter()
        .map(|t| (t.to_string(), d.clone()))
        .collect();
    cases.extend(data_rows().into_iter().map(|(t, d)| (t.to_string(), d)));
    let mut tally = Tally {
        table_data: d,
        ..Tally::default()
    };
    compare(&mut o, &cases, &mut tally);
    tally.check("template table");
}

// ---------------------------------------------------------------- generated inputs

const STRINGS: &[&str] = &[
    "",
    "a",
    "hello",
    "Hello World",
    "yes",
    "no",
    "true",
    "010",
    "1e6",
    "42",
    "-7",
    "1.5",
    " padded ",
    "a,b,,c",
    "x\ny\n",
    "<a&b>",
    "héllo",
    "straße",
    "İstanbul",
    "HTTPServer",
    "fooBar_baz-qux",
    "ID1Name2",
    "0x1A",
    "/a/b/c.pem",
    "a/../b",
    "${x}",
    "%d %s",
    "{{",
    "\"q\"",
    "tab\there",
    "a.b*c",
    "aGVsbG8=",
    "NBSWY3DP",
    "x y  z",
    "ǆemal",
    "✓✓",
    "_a_",
    "--",
    "1 2 3",
    "key: value",
    "null",
    "~",
    "8080, 9090",
    "15020",
    "9.99",
    "0",
    "A-B C",
];

const NUMBERS: &[f64] = &[
    0.0,
    1.0,
    -1.0,
    2.0,
    3.0,
    42.0,
    1.5,
    -0.5,
    0.1,
    1e6,
    1e21,
    1e-7,
    123456.0,
    1234567.0,
    9007199254740993.0,
    2.5,
    100.0,
    15020.0,
    -0.0,
    0.5,
];

const KEYS: &[&str] = &["a", "b", "c", "x", "y", "k1", "k2", "Z"];

fn gen_scalar(r: &mut Rng) -> Value {
    match r.below(10) {
        0..=3 => json!(r.pick(STRINGS)),
        4..=6 => {
            let f = *r.pick(NUMBERS);
            if f.fract() == 0.0 && f.abs() < 1e15 && !(f == 0.0 && f.is_sign_negative()) {
                json!(f as i64)
            } else {
                json!(f)
            }
        }
        7 => json!(r.chance(50)),
        8 => Value::Null,
        _ => json!(r.pick(KEYS)),
    }
}

fn gen_value(r: &mut Rng, depth: usize) -> Value {
    if depth == 0 || r.chance(60) {
        return gen_scalar(r);
    }
    if r.chance(50) {
        Value::Array((0..r.below(4)).map(|_| gen_value(r, depth - 1)).collect())
    } else {
        let mut m = serde_json::Map::new();
        for _ in 0..r.below(4) {
            m.insert(r.pick(KEYS).to_string(), gen_value(r, depth - 1));
        }
        Value::Object(m)
    }
}

/// Data with a few keys of known kinds (so typed operands often fit) and random extras.
fn gen_data(r: &mut Rng) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("s".into(), json!(r.pick(STRINGS)));
    m.insert("i".into(), json!([0, 1, 2, 3, 5, 42, -1][r.below(7)]));
    m.insert("f".into(), json!(r.pick(NUMBERS)));
    m.insert("t".into(), json!(r.chance(50)));
    m.insert("n".into(), Value::Null);
    let l: Vec<Value> = (0..r.below(5)).map(|_| gen_value(r, 1)).collect();
    m.insert("l".into(), Value::Array(l));
    let sl: Vec<Value> = (0..r.below(4)).map(|_| json!(r.pick(STRINGS))).collect();
    m.insert("sl".into(), Value::Array(sl));
    let mut mm = serde_json::Map::new();
    for _ in 0..r.below(4) {
        mm.insert(r.pick(KEYS).to_string(), gen_value(r, 2));
    }
    m.insert("m".into(), Value::Object(mm));
    let mut sm = serde_json::Map::new();
    for _ in 0..r.below(3) {
        sm.insert(r.pick(KEYS).to_string(), json!(r.pick(STRINGS)));
    }
    m.insert("sm".into(), Value::Object(sm));
    for _ in 0..r.below(3) {
        m.insert(r.pick(KEYS).to_string(), gen_value(r, 2));
    }
    Value::Object(m)
}

/// Functions the generator calls, with argument kinds: `S` string, `I` int, `A` anything,
/// `L` list, `M` map, `T` map[string]string, `B` bool, `F` format, `R` regexp, `V` a literal
/// `D` base64/base32 input decoding to text, and `N` a map not holding the data's root (so that `set` and `merge` cannot make a map
/// contain itself, which crashes Go); a trailing `*`
/// repeats the last kind 0-3 times. Functions whose results depend on Go's map iteration order
/// (`keys`, `values`) only appear under `sortAlpha`.
const FUNCS: &[(&str, &str)] = &[
    ("and", "A A*"),
    ("or", "A A*"),
    ("not", "A"),
    ("eq", "A A A*"),
    ("ne", "A A"),
    ("lt", "A A"),
    ("le", "A A"),
    ("gt", "A A"),
    ("ge", "A A"),
    ("len", "A"),
    ("index", "A A*"),
    ("slice", "L I*"),
    ("print", "A*"),
    ("printf", "F A*"),
    ("println", "A*"),
    ("html", "A*"),
    ("js", "A*"),
    ("urlquery", "A*"),
    ("call", "A"),
    ("upper", "S"),
    ("lower", "S"),
    ("title", "S"),
    ("untitle", "S"),
    ("trim", "S"),
    ("trimAll", "S S"),
    ("trimPrefix", "S S"),
    ("trimSuffix", "S S"),
    ("trunc", "I S"),
    ("replace", "S S S"),
    ("hasPrefix", "S S"),
    ("hasSuffix", "S S"),
    ("quote", "A*"),
    ("squote", "A*"),
    ("cat", "A*"),
    ("nindent", "I S"),
    ("indent", "I S"),
    ("repeat", "I S"),
    ("substr", "I I S"),
    ("nospace", "S"),
    ("initials", "S"),
    ("swapcase", "S"),
    ("abbrev", "I S"),
    ("abbrevboth", "I I S"),
    ("wrap", "I S"),
    ("wrapWith", "I S S"),
    ("plural", "S S I"),
    ("split", "S S"),
    ("splitn", "S I S"),
    ("splitList", "S S"),
    ("join", "S L"),
    ("toString", "A"),
    ("toStrings", "L"),
    ("sortAlpha", "L"),
    ("regexMatch", "R S"),
    ("mustRegexMatch", "R S"),
    ("regexFind", "R S"),
    ("regexFindAll", "R S I"),
    ("regexReplaceAll", "R S S"),
    ("regexReplaceAllLiteral", "R S S"),
    ("regexSplit", "R S I"),
    ("regexQuoteMeta", "S"),
    ("snakecase", "S"),
    ("kebabcase", "S"),
    ("camelcase", "S"),
    ("atoi", "S"),
    ("int", "A"),
    ("int64", "A"),
    ("float64", "A"),
    ("add", "A*"),
    ("add1", "A"),
    ("sub", "A A"),
    ("mul", "A A*"),
    ("div", "A A"),
    ("mod", "A A"),
    ("max", "A A*"),
    ("min", "A A*"),
    ("maxf", "A A*"),
    ("minf", "A A*"),
    ("toDecimal", "A"),
    ("addf", "A*"),
    ("add1f", "A"),
    ("subf", "A A*"),
    ("mulf", "A A*"),
    ("divf", "A A*"),
    ("floor", "A"),
    ("ceil", "A"),
    ("round", "A I"),
    ("seq", "I*"),
    ("until", "I"),
    ("untilStep", "I I I"),
    ("list", "A*"),
    ("append", "L A"),
    ("prepend", "L A"),
    ("first", "L"),
    ("last", "L"),
    ("rest", "L"),
    ("initial", "L"),
    ("reverse", "L"),
    ("uniq", "L"),
    ("without", "L A*"),
    ("has", "A L"),
    ("compact", "L"),
    ("concat", "L*"),
    ("chunk", "I L"),
    ("dict", "S A S A"),
    ("get", "M S"),
    ("set", "M S V"),
    ("unset", "M S"),
    ("hasKey", "M S"),
    ("pick", "M S*"),
    ("pluck", "S M*"),
    ("merge", "N N*"),
    ("mergeOverwrite", "N N*"),
    ("dig", "S S A M"),
    ("default", "A A"),
    ("empty", "A"),
    ("coalesce", "A*"),
    ("all", "A*"),
    ("any", "A*"),
    ("ternary", "A A B"),
    ("toJson", "A"),
    ("toPrettyJson", "A"),
    ("toRawJson", "A"),
    ("fromJson", "S"),
    ("mustFromJson", "S"),
    ("deepCopy", "A"),
    ("typeOf", "A"),
    ("typeIs", "S A"),
    ("kindOf", "A"),
    ("kindIs", "S A"),
    ("deepEqual", "A A"),
    ("base", "S"),
    ("dir", "S"),
    ("clean", "S"),
    ("ext", "S"),
    ("isAbs", "S"),
    ("b64enc", "S"),
    ("b64dec", "D"),
    ("b32enc", "S"),
    ("b32dec", "D"),
    ("sha1sum", "S"),
    ("sha256sum", "S"),
    ("adler32sum", "S"),
    ("fail", "S"),
    ("toYaml", "A"),
    ("toJSON", "T"),
    ("fromJSON", "S"),
    ("valueOrDefault", "A A"),
    ("strdict", "S S*"),
    ("toJsonMap", "T*"),
    ("mergeMaps", "T*"),
    ("isset", "T S"),
    ("omit", "T S*"),
    ("directory", "S"),
    ("toLower", "S"),
    ("excludeInboundPort", "A S"),
    ("contains", "S S"),
    ("kubevirtInterfaces", "S"),
    ("excludeInterfaces", "S"),
    ("env", "S S"),
];

/// Functions whose result grows with an integer argument (a list of that many numbers, a text
/// repeated or padded that many times): the generator gives them small literal counts only
/// ([`Gen::small_int`]), never a computed or piped one; range heads compute no number
/// ([`computes_a_number`]). So every generated case is bounded in steps and memory: ranges nest
/// at most twice, over data, integer literals (at most 100) or lists built from them; a count
/// computed from data (`int "15020"` nested in `repeat`) had grown one seed's case to hundreds
/// of millions of items.
const GROWING: &[&str] = &[
    "until",
    "untilStep",
    "seq",
    "repeat",
    "indent",
    "nindent",
    "wrap",
    "wrapWith",
];

const FORMATS: &[&str] = &[
    "%v",
    "%s",
    "%d",
    "%q",
    "%x",
    "%5.2f",
    "%-4v|",
    "%05d",
    "%t",
    "%g",
    "%e",
    "%+v",
    "%#v",
    "%T",
    "%c",
    "%U",
    "%o",
    "%b",
    "%8s",
    "%.3s",
    "%[2]v %[1]v",
    "%*d",
    "%% %v",
    "%",
    "%!",
    "%v %v",
    "%x %X",
    "% d",
    "%#x",
    "%.0f",
    "%6.3v",
];

const REGEXPS: &[&str] = &[
    "a+",
    "[0-9]+",
    "^h",
    "o$",
    "\\s+",
    "(a)(b)?",
    "x*",
    ".",
    "[",
    "\\w+",
    "(?i)HELLO",
    "b|c",
    "\\d",
    "^$",
    "l+",
];

struct Gen<'r> {
    r: &'r mut Rng,
    vars: Vec<String>,
    depth: usize,
    ranges: usize,
}

impl Gen<'_> {
    fn field(&mut self) -> String {
        let roots = [
            "s", "i", "f", "t", "n", "l", "sl", "m", "sm", "missing", "a", "x",
        ];
        let mut s = format!(".{}", self.r.pick(&roots));
        if self.r.chance(25) {
            s.push('.');
            let k: &&str = self.r.pick(KEYS);
            s.push_str(k);
        }
        if self.r.chance(10) {
            s = format!("$.{}", &s[1..]);
        }
        s
    }

    fn string_lit(&mut self) -> String {
        let s = self.r.pick(STRINGS);
        if self.r.chance(15) && !s.contains('`') {
            format!("`{s}`")
        } else {
            format!("{s:?}")
        }
    }

    /// A count for a function of [`GROWING`]: a literal of at most 10.
    fn small_int(&mut self) -> String {
        ["0", "1", "2", "3", "-1", "5", "10"][self.r.below(7)].to_string()
    }

    fn int_lit(&mut self) -> String {
        [
            "0", "1", "2", "3", "-1", "5", "-2", "10", "0x10", "1e2", "'a'", "2.0", "100",
        ][self.r.below(13)]
        .to_string()
    }

    fn literal(&mut self) -> String {
        match self.r.below(6) {
            0 | 1 => self.string_lit(),
            2 | 3 => self.int_lit(),
            4 => ["true", "false", "1.5", "-0.5", "1e6", "0.1"][self.r.below(6)].to_string(),
            _ => "nil".to_string(),
        }
    }

    fn operand(&mut self, kind: char) -> String {
        if self.depth < 3 && !matches!(kind, 'V' | 'N') && self.r.chance(20) {
            self.depth += 1;
            let p = self.pipeline();
            self.depth -= 1;
            return format!("({p})");
        }
        let typed = self.r.chance(85);
        match (kind, typed) {
            ('S', true) => {
                if self.r.chance(60) {
                    self.string_lit()
                } else {
                    [".s", ".m.a", "$.s", "(index .sl 0)", "(toString .f)"][self.r.below(5)]
                        .to_string()
                }
            }
            ('I', true) => self.int_lit(),
            ('B', true) => ["true", "false", ".t", "(not .t)"][self.r.below(4)].to_string(),
            ('L', true) => [
                ".l",
                ".sl",
                "(list 1 \"a\" nil)",
                "(splitList \",\" .s)",
                ".m",
                "(until 3)",
                ".missing",
            ][self.r.below(7)]
            .to_string(),
            ('M', true) => [
                ".m",
                ".sm",
                "(dict \"a\" 1)",
                "$.m",
                "(fromJson \"{\\\"a\\\":[1]}\")",
                ".missing",
                ".",
            ][self.r.below(7)]
            .to_string(),
            ('T', true) => [
                "(strdict \"a\" \"1\")",
                "(strdict)",
                "(split \",\" .s)",
                "nil",
                ".sm",
            ][self.r.below(5)]
            .to_string(),
            ('F', true) => format!("{:?}", self.r.pick(FORMATS)),
            ('R', true) => format!("{:?}", self.r.pick(REGEXPS)),
            ('V', _) => self.literal(),
            // Inputs whose decoding is text or an error: Go strings may hold any bytes, ours are
            // UTF-8 (invalid bytes become U+FFFD), so decoded binary would differ under `len`,
            // digests and encoders.
            ('D', _) => [
                "\"aGVsbG8=\"",
                "\"NBSWY3DP\"",
                "\"!!\"",
                "\"a\"",
                "\"\"",
                "\"aGk=\"",
                "\"NBUQ====\"",
                ".missing",
            ][self.r.below(8)]
            .to_string(),
            ('N', _) => [
                ".m",
                ".sm",
                "(dict \"a\" 1 \"b\" (dict \"c\" 2))",
                "(dict)",
                "$.m",
                ".missing",
                "(dict \"m\" nil)",
            ][self.r.below(7)]
            .to_string(),
            _ => match self.r.below(5) {
                0 | 1 => self.field(),
                2 => self.literal(),
                3 if !self.vars.is_empty() => {
                    let v = self.r.pick(&self.vars).clone();
                    if self.r.chance(30) {
                        format!("{v}.{}", self.r.pick(KEYS))
                    } else {
                        v
                    }
                }
                _ => ".".to_string(),
            },
        }
    }

    fn call(&mut self, piped: bool) -> String {
        let (mut name, mut sig) = *self.r.pick(FUNCS);
        // A piped value is of any type: mostly pick functions taking any value last.
        while piped && self.r.chance(70) && !(sig.ends_with('A') || sig.ends_with("A*")) {
            (name, sig) = *self.r.pick(FUNCS);
        }
        // A piped value could be a map holding the target: Go crashes on such cycles. Nor is a
        // piped value the count of a function that builds as much as it is told.
        while piped
            && (matches!(name, "set" | "merge" | "mergeOverwrite") || GROWING.contains(&name))
        {
            (name, sig) = *self.r.pick(FUNCS);
        }
        let mut kinds: Vec<char> = Vec::new();
        for tok in sig.split(' ') {
            let c = tok.chars().next().unwrap_or('A');
            if tok.ends_with('*') {
                for _ in 0..self.r.below(3) {
                    kinds.push(c);
                }
            } else {
                kinds.push(c);
            }
        }
        if piped && !kinds.is_empty() {
            kinds.pop();
        }
        let args: Vec<String> = kinds
            .into_iter()
            .map(|k| {
                if k == 'I' && GROWING.contains(&name) {
                    self.small_int()
                } else {
                    self.operand(k)
                }
            })
            .collect();
        let call = if args.is_empty() {
            name.to_string()
        } else {
            format!("{name} {}", args.join(" "))
        };
        match name {
            "keys" | "values" => format!("sortAlpha ({call})"),
            _ => call,
        }
    }

    fn command(&mut self, first: bool) -> String {
        if first && self.r.chance(35) {
            self.operand('A')
        } else {
            self.call(!first)
        }
    }

    fn pipeline(&mut self) -> String {
        let n = 1 + self.r.below(if self.depth > 1 { 2 } else { 3 });
        (0..n)
            .map(|i| self.command(i == 0))
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn action(&mut self, inner: &str) -> String {
        let l = if self.r.chance(15) { "{{- " } else { "{{ " };
        let r = if self.r.chance(15) { " -}}" } else { " }}" };
        format!("{l}{inner}{r}")
    }

    fn body(&mut self, n: usize) -> String {
        (0..n).map(|_| self.statement()).collect()
    }

    fn statement(&mut self) -> String {
        let texts = ["", "x", " ", "\n", " | ", "a b\n"];
        match self.r.below(if self.depth >= 2 { 4 } else { 9 }) {
            0 => texts[self.r.below(texts.len())].to_string(),
            1 | 2 => {
                let p = self.pipeline();
                self.action(&p)
            }
            3 => {
                let v = format!("$v{}", self.vars.len());
                let p = self.pipeline();
                let s = self.action(&format!("{v} := {p}"));
                self.vars.push(v);
                s
            }
            4 | 5 => {
                let kw = ["if", "with"][self.r.below(2)];
                self.block(kw)
            }
            6 => self.block("range"),
            7 if self.ranges > 0 => ["{{ break }}", "{{ continue }}"][self.r.below(2)].to_string(),
            7 if !self.vars.is_empty() => {
                let v = self.r.pick(&self.vars).clone();
                let p = self.pipeline();
                self.action(&format!("{v} = {p}"))
            }
            8 => "{{/* c */}}".to_string(),
            _ => {
                let p = self.pipeline();
                self.action(&p)
            }
        }
    }

    fn block(&mut self, kw: &str) -> String {
        let mark = self.vars.len();
        self.depth += 1;
        let mut head = self.pipeline();
        // A range over an integer computed from data (`atoi "15020"`, `int 1e21`) could run for
        // ever: range heads compute no numbers.
        while kw == "range" && computes_a_number(&head) {
            head = self.pipeline();
        }
        if kw == "range" && self.r.chance(50) {
            let (k, v) = (
                format!("$k{}", self.vars.len()),
                format!("$e{}", self.vars.len()),
            );
            head = if self.r.chance(50) {
                self.vars.push(v.clone());
                format!("{v} := {head}")
            } else {
                self.vars.push(k.clone());
                self.vars.push(v.clone());
                format!("{k}, {v} := {head}")
            };
        }
        if kw == "range" {
            self.ranges += 1;
        }
        let n = 1 + self.r.below(2);
        let body = self.body(n);
        if kw == "range" {
            self.ranges -= 1;
        }
        let els = match self.r.below(10) {
            0..=2 => format!("{{{{ else }}}}{}", self.body(1)),
            3 if kw == "if" || self.r.chance(5) => {
                let p = self.pipeline();
                format!("{{{{ else {kw} {p} }}}}{}", self.body(1))
            }
            _ => String::new(),
        };
        self.depth -= 1;
        self.vars.truncate(mark);
        format!("{{{{ {kw} {head} }}}}{body}{els}{{{{ end }}}}")
    }
}

/// Whether pipeline `p` calls a function that computes a number (a count a range would run to).
fn computes_a_number(p: &str) -> bool {
    const NUMBERS: &[&str] = &[
        "atoi",
        "int",
        "int64",
        "float64",
        "len",
        "add",
        "add1",
        "sub",
        "mul",
        "div",
        "mod",
        "max",
        "min",
        "biggest",
        "floor",
        "ceil",
        "round",
        "toDecimal",
        "index",
        "first",
        "last",
        "get",
        "dig",
        "default",
        "coalesce",
        "ternary",
        "fromJson",
        "mustFromJson",
        "fromJSON",
        "valueOrDefault",
        "deepCopy",
        "addf",
        "add1f",
        "subf",
        "mulf",
        "divf",
        "maxf",
        "minf",
    ];
    p.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| NUMBERS.contains(&w))
}

fn gen_template(r: &mut Rng) -> String {
    let mut g = Gen {
        r,
        vars: Vec::new(),
        depth: 0,
        ranges: 0,
    };
    let n = 1 + g.r.below(3);
    let mut t = g.body(n);
    if g.r.chance(5) {
        t = format!(
            "{{{{ define \"d\" }}}}{}{{{{ end }}}}{}{{{{ template \"d\" . }}}}",
            g.body(1),
            t
        );
    }
    t
}

fn generated_templates_agree_with_go() {
    let mut o = Oracle::get("generated_templates_agree_with_go");
    let (iterations, seed, mut r) = go_oracle::generator(4000);
    let mut tally = Tally::default();
    let mut view = Tally::default();
    let mut done = 0;
    while done < iterations {
        let n = (iterations - done).min(2000);
        let cases: Vec<(String, Value)> = (0..n)
            .map(|_| {
                let d = gen_data(&mut r);
                (gen_template(&mut r), d)
            })
            .collect();
        if let Some(path) = std::env::var_os("OUTRIGGER_DIFF_DUMP") {
            // One JSON line per input, before Go sees it (to find an input that crashes Go).
            let lines: String = cases
                .iter()
                .map(|(t, d)| format!("{}\n", json!({"template": t, "data": d})))
                .collect();
            std::fs::write(&path, lines).expect("write OUTRIGGER_DIFF_DUMP");
        }
        let reqs: Vec<(&str, &Value)> = cases.iter().map(|(t, d)| (t.as_str(), d)).collect();
        let answers = o.render_phase_many("inject", &reqs);
        for ((t, d), a) in cases.iter().zip(answers) {
            let g = go(a);
            // The same template over the data viewed in place (Istio's `.Values` path), where
            // it does not change maps of the data.
            if !["set ", "unset ", "merge", "mergeOverwrite"]
                .iter()
                .any(|m| t.contains(m))
            {
                let v = match Template::parse("inject", t) {
                    Err(e) => Outcome::Parse(e.to_string()),
                    Ok(tp) => match tp.render_json_view(d) {
                        Ok(s) => Outcome::Ok(s),
                        Err(e) => Outcome::Exec(e.to_string()),
                    },
                };
                view.add(t, d, v, g.clone());
            }
            tally.add(t, d, ours(t, d), g);
        }
        done += n;
    }
    eprintln!("seed {seed:#x}");
    view.report("generated, data viewed in place");
    tally.check("generated");
    view.check("generated, data viewed in place");
}

// ---------------------------------------------------------------- limits

/// Go's own limits, answered with Go's outcome and message: nested parentheses up to and beyond
/// `maxStackDepth` (10,000), `template` calls up to and beyond `maxExecDepth` (100,000). Deep
/// `if` nesting within outrigger's bound renders as in Go; beyond it (Go has no limit) outrigger
/// refuses, a documented difference checked in the engine's own tests.
fn depth_limits_agree_with_go() {
    let mut o = Oracle::get("depth_limits_agree_with_go");
    let parens = |n: usize| format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n));
    let recursion = |calls: usize| {
        format!(
            "{{{{define \"r\"}}}}{{{{if lt . {}}}}}{{{{template \"r\" (add1 .)}}}}{{{{end}}}}{{{{end}}}}{{{{template \"r\" 0}}}}done",
            calls - 1
        )
    };
    let ifs = |n: usize| format!("{}x{}", "{{if true}}\n".repeat(n), "{{end}}".repeat(n));
    let cases = [
        parens(10_000),
        parens(10_001),
        parens(20_000),
        recursion(100_000),
        recursion(100_001),
        ifs(2_000),
        ifs(10_000),
    ];
    let data = json!({});
    let reqs: Vec<(&str, &Value)> = cases.iter().map(|t| (t.as_str(), &data)).collect();
    let answers = o.render_phase_many("inject", &reqs);
    let mut disagreements = Vec::new();
    for (src, answer) in cases.iter().zip(answers) {
        let (ours, go) = (ours(src, &data), go(answer));
        if ours != go {
            let cut = |o: &Outcome| {
                let s = format!("{o:?}");
                s.chars().take(300).collect::<String>()
            };
            disagreements.push(format!(
                "template of {} bytes starting {:?}\n  ours {}\n  go   {}",
                src.len(),
                &src[..60.min(src.len())],
                cut(&ours),
                cut(&go)
            ));
        }
    }
    eprintln!(
        "depth limits: {} inputs, {} disagreements",
        cases.len(),
        disagreements.len()
    );
    go_oracle::assert_no_disagreements("depth limits", &disagreements, 10);
}

// ---------------------------------------------------------------- dates

/// The stopped clocks the date table runs under (Go's `now` and `time.Local`; outrigger's
/// [`Clock`] at the same instant, Unix seconds and nanoseconds). A quarter second past the
/// second keeps `ago` and `durationRound` away from their rounding edges (the oracle measures
/// them from the real clock moved to the fixed one, to within microseconds).
const CLOCKS: &[(GoClock, i64, u32)] = &[
    (
        GoClock {
            now: "2025-06-01T12:00:00.25Z",
            local: "UTC",
        },
        1_748_779_200,
        250_000_000,
    ),
    (
        GoClock {
            now: "2024-02-29T23:30:00.25Z",
            local: "America/New_York",
        },
        1_709_249_400,
        250_000_000,
    ),
    (
        GoClock {
            now: "1999-12-31T20:45:10.25Z",
            local: "Asia/Kolkata",
        },
        946_673_110,
        250_000_000,
    ),
];

/// Sprig's date functions over generic data: layouts, zones, parsing and its errors, durations,
/// and how a `time.Time` prints, encodes and converts.
const DATE_TEMPLATES: &[&str] = &[
    "{{ now }}",
    "{{ now | date \"2006-01-02T15:04:05.000Z07:00\" }}",
    "{{ date \"Mon Jan _2 15:04:05 MST 2006\" now }}",
    "{{ date \"Monday, 02-Jan-06 15:04:05 MST\" now }}",
    "{{ date \"3:04PM|03:04:05.999999999 pm|Jan _2 __2 002\" now }}",
    "{{ date \"2006-01-02T15:04:05Z07:00:00|-07|Z07|-070000|-07:00:00|Z0700\" now }}",
    "{{ date \".000000|,999|.9|.0000000000|Janx Monx MSTx|_2006|06 1 2 3 4 5\" now }}",
    "{{ date \"January Monday PM pm\" (now | dateModify \"-13h\") }}",
    "{{ date \"2006-01-02\" 0 }}",
    "{{ date \"15:04:05 -0700 MST\" (int64 1700000000) }}",
    "{{ date \"2006\" .s }}|{{ date \"2006\" 1.5 }}|{{ date \"2006\" .missing }}",
    "{{ dateInZone \"2006-01-02 15:04 MST -07:00\" now \"Europe/Paris\" }}",
    "{{ dateInZone \"15:04 MST -0700\" now \"Asia/Kathmandu\" }}",
    "{{ dateInZone \"15:04 MST -0700\" now \"America/St_Johns\" }}",
    "{{ dateInZone \"15:04 MST\" now \"America/Sao_Paulo\" }}",
    "{{ dateInZone \"15:04 MST\" now \"Nowhere/Atlantis\" }}|{{ dateInZone \"15:04 MST\" now \"\" }}",
    "{{ dateInZone \"15:04 MST\" now \"Local\" }}|{{ dateInZone \"15:04 MST\" now \"europe/paris\" }}",
    "{{ dateInZone \"15:04 MST\" now \"../etc/passwd\" }}|{{ date_in_zone \"15:04 MST\" 0 \"Asia/Tokyo\" }}",
    "{{ htmlDate now }}|{{ htmlDate 86399 }}|{{ htmlDateInZone now \"Pacific/Kiritimati\" }}",
    "{{ now | dateModify \"-1.5h\" }}",
    "{{ dateModify \"bad\" now }}|{{ date_modify \"24h\" now | date \"2006-01-02\" }}",
    "{{ mustDateModify \"bad\" now }}",
    "{{ must_date_modify \"90m\" now }}",
    "{{ dateModify \"1h\" \"x\" }}",
    "{{ dateModify \"1h\" .missing }}",
    "{{ ago now }}|{{ ago 0 }}|{{ ago (int64 1600000000) }}|{{ ago .s }}",
    "{{ ago (now | dateModify \"-36h5m3.3s\") }}|{{ ago (toDate \"2006-01-02\" \"2030-01-01\") }}",
    "{{ duration 90 }}|{{ duration \"90\" }}|{{ duration (int64 3700) }}|{{ duration \"x\" }}|{{ duration \"-5\" }}",
    "{{ durationRound \"2h10m\" }}|{{ durationRound \"bad\" }}|{{ durationRound (int64 3600000000001) }}",
    "{{ durationRound (toDate \"2006-01-02\" \"2020-05-17\") }}|{{ durationRound 0 }}|{{ durationRound \"-400h\" }}",
    "{{ durationRound \"8761h\" }}|{{ durationRound \"721h\" }}|{{ durationRound \"1s\" }}|{{ durationRound now }}",
    "{{ toDate \"2006-01-02\" \"2024-02-29\" }}|{{ toDate \"2006-01-02\" \"2023-02-29\" }}",
    "{{ toDate \"2006-01-02 15:04:05 MST\" \"2024-07-04 12:00:00 EDT\" }}",
    "{{ toDate \"2006-01-02 15:04:05 MST\" \"2024-01-04 12:00:00 IST\" }}",
    "{{ toDate \"2006-01-02 15:04:05 MST\" \"2024-07-04 12:00:00 PST\" }}",
    "{{ toDate \"2006-01-02 15:04 MST\" \"2024-07-04 12:00 GMT+3\" }}|{{ toDate \"2006 MST\" \"2024 UTC\" }}",
    "{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-01T10:00:00+05:30\" }}",
    "{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-01T10:00:00-05:00\" }}",
    "{{ toDate \"Jan 2 2006 3:04pm\" \"feb 3 2021 11:59pm\" }}|{{ toDate \"Jan 2 2006 3:04pm\" \"feb 3 2021 11:59PM\" }}",
    "{{ toDate \"002 2006\" \"060 2024\" }}|{{ toDate \"__2 2006\" \"  9 2023\" }}",
    "{{ toDate \"2006-01-02  15:04\" \"2024-05-06 7:08\" }}|{{ toDate \"Monday 2006\" \"FRIDAY 2021\" }}",
    "{{ mustToDate \"2006-01-02\" \"2023-13-01\" }}",
    "{{ mustToDate \"2006-01-02\" \"2024-1-1\" }}",
    "{{ mustToDate \"2006-01-02\" \"2024-01-01x\" }}",
    "{{ mustToDate \"15:04\" \"24:00\" }}",
    "{{ mustToDate \"2006-01-02 15:04:05.000\" \"2024-01-01 10:00:00.12\" }}",
    "{{ mustToDate \"2006-01-02 15:04:05\" \"2024-01-01 10:00:00.123456789123\" }}",
    "{{ mustToDate \"Mon 2006\" \"Xyz 2024\" }}",
    "{{ mustToDate \"2006 MST\" \"2024 abc\" }}",
    "{{ mustToDate \"2006 -07:00\" \"2024 +25:00\" }}",
    "{{ mustToDate \"2006-002\" \"2023-366\" }}",
    "{{ mustToDate \"2006-01-002\" \"2024-03-061\" }}|{{ mustToDate \"2006-01-002\" \"2024-02-061\" }}",
    "{{ mustToDate \"2006 -0700\" \"2024 +ü100\" }}",
    "{{ mustToDate \"2006 \\\"x\" \"2024 \\\"y\" }}",
    "{{ mustToDate \"\" \"\" }}|{{ mustToDate \"06\" \"68\" }}|{{ mustToDate \"06\" \"69\" }}",
    "{{ unixEpoch now }}|{{ unixEpoch (toDate \"2006\" \"1969\") }}",
    "{{ unixEpoch 5 }}",
    "{{ typeOf now }}|{{ kindOf now }}|{{ empty now }}|{{ if now }}y{{ end }}",
    "{{ toJson now }}|{{ toJson (toDate \"2006-01-02T15:04:05Z07:00\" \"2024-01-01T10:00:00+05:30\") }}",
    "{{ toYaml (dict \"t\" now) }}",
    "{{ printf \"%v|%s|%q\" now now now }}|{{ print now }}",
    "{{ list now (toDate \"2006\" \"2001\") }}|{{ dict \"a\" now }}",
    "{{ toDate \"2006\" \"0001\" }}|{{ toDate \"2006\" \"x\" | unixEpoch }}",
    "{{ now.Year }} {{ now.Day }} {{ now.Hour }} {{ now.Minute }} {{ now.Second }} {{ now.Nanosecond }} {{ now.YearDay }}",
    "{{ now.Unix }} {{ now.UnixMilli }} {{ now.UnixMicro }} {{ now.UnixNano }} {{ typeOf now.Unix }} {{ typeOf now.Year }}",
    "{{ now.IsZero }} {{ (toDate \"x\" \"y\").IsZero }} {{ now.UTC }} {{ now.Local }} {{ now.String }}",
    "{{ (toDate \"2006-01-02\" \"1900-03-01\").UnixNano }}|{{ (toDate \"2006\" \"1969\").UnixMilli }}",
    "{{ now.NoSuch }}",
];

/// `metav1.Time` fields of the typed `.ObjectMeta`: the object metadata each template runs over.
fn typed_metas() -> Vec<Value> {
    vec![
        json!({"name": "p", "creationTimestamp": null}),
        json!({"name": "p"}),
        json!({"creationTimestamp": "2024-01-01T00:00:00Z"}),
        json!({"creationTimestamp": "2024-07-01T12:30:45+02:00", "deletionTimestamp": "2024-07-02T00:00:00Z"}),
        json!({"creationTimestamp": "1969-12-31T23:59:59-00:30"}),
    ]
}

/// Templates over the typed `.ObjectMeta`: a `metav1.Time` prints through `time.Time`'s
/// `String` in the local zone, and encodes as UTC RFC 3339 (null when zero).
const TYPED_TEMPLATES: &[&str] = &[
    "{{ .ObjectMeta.CreationTimestamp }}",
    "{{ .ObjectMeta.DeletionTimestamp }}",
    "{{ toJson .ObjectMeta.CreationTimestamp }}|{{ toJson .ObjectMeta.DeletionTimestamp }}",
    "{{ toYaml (dict \"c\" .ObjectMeta.CreationTimestamp) }}",
    "{{ printf \"%v|%s\" .ObjectMeta.CreationTimestamp .ObjectMeta.CreationTimestamp }}",
    "{{ typeOf .ObjectMeta.CreationTimestamp }}|{{ .ObjectMeta.CreationTimestamp.String }}",
    "{{ date \"2006-01-02 15:04\" .ObjectMeta.CreationTimestamp }}",
    "{{ dateModify \"1h\" .ObjectMeta.CreationTimestamp }}",
];

/// Render `src` over typed data (`.ObjectMeta` as `metav1.ObjectMeta`) with `clock`.
fn ours_typed(src: &str, meta: &Value, clock: &Clock) -> Outcome {
    let values = json!({});
    let env = BTreeMap::new();
    let data = TemplateData {
        kind: "Pod",
        api_version: "v1",
        deployment_name: "",
        deployment_namespace: "",
        object_meta: meta,
        spec: &Value::Null,
        proxy_config: &Value::Null,
        mesh_config: &Value::Null,
        values: &values,
        revision: "",
        native_sidecars: false,
        proxy_image: "",
        proxy_init_image: "",
        proxy_uid: 1337,
        proxy_gid: 1337,
        inbound_traffic_policy_mode: "",
        compliance_policy: "",
        env: &env,
        proto_json: outrigger_inject::mesh::proto_to_json,
    };
    match Template::parse("inject", src) {
        Err(e) => Outcome::Parse(e.to_string()),
        Ok(t) => match t.render_at(&data, clock) {
            Ok(s) => Outcome::Ok(s),
            Err(e) => Outcome::Exec(e.to_string()),
        },
    }
}

fn dates_agree_with_go() {
    let mut o = Oracle::get("dates_agree_with_go");
    let mut tally = Tally::default();
    let mut typed = Tally::default();
    let data = json!({"s": "hello"});
    let metas = typed_metas();
    for &(go_clock, unix, nsec) in CLOCKS {
        let clock = Clock::fixed(unix, nsec, go_clock.local).expect("the test's zones load");
        let cases: Vec<(&str, &Value)> = DATE_TEMPLATES.iter().map(|t| (*t, &data)).collect();
        for ((t, d), a) in cases.iter().zip(o.render_at_many(go_clock, false, &cases)) {
            let ours = match Template::parse("inject", t) {
                Err(e) => Outcome::Parse(e.to_string()),
                Ok(tp) => match tp.render_json_at(d, &clock) {
                    Ok(s) => Outcome::Ok(s),
                    Err(e) => Outcome::Exec(e.to_string()),
                },
            };
            tally.add(
                t,
                &json!({"data": d, "clock": go_clock.now, "local": go_clock.local}),
                ours,
                go(a),
            );
        }
        let typed_data: Vec<Value> = metas
            .iter()
            .map(|m| json!({"ObjectMeta": m, "Values": {}}))
            .collect();
        let mut typed_cases: Vec<(&str, &Value)> = Vec::new();
        for t in TYPED_TEMPLATES {
            for d in &typed_data {
                typed_cases.push((t, d));
            }
        }
        let answers = o.render_at_many(go_clock, true, &typed_cases);
        for ((t, d), a) in typed_cases.iter().zip(answers) {
            let ours = ours_typed(t, &d["ObjectMeta"], &clock);
            typed.add(t, &json!({"data": d, "local": go_clock.local}), ours, go(a));
        }
    }
    tally.check("Sprig dates at fixed clocks");
    typed.check("metav1.Time through templates");
}

// ---------------------------------------------------------------- `.Values` changed in place

/// Templates that change istiod's `.Values` in place (Sprig's `set`, `unset` and the `merge`
/// family write into the map they are given) and read it afterwards: Go's maps are shared, so
/// a later `.Values` sees the change. Each ends by printing `.Values` whole.
const VALUES_TEMPLATES: &[&str] = &[
    "{{ $_ := set .Values \"a\" 1 }}{{ .Values.a }}",
    "{{ $_ := unset .Values \"g\" }}{{ .Values.g }}",
    "{{ $_ := mergeOverwrite .Values (dict \"a\" 1) }}{{ .Values.a }}",
    "{{ $_ := merge .Values (dict \"a\" 1 \"z\" 2) }}{{ .Values.a }} {{ .Values.z }}",
    "{{ $_ := mustMergeOverwrite .Values (dict \"g\" (dict \"p\" (dict \"tag\" \"x\"))) }}{{ .Values.g.p.tag }} {{ .Values.g.p.hub }}",
    "{{ $_ := mustMerge .Values (dict \"g\" (dict \"p\" (dict \"tag\" \"x\" \"new\" 1))) }}{{ .Values.g.p.tag }} {{ .Values.g.p.new }}",
    "{{ $_ := set .Values.g \"p\" \"flat\" }}{{ .Values.g.p }}",
    "{{ $g := .Values.g }}{{ $_ := set $g \"k\" 5 }}{{ .Values.g.k }}",
    "{{ $_ := mergeOverwrite .Values.g (dict \"l\" (list 9)) }}{{ .Values.g.l }}",
    "{{ $_ := merge .Values.g (dict \"l\" (list 9)) }}{{ .Values.g.l }}",
    "{{ $_ := mergeOverwrite .Values.g (dict \"e\" \"\") }}{{ .Values.g.e }}",
    "{{ $_ := mergeOverwrite .Values (dict \"g\" nil) }}{{ .Values.g }}",
    "{{ $_ := merge (dict) .Values }}{{ $_ := set .Values \"b\" 2 }}{{ .Values.b }}",
    "{{ $c := merge (dict) .Values }}{{ $_ := set $c.g \"shared\" true }}{{ .Values.g.shared }}",
    "{{ $c := deepCopy .Values }}{{ $_ := set $c.g \"copy\" true }}{{ .Values.g.copy }}",
    "{{ range $k, $v := .Values.g }}{{ $_ := set $.Values \"seen\" $k }}{{ end }}{{ .Values.seen }}",
    "{{ with .Values.g }}{{ $_ := set . \"w\" 1 }}{{ end }}{{ .Values.g.w }}",
    "{{ define \"d\" }}{{ $_ := set .Values \"t\" 1 }}{{ end }}{{ template \"d\" . }}{{ .Values.t }}",
    "{{ $_ := set .Values \"v\" .Values.g }}{{ $_ := set .Values.v \"x\" 1 }}{{ .Values.g.x }}",
    "{{ $_ := unset .Values.g \"p\" }}{{ $_ := set .Values.g \"p\" (dict) }}{{ .Values.g.p }}",
    "{{ if set .Values \"i\" 1 }}{{ .Values.i }}{{ end }}",
    "{{ $_ := pick .Values \"g\" | mergeOverwrite (dict \"z\" 1) }}{{ .Values.z }}",
];

/// The `.Values` the table runs over (`g` is a nested map with a list, an empty string, a map).
fn values_data() -> Vec<Value> {
    vec![
        json!({"g": {"p": {"hub": "docker.io", "tag": "1.0"}, "l": [1, 2], "e": "x"}, "a": 0}),
        json!({"g": {}}),
        json!({}),
    ]
}

/// Render `src` over typed data whose `.Values` is `values`, as istiod does.
fn ours_values(src: &str, values: &Value, clock: &Clock) -> Outcome {
    let env = BTreeMap::new();
    let meta = json!({"name": "p"});
    let data = TemplateData {
        kind: "Pod",
        api_version: "v1",
        deployment_name: "",
        deployment_namespace: "",
        object_meta: &meta,
        spec: &Value::Null,
        proxy_config: &Value::Null,
        mesh_config: &Value::Null,
        values,
        revision: "",
        native_sidecars: false,
        proxy_image: "",
        proxy_init_image: "",
        proxy_uid: 1337,
        proxy_gid: 1337,
        inbound_traffic_policy_mode: "",
        compliance_policy: "",
        env: &env,
        proto_json: outrigger_inject::mesh::proto_to_json,
    };
    match Template::parse("inject", src) {
        Err(e) => Outcome::Parse(e.to_string()),
        Ok(t) => match t.render_at(&data, clock) {
            Ok(s) => Outcome::Ok(s),
            Err(e) => Outcome::Exec(e.to_string()),
        },
    }
}

/// Compare `(template, .Values)` pairs rendered as istiod renders (typed data, `.Values` a
/// generic map changed in place) with Go's; each template is followed by `.Values` printed as
/// JSON, so the change itself is compared, not only what the template printed.
fn compare_values(o: &mut Oracle, cases: &[(String, Value)], tally: &mut Tally) {
    let (go_clock, unix, nsec) = CLOCKS[0];
    let clock = Clock::fixed(unix, nsec, go_clock.local).expect("the test's zones load");
    for chunk in cases.chunks(1000) {
        let srcs: Vec<String> = chunk
            .iter()
            .map(|(t, _)| format!("{t}|{{{{ toJson .Values }}}}"))
            .collect();
        let data: Vec<Value> = chunk
            .iter()
            .map(|(_, v)| json!({"ObjectMeta": {"name": "p"}, "Values": v}))
            .collect();
        let reqs: Vec<(&str, &Value)> = srcs.iter().map(String::as_str).zip(&data).collect();
        let answers = o.render_at_many(go_clock, true, &reqs);
        for ((src, (_, values)), a) in srcs.iter().zip(chunk).zip(answers) {
            tally.add(src, values, ours_values(src, values, &clock), go(a));
        }
    }
}

fn values_mutation_agrees_with_go() {
    let mut o = Oracle::get("values_mutation_agrees_with_go");
    let mut cases: Vec<(String, Value)> = Vec::new();
    for t in VALUES_TEMPLATES {
        for v in values_data() {
            cases.push((t.to_string(), v));
        }
    }
    let mut tally = Tally::default();
    compare_values(&mut o, &cases, &mut tally);
    tally.check("templates changing .Values");

    // Generated templates that call `set`, `unset` or a merge, run with `.Values` as their dot
    // (`with .Values`): the generator's data becomes istiod's `.Values`.
    let (iterations, seed, mut r) = go_oracle::generator(4000);
    let mut generated = Vec::new();
    while generated.len() < iterations / 4 {
        let d = gen_data(&mut r);
        let t = gen_template(&mut r);
        let mutates = ["set ", "unset ", "merge"].iter().any(|m| t.contains(m));
        // `$` is the typed root here (not the data) and `define` cannot sit inside `with`.
        if mutates && !t.contains('$') && !t.contains("define") {
            generated.push((format!("{{{{ with .Values }}}}{t}{{{{ end }}}}"), d));
        }
    }
    let mut gen_tally = Tally::default();
    compare_values(&mut o, &generated, &mut gen_tally);
    eprintln!("seed {seed:#x}");
    gen_tally.check("generated templates changing .Values");
}

fn main() {
    harness::run(vec![
        harness::trial(
            "dates_agree_with_go",
            &[harness::Need::Oracle],
            dates_agree_with_go,
        ),
        harness::trial(
            "template_table_agrees_with_go",
            &[harness::Need::Oracle],
            template_table_agrees_with_go,
        ),
        harness::trial(
            "generated_templates_agree_with_go",
            &[harness::Need::Oracle],
            generated_templates_agree_with_go,
        ),
        harness::trial(
            "values_mutation_agrees_with_go",
            &[harness::Need::Oracle],
            values_mutation_agrees_with_go,
        ),
        harness::trial(
            "depth_limits_agree_with_go",
            &[harness::Need::Oracle],
            depth_limits_agree_with_go,
        ),
    ]);
}
