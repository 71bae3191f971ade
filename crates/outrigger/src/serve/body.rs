//! Request bodies: read into one buffer as they arrive, each byte charged to the server-wide
//! budget ([`super::budget`]) when it arrives, within a first-byte deadline and a minimum data
//! rate; discarded in the background after an early refusal so that an HTTP/1.1 client still
//! sending its body reads the refusal instead of a connection reset.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Body;
use hyper::header::{CONTENT_LENGTH, EXPECT};
use hyper::{HeaderMap, Version};
use tokio::time::Instant;

use super::budget::{Account, ByteBudget, Charge, Refusal};
use super::conn::Busy;

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Longer than the request size limit (413).
    #[error("Request entity too large: limit is {0}")]
    TooLarge(usize),
    /// The budget of request bytes in flight cannot hold it now (429).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// No body byte within the first-byte deadline after the request head (408).
    #[error("request body: no byte received within {0:?} of the request head")]
    FirstByteTimeout(Duration),
    /// The body arrived slower than the minimum data rate (408).
    #[error("request body: {received} bytes received in {elapsed:?}, slower than the minimum rate of {rate} bytes/s after the first {first_byte:?}")]
    TooSlow {
        /// Bytes received when the body was cut.
        received: usize,
        /// Time since the request head.
        elapsed: Duration,
        /// `--body-min-rate`.
        rate: u64,
        /// `--body-first-byte-timeout`.
        first_byte: Duration,
    },
    /// The client's stream failed.
    #[error("{0}")]
    Read(String),
}

impl BodyError {
    /// Reason label in metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            BodyError::TooLarge(_) => "body_too_large",
            BodyError::Refused(r) => r.reason(),
            BodyError::FirstByteTimeout(_) => "body_first_byte_timeout",
            BodyError::TooSlow { .. } => "body_min_rate",
            BodyError::Read(_) => "body_read",
        }
    }
}

/// How a body must arrive.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Maximum body in bytes (`--max-request-bytes`).
    pub max: usize,
    /// The first body byte must arrive within this time of the request head
    /// (`--body-first-byte-timeout`).
    pub first_byte: Duration,
    /// Bytes per second the body must keep up after that (`--body-min-rate`; 0: no minimum):
    /// by `first_byte + n / min_rate` after the head, `n` bytes have arrived.
    pub min_rate: u64,
}

impl BodyLimits {
    /// When the body must have delivered more than `received` bytes, counted from `start`.
    fn due(&self, start: Instant, received: usize) -> Option<Instant> {
        if received == 0 {
            return Some(start + self.first_byte);
        }
        if self.min_rate == 0 {
            return None;
        }
        let allowance = Duration::from_secs_f64(received as f64 / self.min_rate as f64);
        Some(start + self.first_byte + allowance)
    }
}

/// A boxed request body, kept by the caller so that it can be discarded after a refusal.
pub type Boxed<B> = Pin<Box<B>>;

