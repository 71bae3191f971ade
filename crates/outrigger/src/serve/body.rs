//! Request bodies: read into one buffer against the size limit and the server-wide budget of
//! request bytes in flight, and discarded in the background after an early refusal so that an
//! HTTP/1.1 client still sending its body reads the refusal instead of a connection reset.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Body;
use hyper::header::{CONTENT_LENGTH, EXPECT};
use hyper::{HeaderMap, Version};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use super::conn::Busy;

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Longer than the request size limit (413).
    #[error("Request entity too large: limit is {0}")]
    TooLarge(usize),
    /// The budget of request bytes in flight cannot hold it now (429).
    #[error("too many request bytes in flight (limit {0}); retry later")]
    OverBudget(usize),
    /// The client's stream failed.
    #[error("{0}")]
    Read(String),
}

/// The webhook's memory budget: the bound on request body bytes held at once by all requests
/// (`--max-inflight-bytes`), and the number of large reviews processed at once.
///
/// Bytes are charged when a body is admitted (its declared length) or as it streams in (no
/// `content-length`), and released when the request's review is done. A charge that does not
/// fit fails at once: the request is refused instead of waiting with its body unread.
///
/// Processing a review takes several times its size (pod trees), so large reviews also take one
/// of a few processing slots (as many as worker threads: more at once would not finish sooner);
/// the others wait holding only their body.
#[derive(Debug)]
pub struct ByteBudget {
    bytes: Arc<Semaphore>,
    limit: usize,
    gauge: Gauge,
    large: Arc<Semaphore>,
}

/// Bytes charged to a [`ByteBudget`]; returned when dropped.
#[derive(Debug)]
pub struct Charge {
    permit: Option<OwnedSemaphorePermit>,
    gauge: Gauge,
    bytes: usize,
}

impl ByteBudget {
    /// A budget of `limit` bytes reporting its use to `gauge`, with `large_slots` slots for
    /// processing large reviews.
    pub fn new(limit: usize, large_slots: usize, gauge: Gauge) -> ByteBudget {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        ByteBudget {
            bytes: Arc::new(Semaphore::new(limit)),
            limit,
            gauge,
            large: Arc::new(Semaphore::new(large_slots.clamp(1, Semaphore::MAX_PERMITS))),
        }
    }

    /// Wait for a slot to process a large review (held until dropped).
    pub async fn large_slot(&self) -> OwnedSemaphorePermit {
        self.large
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }

    /// An empty charge, to be grown with [`ByteBudget::grow`].
    pub fn empty(&self) -> Charge {
        Charge {
            permit: None,
            gauge: self.gauge.clone(),
            bytes: 0,
        }
    }

    /// Add `n` bytes to `charge` if the budget has them now.
    pub fn grow(&self, charge: &mut Charge, n: usize) -> Result<(), BodyError> {
        if n == 0 {
            return Ok(());
        }
        let over = || BodyError::OverBudget(self.limit);
        let n32 = u32::try_from(n).map_err(|_| over())?;
        let permit = match self.bytes.clone().try_acquire_many_owned(n32) {
            Ok(p) => p,
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => return Err(over()),
        };
        match &mut charge.permit {
            Some(p) => p.merge(permit),
            None => charge.permit = Some(permit),
        }
        charge.bytes += n;
        self.gauge.inc_by(n as i64);
        Ok(())
    }
}

impl Default for ByteBudget {
    /// No bound (for tests and embedders that bound memory otherwise).
    fn default() -> ByteBudget {
        ByteBudget::new(Semaphore::MAX_PERMITS, 4, Gauge::default())
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.gauge.dec_by(self.bytes as i64);
    }
}

/// A boxed request body, kept by the caller so that it can be discarded after a refusal.
pub type Boxed<B> = Pin<Box<B>>;

/// Read the whole body: at most `max` bytes, `declared` being the `content-length` if any (checked
/// against `max` and charged to `budget` before anything is read). The body is read into one
/// buffer sized from `declared`, so a large review is held once.
pub async fn read<B>(
    body: &mut Boxed<B>,
    declared: Option<u64>,
    max: usize,
    budget: &ByteBudget,
) -> Result<(Vec<u8>, Charge), BodyError>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let mut charge = budget.empty();
    let mut buf = Vec::new();
    match declared {
        Some(n) if n > max as u64 => return Err(BodyError::TooLarge(max)),
        Some(n) => {
            // `n <= max`, which fits in usize.
            let n = n as usize;
            budget.grow(&mut charge, n)?;
            buf.reserve_exact(n);
        }
        None => {}
    }
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if buf.len() + data.len() > max {
            return Err(BodyError::TooLarge(max));
        }
        if declared.is_none() {
            budget.grow(&mut charge, data.len())?;
        }
        buf.extend_from_slice(&data);
    }
    Ok((buf, charge))
}

