//! A socket's readiness, waited for with a poll on the loop's ring.

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use io_uring::{opcode, types};

use super::polls::PollState;
use super::{push, CANCEL, LOCAL, POLL};

/// Ready when a file descriptor is (`libc::POLLIN`, `POLLOUT`, ... as
/// `events`): one poll on the calling thread's loop's ring. Off a loop it
/// fails at once. The fd must stay open while it waits.
pub struct Ready {
    fd: std::os::fd::RawFd,
    events: u32,
    /// Its poll's id and loop, once posted.
    posted: Option<(u64, u64)>,
}

/// Waits until `fd` is ready for `events` (poll(2)'s bits).
pub fn ready(fd: &impl AsRawFd, events: i16) -> Ready {
    Ready {
        fd: fd.as_raw_fd(),
        events: u32::from(events as u16),
        posted: None,
    }
}

impl Future for Ready {
    /// The poll's result: the events that are ready.
    type Output = io::Result<u32>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u32>> {
        let this = self.get_mut();
        LOCAL.with(|l| {
            let l = l.borrow();
            let Some(local) = l.as_ref() else {
                return Poll::Ready(Err(io::Error::other(
                    "io_uring: a readiness poll off any executor",
                )));
            };
            let mut polls = local.polls.borrow_mut();
            match this.posted {
                Some((id, at)) if at == local.id => match polls.waiting.get_mut(&id) {
                    Some(PollState::Done(res)) => {
                        let res = *res;
                        polls.waiting.remove(&id);
                        this.posted = None;
                        Poll::Ready(
                            u32::try_from(res).map_err(|_| io::Error::from_raw_os_error(-res)),
                        )
                    }
                    Some(PollState::Waiting(w)) => {
                        w.clone_from(cx.waker());
                        Poll::Pending
                    }
                    _ => Poll::Ready(Err(io::Error::other("io_uring: a readiness poll lost"))),
                },
                _ => {
                    polls.next_id = polls.next_id.wrapping_add(1) & 0xffff_ffff;
                    let id = polls.next_id;
                    let sqe = opcode::PollAdd::new(types::Fd(this.fd), this.events)
                        .build()
                        .user_data(POLL | id);
                    drop(polls);
                    // SAFETY: a poll points at no memory; the loop's own tag.
                    #[allow(unsafe_code)]
                    if let Err(e) = unsafe { push(local.id, &sqe) } {
                        return Poll::Ready(Err(e));
                    }
                    local
                        .polls
                        .borrow_mut()
                        .waiting
                        .insert(id, PollState::Waiting(cx.waker().clone()));
                    this.posted = Some((id, local.id));
                    Poll::Pending
                }
            }
        })
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        let Some((id, at)) = self.posted.take() else {
            return;
        };
        LOCAL.with(|l| {
            let l = l.borrow();
            let Some(local) = l.as_ref().filter(|l| l.id == at) else {
                return;
            };
            let mut polls = local.polls.borrow_mut();
            if let Some(PollState::Waiting(_)) = polls.waiting.get(&id) {
                polls.waiting.insert(id, PollState::Abandoned);
                drop(polls);
                let cancel = opcode::PollRemove::new(POLL | id).build().user_data(CANCEL);
                // SAFETY: a poll removal points at no memory.
                #[allow(unsafe_code)]
                let _ = unsafe { push(at, &cancel) };
            } else {
                polls.waiting.remove(&id);
            }
        });
    }
}
