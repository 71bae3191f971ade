use outrigger_inject::webhook;
#[path = "../benches/support/mod.rs"]
mod support;
fn main() {
    let s = support::snapshot();
    let ctx = support::webhook_context(&s);
    let class = std::env::args().nth(1).unwrap();
    let body = support::class_review_body(&class);
    let text = String::from_utf8(body).unwrap();
    for app in ["hello", "h000000001", "h000000002"] {
        let b = text.replacen(r#""app":"hello""#, &format!(r#""app":"{app}""#), 1);
        let r = webhook::review(b.as_bytes(), "/inject", &ctx);
        std::fs::write(
            format!("/tmp/after2.patch.{class}.{app}.json"),
            r.patch.unwrap(),
        )
        .unwrap();
    }
}