/// Whether the body of a refused request is worth discarding so that the client reads the
/// refusal: HTTP/1.x (HTTP/2 resets just the stream), no `Expect: 100-continue` (that client waits
/// for a go-ahead it does not get and sends nothing), not declared longer than `limit`.
pub fn should_discard(version: Version, headers: &HeaderMap, limit: u64) -> bool {
    let expects = headers
        .get(EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    version < Version::HTTP_2 && !expects && declared.is_none_or(|n| n <= limit)
}

/// Discard the rest of a refused body in the background: at most `limit` bytes within `time`,
/// keeping the connection busy meanwhile (`busy`), so that the client finishes sending and reads
/// the response; a body still going past either bound is dropped, which closes the connection.
pub fn discard<B>(mut body: Boxed<B>, limit: u64, time: Duration, busy: Option<Busy>)
where
    B: Body<Data = Bytes> + Send + 'static,
{
    tokio::spawn(async move {
        let _busy = busy;
        let mut seen = 0u64;
        let _ = tokio::time::timeout(time, async {
            while let Some(Ok(frame)) = body.frame().await {
                if let Some(data) = frame.data_ref() {
                    seen += data.len() as u64;
                    if seen > limit {
                        break;
                    }
                }
            }
        })
        .await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{Full, StreamBody};
    use hyper::body::Frame;

    fn budget(limit: usize) -> ByteBudget {
        ByteBudget::new(limit, 1, Gauge::default())
    }

    #[tokio::test]
    async fn declared_bodies_are_charged_up_front_and_released() {
        let b = budget(100);
        let mut body = Box::pin(Full::new(Bytes::from_static(b"0123456789")));
        let (buf, charge) = read(&mut body, Some(10), 50, &b).await.expect("fits");
        assert_eq!(buf, b"0123456789");
        assert_eq!(b.gauge.get(), 10);
        // 95 bytes do not fit next to the 10 held.
        let mut big = Box::pin(Full::new(Bytes::from(vec![b'x'; 95])));
        assert!(matches!(
            read(&mut big, Some(95), 100, &b).await,
            Err(BodyError::OverBudget(100))
        ));
        drop(charge);
        assert_eq!(b.gauge.get(), 0);
        let (buf, _c) = read(&mut big, Some(95), 100, &b).await.expect("fits now");
        assert_eq!(buf.len(), 95);
    }

    #[tokio::test]
    async fn large_reviews_take_turns() {
        let b = ByteBudget::new(100, 1, Gauge::default());
        let first = b.large_slot().await;
        let waiting = tokio::time::timeout(Duration::from_millis(20), b.large_slot()).await;
        assert!(waiting.is_err(), "a second slot while the only one is held");
        drop(first);
        let _second = b.large_slot().await;
    }

    #[tokio::test]
    async fn streamed_bodies_are_charged_per_chunk_and_limited() {
        let chunks = |n: usize| {
            let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = (0..n)
                .map(|_| Ok(Frame::data(Bytes::from_static(b"abcd"))))
                .collect();
            Box::pin(StreamBody::new(futures::stream::iter(frames)))
        };
        let b = budget(10);
        let (buf, charge) = read(&mut chunks(2), None, 100, &b).await.expect("fits");
        assert_eq!((buf.len(), b.gauge.get()), (8, 8));
        drop(charge);
        assert!(matches!(
            read(&mut chunks(3), None, 100, &b).await,
            Err(BodyError::OverBudget(10))
        ));
        assert_eq!(b.gauge.get(), 0, "a refused charge is released");
        assert!(matches!(
            read(&mut chunks(3), None, 11, &budget(100)).await,
            Err(BodyError::TooLarge(11))
        ));
        // A declared length over the limit is refused before reading.
        assert!(matches!(
            read(&mut chunks(1), Some(12), 11, &b).await,
            Err(BodyError::TooLarge(11))
        ));
    }
}
