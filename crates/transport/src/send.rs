//! Sending: a connection's writer is handed the runtime's queue of
//! outgoing chunks, oldest first, and reports how many bytes from its
//! front it sent; the runtime then drops them from the queue. The chunks
//! are reference-counted (`Bytes`), so a completion-based transport can
//! hold on to what it posted until the completion comes, however the
//! runtime's wait on it ends.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Slices per vectored write (Linux takes up to 1024).
pub const MAX_IOV: usize = 256;

/// Bytes to send, oldest first, as the runtime's queue holds them: two
/// runs of chunks (a ring buffer's two halves).
#[derive(Debug, Clone, Copy, Default)]
pub struct Outgoing<'a> {
    /// The older run.
    pub head: &'a [Bytes],
    /// The newer run, after `head`.
    pub tail: &'a [Bytes],
}

impl<'a> Outgoing<'a> {
    /// The two runs of a ring buffer, as its `as_slices` gives them.
    pub fn new((head, tail): (&'a [Bytes], &'a [Bytes])) -> Outgoing<'a> {
        Outgoing { head, tail }
    }

    /// The chunks, oldest first.
    pub fn chunks(&self) -> impl Iterator<Item = &'a Bytes> + 'a {
        self.head.iter().chain(self.tail.iter())
    }

    /// Whether there is no byte to send.
    pub fn is_empty(&self) -> bool {
        self.chunks().all(Bytes::is_empty)
    }

    /// Fills `iov` with the first chunks; returns how many it filled.
    pub fn io_slices(&self, iov: &mut [IoSlice<'a>]) -> usize {
        iov.iter_mut()
            .zip(self.chunks())
            .map(|(slot, chunk)| *slot = IoSlice::new(chunk))
            .count()
    }
}

/// The sending half of a connection.
pub trait Sender: Send + Unpin + 'static {
    /// Polls to send bytes from the front of `out`: Ready with how many the
    /// transport took (at least one), once it takes some. The caller drops
    /// them from its queue and polls again with what is left (and whatever
    /// it added at the end). Taken means the transport will send them, in
    /// order, before anything it takes later: a socket's buffer took them,
    /// or a completion-based transport holds clones of the chunks in a
    /// send it posted (whose failure a later poll, or the shutdown,
    /// reports).
    ///
    /// After a `Pending`, the next poll is given the same front of the
    /// queue (perhaps with more behind it), and reports any bytes an
    /// earlier poll had already handed to the transport (a
    /// completion-based transport keeps what it posted until its
    /// completion and reports it then).
    fn poll_send(&mut self, cx: &mut Context<'_>, out: Outgoing<'_>) -> Poll<io::Result<usize>>;

    /// [`Sender::poll_send`] as a future (cancel-safe in the same sense).
    fn send<'a>(
        &'a mut self,
        out: Outgoing<'a>,
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a {
        std::future::poll_fn(move |cx| self.poll_send(cx, out))
    }

    /// Sends what was given (a transport may buffer), then shuts the
    /// sending direction down: the peer reads the end of the stream.
    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send + '_;
}

/// Slices of a send of few chunks (a reply or two, a request and its
/// acknowledgement): filled without clearing MAX_IOV of them (4 KiB of
/// stack) per send.
const FEW_IOV: usize = 8;

/// Byte-stream writers (tokio's socket halves, in-memory pipes) send with
/// one vectored write of the first [`MAX_IOV`] chunks. The slices are
/// made on the stack of each poll, not kept in the waiting future: an
/// idle connection's task stays small.
impl<W: AsyncWrite + Send + Unpin + 'static> Sender for W {
    fn poll_send(&mut self, cx: &mut Context<'_>, out: Outgoing<'_>) -> Poll<io::Result<usize>> {
        match out.head.len().saturating_add(out.tail.len()) {
            0..=FEW_IOV => write_vectored::<W, FEW_IOV>(self, cx, out),
            _ => write_vectored::<W, MAX_IOV>(self, cx, out),
        }
    }

    fn shutdown(&mut self) -> impl Future<Output = io::Result<()>> + Send + '_ {
        AsyncWriteExt::shutdown(self)
    }
}

/// One vectored write of the first `N` chunks of `out`.
fn write_vectored<W: AsyncWrite + Unpin, const N: usize>(
    w: &mut W,
    cx: &mut Context<'_>,
    out: Outgoing<'_>,
) -> Poll<io::Result<usize>> {
    let mut iov = [IoSlice::new(&[]); N];
    let n = out.io_slices(&mut iov);
    let slices = iov.get(..n).unwrap_or_default();
    Pin::new(w).poll_write_vectored(cx, slices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_send_takes_up_to_max_iov_chunks_few_or_many() {
        for chunks in [1usize, FEW_IOV, FEW_IOV + 1, MAX_IOV + 44] {
            let all: Vec<Bytes> = (0..chunks).map(|i| Bytes::from(vec![i as u8; 3])).collect();
            let (head, tail) = all.split_at(chunks / 2);
            let mut w: Vec<u8> = Vec::new();
            let n = w.send(Outgoing::new((head, tail))).await.unwrap();
            let want: Vec<u8> = all.iter().take(MAX_IOV).flat_map(|c| c.to_vec()).collect();
            assert_eq!((n, &w), (want.len(), &want), "{chunks} chunks");
        }
    }

    #[test]
    fn outgoing_lists_both_halves_in_order() {
        let head = [Bytes::from_static(b"ab"), Bytes::from_static(b"c")];
        let tail = [Bytes::from_static(b"de")];
        let out = Outgoing::new((&head, &tail));
        let mut iov = [IoSlice::new(&[]); 2];
        assert_eq!(out.io_slices(&mut iov), 2);
        assert_eq!(&*iov[1], b"c");
        let all: Vec<u8> = out.chunks().flat_map(|c| c.to_vec()).collect();
        assert_eq!(all, b"abcde");
        assert!(!out.is_empty());
        assert!(Outgoing::default().is_empty());
    }
}