/// Read the whole body: at most `limits.max` bytes (a `declared` content-length over it is
/// refused before anything is read), each chunk charged to `budget` on `account`'s connection as
/// it arrives, within the first-byte deadline and the minimum rate. The buffer grows with what
/// arrived (doubling, up to the declared length), never from the announced length alone.
pub async fn read<B>(
    body: &mut Boxed<B>,
    declared: Option<u64>,
    limits: &BodyLimits,
    budget: &ByteBudget,
    account: &Account,
) -> Result<(Vec<u8>, Charge), BodyError>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let max = limits.max;
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge(max));
    }
    // `n <= max`, which fits in usize.
    let cap = declared.map_or(max, |n| n as usize);
    let start = Instant::now();
    let mut charge = budget.charge(account);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let due = limits.due(start, buf.len());
        let timer = async {
            match due {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let frame = tokio::select! {
            f = body.frame() => f,
            () = charge.preempted() => return Err(Refusal::Preempted(budget.limit()).into()),
            () = timer => {
                return Err(if buf.is_empty() {
                    BodyError::FirstByteTimeout(limits.first_byte)
                } else {
                    BodyError::TooSlow {
                        received: buf.len(),
                        elapsed: start.elapsed(),
                        rate: limits.min_rate,
                        first_byte: limits.first_byte,
                    }
                });
            }
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let len = buf.len() + data.len();
        if len > max {
            return Err(BodyError::TooLarge(max));
        }
        charge.grow(data.len())?;
        if len > buf.capacity() {
            let want = (2 * buf.capacity()).max(len).min(cap.max(len));
            buf.reserve_exact(want - buf.len());
        }
        buf.extend_from_slice(&data);
    }
    charge.done_reading();
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
    use prometheus_client::metrics::gauge::Gauge;

    fn budget(limit: usize) -> ByteBudget {
        ByteBudget::new(limit, usize::MAX, 1, Gauge::default())
    }

    fn limits(max: usize) -> BodyLimits {
        BodyLimits {
            max,
            first_byte: Duration::from_secs(5),
            min_rate: 0,
        }
    }

    #[tokio::test]
    async fn bodies_are_charged_as_they_arrive_and_released() {
        let b = budget(100);
        let a = Account::new();
        let mut body = Box::pin(Full::new(Bytes::from_static(b"0123456789")));
        let (buf, charge) = read(&mut body, Some(10), &limits(50), &b, &a)
            .await
            .expect("fits");
        assert_eq!(buf, b"0123456789");
        assert_eq!(charge.bytes(), 10);
        // 95 bytes do not fit next to the 10 held on the same connection.
        let mut big = Box::pin(Full::new(Bytes::from(vec![b'x'; 95])));
        assert!(matches!(
            read(&mut big, Some(95), &limits(100), &b, &a).await,
            Err(BodyError::Refused(Refusal::OverBudget(100)))
        ));
        drop(charge);
        let mut big = Box::pin(Full::new(Bytes::from(vec![b'x'; 95])));
        let (buf, _c) = read(&mut big, Some(95), &limits(100), &b, &a)
            .await
            .expect("fits now");
        assert_eq!(buf.len(), 95);
    }

    /// A body that never sends anything.
    type Silent = StreamBody<futures::stream::Pending<Result<Frame<Bytes>, std::io::Error>>>;

    /// A body that sends `first` and then nothing.
    fn stalled(first: &'static [u8]) -> Boxed<impl Body<Data = Bytes, Error = std::io::Error>> {
        let head = futures::stream::iter([Ok(Frame::data(Bytes::from_static(first)))]);
        Box::pin(StreamBody::new(futures::StreamExt::chain(
            head,
            futures::stream::pending(),
        )))
    }

    #[tokio::test(start_paused = true)]
    async fn an_announced_length_reserves_nothing_before_bytes_arrive() {
        let b = budget(100);
        let a = Account::new();
        let lim = BodyLimits {
            max: 100,
            first_byte: Duration::from_secs(2),
            min_rate: 10,
        };
        let mut body = stalled(b"x");
        let reading = read(&mut body, Some(100), &lim, &b, &a);
        let probe = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            b.charge(&Account::new()).grow(99)
        };
        let (r, other) = tokio::join!(reading, probe);
        assert_eq!(other, Ok(()), "99 of 100 bytes were free: 1 had arrived");
        // 1 byte, first byte allowance 2 s + 1 byte at 10 bytes/s.
        match r {
            Err(BodyError::TooSlow {
                received: 1,
                elapsed,
                ..
            }) => {
                assert_eq!(elapsed, Duration::from_millis(2100))
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_starts_is_cut_at_the_first_byte_deadline() {
        let b = budget(100);
        let lim = BodyLimits {
            max: 100,
            first_byte: Duration::from_secs(2),
            min_rate: 0,
        };
        let mut body: Boxed<Silent> = Box::pin(StreamBody::new(futures::stream::pending()));
        let t = Instant::now();
        let r = read(&mut body, Some(10), &lim, &b, &Account::new()).await;
        assert!(matches!(r, Err(BodyError::FirstByteTimeout(_))), "{r:?}");
        assert_eq!(t.elapsed(), Duration::from_secs(2));
        // Without a minimum rate, a started body is not cut by this reader.
        let mut started = stalled(b"x");
        let r = tokio::time::timeout(
            Duration::from_secs(60),
            read(&mut started, Some(10), &lim, &b, &Account::new()),
        )
        .await;
        assert!(r.is_err(), "still reading");
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
        let a = Account::new();
        let (buf, charge) = read(&mut chunks(2), None, &limits(100), &b, &a)
            .await
            .expect("fits");
        assert_eq!((buf.len(), charge.bytes()), (8, 8));
        drop(charge);
        assert!(matches!(
            read(&mut chunks(3), None, &limits(100), &b, &a).await,
            Err(BodyError::Refused(Refusal::OverBudget(10)))
        ));
        assert!(matches!(
            read(&mut chunks(3), None, &limits(11), &budget(100), &a).await,
            Err(BodyError::TooLarge(11))
        ));
        // A declared length over the limit is refused before reading.
        assert!(matches!(
            read(&mut chunks(1), Some(12), &limits(11), &b, &a).await,
            Err(BodyError::TooLarge(11))
        ));
    }
}
