//! Listening: every shard accepting on a bound port, or one listener
//! handing connections out; a new connection for each accepted stream,
//! speaking the listener's protocol (msgr1 on a `v1:` address, else
//! msgr2); room made at the connection limit by evicting the idlest.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use msgr_protocol::{Conn, MyAddrs};
use msgr_transport::{Listener, Stream, Transport};

use super::Messenger;
use crate::connection::{Command, Connection};
use crate::driver::{Driver, Socket, SocketSlot};
use crate::inner::Inner;

impl<T: Transport> Messenger<T> {
    /// Listens on `addr` (for msgr1 connections if `msgr1`) from every
    /// shard, or from shard 0 handing out.
    pub(super) async fn listen(
        &self,
        addr: std::net::SocketAddr,
        msgr1: bool,
    ) -> io::Result<std::net::SocketAddr> {
        let n = self.inner.shards.len();
        if n > 1 && self.inner.accept_on_every_shard {
            let shared = Accept::Shared { msgr1 };
            if let Some(first) = self.listen_on(0, addr, shared).await? {
                for shard in 1..n {
                    self.listen_on(shard, first, shared).await?;
                }
                return Ok(first);
            }
        }
        let how = match n {
            1 => Accept::Shared { msgr1 },
            _ => Accept::HandOut { msgr1 },
        };
        match self.listen_on(0, addr, how).await? {
            Some(local) => Ok(local),
            None => Err(io::Error::other("the transport did not bind")),
        }
    }

    /// Binds `addr` on `shard` (in its runtime, whose reactor then serves
    /// the listener) and accepts there until shutdown. `None`: the
    /// transport cannot share a port.
    async fn listen_on(
        &self,
        shard: usize,
        addr: std::net::SocketAddr,
        how: Accept,
    ) -> io::Result<Option<std::net::SocketAddr>> {
        let (bound, result) = tokio::sync::oneshot::channel();
        let inner = self.inner.clone();
        self.inner.spawn(shard, async move {
            let listener = match (how, inner.shards.len()) {
                (Accept::Shared { .. }, n) if n > 1 => inner.transport.bind_shared(addr).await,
                _ => inner.transport.bind(addr).await.map(Some),
            };
            let mut listener = match listener {
                Ok(Some(l)) => l,
                Ok(None) => return drop(bound.send(Ok(None))),
                Err(e) => return drop(bound.send(Err(e))),
            };
            let local = listener.local_addr().map(Some);
            let failed = local.is_err();
            let _ = bound.send(local);
            if !failed {
                accept_loop(&inner, shard, &mut listener, how).await;
            }
        });
        result
            .await
            .map_err(|_| io::Error::other("the shard stopped before binding"))?
    }
}

/// How a listener's connections are shared out, and which protocol they
/// speak.
#[derive(Debug, Clone, Copy)]
enum Accept {
    /// Each shard has its own listener (or there is one shard): a
    /// connection stays where it was accepted.
    Shared { msgr1: bool },
    /// One listener: connections go to the shards in turn.
    HandOut { msgr1: bool },
}

async fn accept_loop<T: Transport>(
    inner: &Arc<Inner<T>>,
    shard: usize,
    listener: &mut T::Listener,
    how: Accept,
) {
    let mut stop = inner.shutdown.subscribe();
    if *stop.borrow_and_update() {
        return;
    }
    loop {
        tokio::select! {
            biased; // fixed order: runs repeat exactly
            _ = stop.changed() => return,
            r = listener.accept() => match r {
                Ok((stream, peer)) => {
                    let (to, msgr1) = match how {
                        Accept::Shared { msgr1 } => (shard, msgr1),
                        Accept::HandOut { msgr1 } => (inner.shards.next(), msgr1),
                    };
                    accept(inner, shard, to, stream, peer, msgr1);
                }
                Err(_) => crate::timer::Sleep::after(std::time::Duration::from_millis(10)).await,
            },
        }
    }
}

/// A stream accepted on shard `here`: a new connection that runs the
/// acceptor handshake (msgr1's if `msgr1`) on shard `to`.
fn accept<T: Transport>(
    inner: &Arc<Inner<T>>,
    here: usize,
    to: usize,
    stream: T::Stream,
    peer: std::net::SocketAddr,
    msgr1: bool,
) {
    if *inner.shutdown.borrow() {
        return;
    }
    let slot = match SocketSlot::within(&inner.live_sockets, inner.max_connections) {
        Some(slot) => slot,
        // At the limit: the idlest READY connection makes room (its socket
        // closes shortly), or this one is refused.
        None if evict_idle(inner) => SocketSlot::new(&inner.live_sockets),
        None => {
            inner.refused_accepts.fetch_add(1, Ordering::Relaxed);
            drop(stream);
            return;
        }
    };
    let id = inner.next_id();
    // What we are on this socket: what we listen on, a wildcard advertised
    // as the address the peer reached.
    let listening = inner
        .listening
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut me = MyAddrs {
        addrs: listening.clone(),
        listening,
    };
    if let Some(local) = stream.local_addr() {
        me.on_socket(local.ip());
    }
    // Listed before the connection exists: whoever sees it start (an
    // interceptor) finds it among `connections()`.
    let handle = inner.new_connection(id, here);
    let accept = if msgr1 { Conn::accept_v1 } else { Conn::accept };
    let conn = accept(inner.config.clone(), me, peer, crate::now(), id);
    let Some(link) = conn.link_id() else {
        // Closed at birth (a test interceptor's fault): drop the socket.
        inner.forget(&handle);
        return;
    };
    let (reader, writer) = stream.into_split();
    let socket = Socket {
        link,
        reader,
        writer,
        slot,
    };
    // Made on the accepting shard; moving to `to` re-registers the socket.
    let d = Driver::new(inner.clone(), conn, handle, here, Some(socket));
    crate::driver::start(inner, to, Box::new(d));
}

/// At the connection limit: evicts the READY connection idle longest, if
/// it has been idle `evict_idle_after` (its socket closes; its policy
/// decides what becomes of the session). Returns whether one was.
fn evict_idle<T: Transport>(inner: &Arc<Inner<T>>) -> bool {
    let now = inner.idle_clock.nanos(crate::now());
    let idle_enough = u64::try_from(inner.evict_idle_after.as_nanos()).unwrap_or(u64::MAX);
    let conns: Vec<Connection> = inner.all().values().cloned().collect();
    let idlest = conns
        .iter()
        .map(|c| (c.shared.view.idle_since(), c))
        // idle_since counts from 1 (0: not idle).
        .filter(|(t, _)| *t != 0 && now.saturating_sub(t.saturating_sub(1)) >= idle_enough)
        .min_by_key(|(t, _)| *t);
    let Some((since, victim)) = idlest else {
        return false;
    };
    if !victim.shared.view.claim_idle(since) {
        return false;
    }
    victim.command(Command::Evict);
    inner.evictions.fetch_add(1, Ordering::Relaxed);
    true
}
