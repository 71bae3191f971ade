//! Hostile templates: Go's own limits with Go's messages (10,000 nested parentheses, 100,000
//! nested `template` calls), outrigger's bound on nested control actions, and deep trees parsed,
//! executed, printed in errors and dropped without a stack overflow. Each case runs on a thread
//! with a small stack, so the result cannot depend on how much stack the test harness gives.

use serde_json::json;

use super::parse::{MAX_CONTROL_DEPTH, MAX_PAREN_DEPTH};
use super::*;

/// Run `f` on a thread with a 256 KiB stack (well below a default thread's 2 MiB).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    on_stack(256 * 1024, f)
}

fn on_stack<T: Send + 'static>(bytes: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(bytes)
        .spawn(f)
        .expect("spawn test thread")
        .join()
        .expect("no panic")
}

fn render_on(stack: usize, src: String) -> std::result::Result<String, String> {
    on_stack(stack, move || {
        let t = Template::parse("inject", &src).map_err(|e| e.to_string())?;
        t.render_json(&json!({})).map_err(|e| e.to_string())
    })
}

fn parse_and_render(src: String) -> std::result::Result<String, String> {
    render_on(256 * 1024, src)
}

/// Values a template builds are walked by plain recursion (printing, encoding, dropping): their
/// bound is sized for the smallest stack the project runs templates on, a default thread's.
fn render_on_default_stack(src: String) -> std::result::Result<String, String> {
    render_on(2 * 1024 * 1024, src)
}

/// `depth` parentheses around `1`.
fn parens(depth: usize) -> String {
    format!("{{{{ {}1{} }}}}", "(".repeat(depth), ")".repeat(depth))
}

/// `depth` nested `{{if true}}`, one per line, around `x`.
fn nested_ifs(depth: usize) -> String {
    format!(
        "{}x\n{}",
        "{{if true}}\n".repeat(depth),
        "{{end}}\n".repeat(depth)
    )
}

#[test]
fn parentheses_nest_up_to_go_limit() {
    assert_eq!(parse_and_render(parens(MAX_PAREN_DEPTH)), Ok("1".into()));
    // Go: `max expression depth exceeded` at the parenthesis beyond maxStackDepth.
    for depth in [MAX_PAREN_DEPTH + 1, 20_000] {
        assert_eq!(
            parse_and_render(parens(depth)),
            Err("template: inject:1: max expression depth exceeded".into()),
            "{depth} parentheses"
        );
    }
}

#[test]
fn nested_ifs_within_bound_render() {
    let out = parse_and_render(nested_ifs(2_000)).expect("2,000 nested ifs render");
    assert_eq!(out.trim_matches('\n'), "x");
    let out = parse_and_render(nested_ifs(MAX_CONTROL_DEPTH)).expect("the bound itself renders");
    assert_eq!(out.trim_matches('\n'), "x");
}

#[test]
fn nested_ifs_beyond_bound_are_refused_with_template_and_line() {
    let e = parse_and_render(nested_ifs(20_000)).unwrap_err();
    // The action beyond the bound is on line MAX_CONTROL_DEPTH + 1.
    let want = format!(
        "template: inject:{}: {{{{if}}}} nested too deep: more than {MAX_CONTROL_DEPTH} nested \
         if/range/with/block actions (outrigger's limit; Go has none)",
        MAX_CONTROL_DEPTH + 1
    );
    assert_eq!(e, want);
}

#[test]
fn else_if_chains_and_blocks_share_the_bound() {
    let n = MAX_CONTROL_DEPTH + 5;
    let chain = format!(
        "{{{{if false}}}}{}y{{{{end}}}}",
        "{{else if false}}".repeat(n)
    );
    let e = parse_and_render(chain).unwrap_err();
    assert!(e.contains("{{if}} nested too deep"), "{e}");
    let blocks = format!("{}z{}", "{{block \"b\" .}}".repeat(n), "{{end}}".repeat(n));
    let e = parse_and_render(blocks).unwrap_err();
    assert!(e.contains("{{block}} nested too deep"), "{e}");
}

/// `calls` nested `template` invocations (the main body's call included).
fn recursion(calls: usize) -> String {
    format!(
        "{{{{define \"r\"}}}}{{{{if lt . {}}}}}{{{{template \"r\" (add1 .)}}}}{{{{end}}}}{{{{end}}}}{{{{template \"r\" 0}}}}done",
        calls - 1
    )
}

