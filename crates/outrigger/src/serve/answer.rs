//! Answers: the response body of every route. An answer over [`UNCHARGED`] bytes is charged to
//! the memory budget ([`super::budget`], on its connection's account, so the connection's cap
//! bounds its pending answers too) until it is handed over in full; one that does not fit is
//! replaced by a short `429`. Answers over [`CHUNK`] bytes are handed over in chunks of that
//! size, each a copy (one of [`CHUNK`] or less goes as it is), so that an HTTP/2 stream whose flow-control window stays shut holds at most one chunk
//! outside the answer; and the connection watches every answer's progress: one that makes none
//! within the write timeout closes its connection ([`super::conn`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};

use super::budget::{Account, ByteBudget, Charge, Refusal};
use super::conn::Activity;

/// Answers of at most this many bytes are not charged (health checks, refusals, small reviews):
/// they are few per connection.
pub const UNCHARGED: usize = 4096;

/// The largest piece of an answer handed over at once.
pub const CHUNK: usize = 16 * 1024;

/// A response body: bytes, the budget charge holding them, the progress watch.
#[derive(Debug, Default)]
pub struct Answer {
    data: Bytes,
    charge: Option<Charge>,
    watch: Option<(Arc<Activity>, u64)>,
}

impl Answer {
    /// An answer of `data`, not charged nor watched.
    pub fn new(data: impl Into<Bytes>) -> Answer {
        Answer {
            data: data.into(),
            charge: None,
            watch: None,
        }
    }

    /// Bytes not yet handed over.
    fn len(&self) -> usize {
        self.data.len()
    }
}

impl From<String> for Answer {
    fn from(s: String) -> Answer {
        Answer::new(s)
    }
}

impl From<Vec<u8>> for Answer {
    fn from(v: Vec<u8>) -> Answer {
        Answer::new(v)
    }
}

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.data.is_empty() {
            return Poll::Ready(None);
        }
        let chunk = if this.data.len() <= CHUNK || (this.watch.is_none() && this.charge.is_none()) {
            // One chunk, or unwatched: as it is (its charge stays until the body is dropped, as
            // for the last chunk of a larger answer).
            std::mem::take(&mut this.data)
        } else {
            let n = this.data.len().min(CHUNK);
            let c = Bytes::copy_from_slice(&this.data[..n]);
            this.data.advance(n);
            if this.data.is_empty() {
                // Free the whole answer now; the charge stays until handed over.
                this.data = Bytes::new();
            }
            c
        };
        if let Some((activity, id)) = &this.watch {
            activity.answer_progress(*id);
        }
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.len() as u64)
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some((activity, id)) = &self.watch {
            activity.answer_done(*id);
        }
    }
}

/// Hold the answer of `resp` on its connection: watched by `activity` for the write deadline,
/// and, over [`UNCHARGED`] bytes, charged to `budget` on `account` (preempting it ends the
/// connection). An answer that does not fit is replaced by a `429` naming the refusal (the
/// `reason` of `outrigger_rejected_requests_total` is returned with it).
pub fn hold(
    resp: Response<Answer>,
    budget: &ByteBudget,
    account: &Account,
    activity: &Arc<Activity>,
) -> (Response<Answer>, Option<&'static str>) {
    let (parts, mut body) = resp.into_parts();
    let mut refused = None;
    if body.len() > UNCHARGED {
        let mut charge = budget.charge(account);
        match charge.grow(body.len()) {
            Ok(()) => {
                let a = activity.clone();
                charge.on_preempt(move || a.kill());
                body.charge = Some(charge);
            }
            Err(r) => refused = Some(r),
        }
    }
    let mut resp = match refused {
        None => Response::from_parts(parts, body),
        Some(r) => {
            let mut resp = super::handler::text(
                StatusCode::TOO_MANY_REQUESTS,
                &format!("the answer of {} bytes: {}", body.len(), r),
            );
            resp.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            resp
        }
    };
    let id = activity.answer_started();
    resp.body_mut().watch = Some((activity.clone(), id));
    (resp, refused.map(answer_reason))
}

fn answer_reason(r: Refusal) -> &'static str {
    match r {
        Refusal::OverBudget(_) => "answer_inflight_bytes",
        Refusal::ConnectionCap(_) => "answer_connection_bytes",
        Refusal::Preempted(_) => "answer_preempted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use prometheus_client::metrics::gauge::Gauge;

    #[tokio::test]
    async fn large_answers_are_charged_until_handed_over_in_chunks() {
        let gauge = Gauge::default();
        let budget = ByteBudget::new(100_000, 100_000, 1, gauge.clone());
        let account = Account::new();
        let activity = Activity::for_test();
        let resp = Response::new(Answer::new(vec![b'x'; 40_000]));
        let (resp, refused) = hold(resp, &budget, &account, &activity);
        assert_eq!(refused, None);
        assert_eq!(gauge.get(), 40_000);
        let mut body = resp.into_body();
        assert_eq!(body.size_hint().exact(), Some(40_000));
        let mut sizes = Vec::new();
        while let Some(f) = body.frame().await {
            sizes.push(f.unwrap().into_data().unwrap().len());
        }
        assert_eq!(sizes, [CHUNK, CHUNK, 40_000 - 2 * CHUNK]);
        assert_eq!(gauge.get(), 40_000, "held until the body is dropped");
        drop(body);
        assert_eq!(gauge.get(), 0);
    }

    #[tokio::test]
    async fn an_answer_over_the_connection_cap_is_replaced_by_a_refusal() {
        let budget = ByteBudget::new(100_000, 10_000, 1, Gauge::default());
        let account = Account::new();
        let activity = Activity::for_test();
        let (resp, refused) = hold(
            Response::new(Answer::new(vec![b'x'; 20_000])),
            &budget,
            &account,
            &activity,
        );
        assert_eq!(refused, Some("answer_connection_bytes"));
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        let text = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(
            String::from_utf8_lossy(&text).starts_with("the answer of 20000 bytes: too many"),
            "{text:?}"
        );
        // Small answers are never refused.
        let (resp, refused) = hold(
            Response::new(Answer::new("ok\n".to_string())),
            &budget,
            &account,
            &activity,
        );
        assert_eq!((resp.status(), refused), (StatusCode::OK, None));
    }

    #[tokio::test]
    async fn a_preempted_answer_ends_its_connection() {
        let budget = ByteBudget::new(10_000, 10_000, 1, Gauge::default());
        let activity = Activity::for_test();
        let (resp, _) = hold(
            Response::new(Answer::new(vec![b'x'; 9_000])),
            &budget,
            &Account::new(),
            &activity,
        );
        assert!(!activity.is_killed());
        let mut other = budget.charge(&Account::new());
        other
            .grow(5_000)
            .expect("within its share: the answer gives way");
        assert!(activity.is_killed());
        drop(resp);
    }
}
