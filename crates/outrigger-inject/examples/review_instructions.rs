//! One AdmissionReview of a size class answered once, in process, for instruction counts under
//! callgrind (`scripts/linearity.sh`; the same review as `tests/linearity.rs` counts):
//!
//! ```sh
//! cargo build --profile bench -p outrigger-inject --example review_instructions
//! valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect='review_instructions::measured' \
//!     target/release/examples/review_instructions containers-1000
//! ```
//!
//! A review of the `hello` pod first builds the lazily initialised tables; the measured review
//! is of another pod, so it takes the general path (no render-memo answer): decode, decide,
//! render, merge, finish, patch and the response, everything of `webhook::review`. With a second
//! argument `repeated`, the same review is answered twice first, so the measured one is a
//! repeated pod's (answered from the render memo when the pod is small enough to be keyed).
//! With `distinct`, the measured pod's `app` label is one no review has seen (`h000000001`, as
//! `scripts/cpu-per-injection.sh`'s distinct mode sends): no memo answers any part of it.
//! Size classes are those of `examples/review_floor.rs` (`containers-N`, `env-N`, ...).

use outrigger_inject::webhook::{self, Context, Outcome};

#[path = "../benches/support/mod.rs"]
mod support;

/// The allocator the `outrigger` binary ships with, so the counts are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let Some(class) = std::env::args().nth(1) else {
        eprintln!(
            "usage: review_instructions CLASS (hello, env-N, containers-N, managedfields-KB)"
        );
        std::process::exit(2);
    };
    if support::class_pod(&class).is_none() {
        eprintln!("unknown class {class:?}: hello, env-N, containers-N or managedfields-KB");
        std::process::exit(2);
    }
    let s = support::snapshot();
    let ctx = support::webhook_context(&s);
    let warm = webhook::review(&support::class_review_body("hello"), "/inject", &ctx);
    assert_eq!(warm.outcome, Outcome::Injected, "warm-up review");
    let mut body = support::class_review_body(&class);
    match std::env::args().nth(2).as_deref() {
        Some("repeated") => {
            for _ in 0..2 {
                webhook::review(&body, "/inject", &ctx);
            }
        }
        Some("distinct") => {
            let text = String::from_utf8(body).expect("UTF-8 review");
            assert!(
                text.contains(r#""app":"hello""#),
                "the pod has the app label"
            );
            body = text
                .replacen(r#""app":"hello""#, r#""app":"h000000001""#, 1)
                .into_bytes();
        }
        _ => {}
    }
    let reviewed = measured(&body, &ctx);
    assert_eq!(reviewed.outcome, Outcome::Injected, "measured review");
    println!("bytes={} response={}", body.len(), reviewed.response.len());
}

/// The measured review (callgrind: `--toggle-collect=review_instructions::measured`).
#[inline(never)]
fn measured(body: &[u8], ctx: &Context<'_>) -> webhook::Reviewed {
    std::hint::black_box(webhook::review(std::hint::black_box(body), "/inject", ctx))
}