#[test]
fn template_recursion_stops_at_go_limit() {
    assert_eq!(
        parse_and_render(recursion(exec::MAX_DEPTH)),
        Ok("done".into())
    );
    let e = parse_and_render(recursion(exec::MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(
        e,
        "template: inject:1:43: executing \"r\" at <{{template \"r\" (add1 .)}}>: \
         exceeded maximum template depth (100000)"
    );
}

#[test]
fn deep_nodes_print_in_errors_and_drop() {
    // Go prints the failing `template` node whole, its 10,000 nested parentheses included.
    let src = format!(
        "{{{{template \"nope\" {}1{}}}}}",
        "(".repeat(MAX_PAREN_DEPTH),
        ")".repeat(MAX_PAREN_DEPTH)
    );
    let e = parse_and_render(src.clone()).unwrap_err();
    assert_eq!(
        e,
        format!(
            "template: inject:1:11: executing \"inject\" at <{src}>: template \"nope\" not defined"
        )
    );
    // Deep trees built and dropped on a small stack.
    on_small_stack(|| {
        let t = Template::parse("inject", &nested_ifs(MAX_CONTROL_DEPTH)).expect("parses");
        drop(t);
        let t = Template::parse("inject", &parens(MAX_PAREN_DEPTH)).expect("parses");
        drop(t);
    });
}

/// `$d` nested `depth` times in `dict "a"`, then `tail`.
fn nested_dicts(depth: usize, tail: &str) -> String {
    format!(
        "{{{{$d := dict}}}}{{{{range until {depth}}}}}{{{{$d = dict \"a\" $d}}}}{{{{end}}}}{tail}"
    )
}

#[test]
fn values_built_by_a_template_nest_up_to_a_bound() {
    let depth = exec::MAX_VALUE_DEPTH - 1;
    let want = format!("{}{{}}{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    for f in ["toJson", "mustToJson", "toRawJson"] {
        let out = render_on_default_stack(nested_dicts(depth, &format!("{{{{ {f} $d }}}}")));
        assert_eq!(out.as_deref(), Ok(want.as_str()), "{f}");
    }
    let out = render_on_default_stack(nested_dicts(
        depth,
        "{{ $d | toYaml | len }}{{ $d | print | len }}",
    ));
    assert!(out.is_ok(), "{out:?}");
    // Beyond the bound: an error at the call that nests too deep, whatever comes next; the
    // same through `list`, `set` and a template recursion that wraps dot.
    for tail in ["{{ toJson $d }}", "{{ print $d }}", "{{ deepCopy $d }}", ""] {
        let e = render_on_default_stack(nested_dicts(100_000, tail)).unwrap_err();
        assert_eq!(
            e,
            "template: inject:1:43: executing \"inject\" at <dict \"a\" $d>: error calling dict: \
             value nested deeper than 512 maps and lists (outrigger's limit; Go has none)"
        );
    }
    for src in [
        "{{$l := list}}{{range until 1000}}{{$l = list $l}}{{end}}",
        "{{$m := dict}}{{range until 1000}}{{$m = set (dict) \"k\" $m}}{{end}}",
        "{{define \"r\"}}{{template \"r\" (dict \"a\" .)}}{{end}}{{template \"r\" 0}}",
    ] {
        let e = render_on_default_stack(src.to_string()).unwrap_err();
        assert!(
            e.contains("value nested deeper than 512 maps and lists"),
            "{src}: {e}"
        );
    }
}

/// Render `src` over `{}` with a work budget in scope; the result and the work counted.
fn render_with_budget(
    src: &str,
    budget: &std::sync::Arc<crate::work::Budget>,
) -> (Result<String, String>, u64) {
    let t = Template::parse("inject", src).expect("parses");
    let r = crate::work::scope(budget, || {
        t.render_json(&json!({})).map_err(|e| e.to_string())
    });
    (r, budget.work())
}

/// The work of a template that appends `n` items to a list one at a time, as Istio's templates
/// do over the pod's containers.
fn append_loop_work(n: usize) -> u64 {
    let src = format!(
        "{{{{ $l := list }}}}{{{{ range $i := until {n} }}}}{{{{ $l = append $l $i }}}}{{{{ end }}}}{{{{ len $l }}}} {{{{ last $l }}}}"
    );
    let (r, work) = render_with_budget(&src, &crate::work::Budget::new(None));
    assert_eq!(r, Ok(format!("{n} {}", n - 1)));
    work
}

#[test]
fn appending_in_a_loop_is_linear() {
    let (one, two) = (append_loop_work(5_000), append_loop_work(10_000));
    let ratio = two as f64 / one as f64;
    assert!(
        ratio <= 2.2,
        "work for 10,000 appends is {ratio:.2}x the work for 5,000 ({two} vs {one})"
    );
}

#[test]
fn appending_keeps_every_list_as_it_was() {
    // Sprig copies: a list appended to twice gives two lists, each with its own last element,
    // and the list appended to is unchanged.
    let src = r#"{{ $a := list 1 2 }}{{ $b := append $a 3 }}{{ $c := append $a 4 }}{{ $d := append $b 5 }}{{ $e := append $b 6 }}{{ $a }} {{ $b }} {{ $c }} {{ $d }} {{ $e }} {{ append (list) 1 }} {{ prepend $b 0 }} {{ $b }}"#;
    let t = Template::parse("inject", src).expect("parses");
    assert_eq!(
        t.render_json(&json!({})).map_err(|e| e.to_string()),
        Ok("[1 2] [1 2 3] [1 2 4] [1 2 3 5] [1 2 3 6] [1] [0 1 2 3] [1 2 3]".into())
    );
    // Appending a list still counts the depth it adds: 512 levels pass, 513 do not.
    let wrapped = |wraps: usize| {
        format!(
            "{{{{ $l := list }}}}{}{{{{ $m := list }}}}{{{{ $m = append $m $l }}}}ok",
            "{{ $l = list $l }}".repeat(wraps)
        )
    };
    let depth = exec::MAX_VALUE_DEPTH;
    assert_eq!(render_on_default_stack(wrapped(depth - 1)), Ok("ok".into()));
    let e = render_on_default_stack(wrapped(depth)).unwrap_err();
    assert!(
        e.contains("error calling append: value nested deeper than 512"),
        "{e}"
    );
}

#[test]
fn a_render_stops_when_its_budget_is_exhausted() {
    // A billion billion steps: only the budget ends it.
    let src = "{{ range until 1048576 }}{{ range until 1048576 }}{{ end }}{{ end }}";
    let budget = crate::work::Budget::new(None);
    budget.cancel();
    let (r, work) = render_with_budget(src, &budget);
    let e = r.expect_err("stopped");
    assert!(e.contains("work budget is exhausted"), "{e}");
    assert!(
        work <= 2 * crate::work::Meter::EVERY,
        "stopped at the first check: {work}"
    );
    // A budget whose deadline passed stops it too; one in force lets a render finish.
    let passed = crate::work::Budget::new(Some(std::time::Instant::now()));
    assert!(render_with_budget(src, &passed).0.is_err());
    let fine = crate::work::Budget::new(None);
    assert_eq!(
        render_with_budget("{{ range until 3000 }}.{{ end }}", &fine)
            .0
            .map(|s| s.len()),
        Ok(3000)
    );
    assert!(fine.work() >= 3000, "every iteration counts");
}

#[test]
fn a_long_list_is_work_counted_as_it_is_built() {
    // One call of `until` builds up to 2^20 items: a work bound stops it part way, as the
    // server's bound on a review tried on a worker thread does, instead of after the whole list.
    let src = "{{ $l := until 1048576 }}{{ len $l }}";
    let bounded = crate::work::Budget::with_work_limit(None, 20_000);
    let (r, work) = render_with_budget(src, &bounded);
    let e = r.expect_err("stopped by the work bound");
    assert!(
        e.contains("error calling until: the review's work budget is exhausted"),
        "{e}"
    );
    assert!(work < 20_000 + 2 * 1024, "stopped near the bound: {work}");
    // Without a bound the same list is built whole, and counted.
    let free = crate::work::Budget::new(None);
    assert_eq!(render_with_budget(src, &free).0, Ok("1048576".into()));
    assert!(free.work() >= 1_048_576, "counted: {}", free.work());
}

#[test]
fn output_is_bounded() {
    let src = "{{ $s := repeat 1048576 \"x\" }}{{ range until 65 }}{{ $s }}{{ end }}";
    let e = parse_and_render(src.into()).expect_err("64 MiB at most");
    assert!(e.contains("output exceeds 67108864 bytes"), "{e}");
}
