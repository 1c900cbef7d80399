//! A pool's objects as a [`Stream`]: [`ObjectList`] asks the OSDs for one
//! page at a time as the consumer takes entries, instead of gathering the
//! whole pool first as [`IoCtx::list`] does.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use msgr_messages::HObject;

use crate::error::RadosError;
use crate::ioctx::IoCtx;
use crate::paging::ListCursor;
use crate::request::Listed;

type Page = Pin<Box<dyn Future<Output = Result<(i32, HObject, Vec<Listed>), RadosError>> + Send>>;

/// The objects of an [`IoCtx`]'s pool in its namespace (or all of them,
/// with [`crate::ALL_NAMESPACES`]), PG by PG, a page in flight at a time
/// (`rados_nobjects_list_open` / `_next`). An error ends the stream after
/// it is yielded; an OSD whose pages do not move on is
/// [`RadosError::NoProgress`].
///
/// ```no_run
/// # async fn run(io: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
/// let mut objects = io.list_objects();
/// while let Some(entry) = objects.next().await {
///     println!("{}", String::from_utf8_lossy(&entry?.name));
/// }
/// # Ok(()) }
/// ```
pub struct ObjectList {
    io: IoCtx,
    cursor: ListCursor,
    page: Option<Page>,
    ready: VecDeque<Listed>,
    ended: bool,
}

impl IoCtx {
    /// The pool's objects, listed page by page as they are taken
    /// ([`ObjectList`], a [`Stream`]).
    pub fn list_objects(&self) -> ObjectList {
        ObjectList {
            io: self.clone(),
            cursor: ListCursor::default(),
            page: None,
            ready: VecDeque::new(),
            ended: false,
        }
    }
}

impl ObjectList {
    /// The hash the listing's cursor is at (where its next page starts; 0
    /// at the start and once at the end), as librados's
    /// `rados_nobjects_list_get_pg_hash_position` answers.
    pub fn hash_position(&self) -> u32 {
        match self.cursor.done() {
            true => 0,
            false => self.cursor.at().hash,
        }
    }

    /// The listing's cursor: where its next page starts
    /// ([`HObject::default`] before the first, [`HObject::max`] at the end).
    pub fn cursor(&self) -> HObject {
        self.cursor.at()
    }

    /// Where `entry` (an object of this listing's pool) sits in it:
    /// librados's cursor of an entry, with its name's (or locator key's)
    /// hash in the pool. None if the pool is gone from the map.
    pub fn position_of(&self, entry: &Listed) -> Option<HObject> {
        let key = match entry.locator.is_empty() {
            true => entry.name.clone(),
            false => Bytes::copy_from_slice(entry.locator.as_bytes()),
        };
        let nspace = Bytes::copy_from_slice(entry.nspace.as_bytes());
        let hash = self.io.with_pool(|p| p.hash_key(&key, &nspace)).ok()?;
        Some(HObject::head(
            self.io.pool,
            entry.name.clone(),
            Bytes::copy_from_slice(entry.locator.as_bytes()),
            nspace,
            hash,
        ))
    }

    /// Goes on from `at` (a cursor from [`ObjectList::cursor`] or
    /// [`ObjectList::position_of`]; the object there is listed next),
    /// dropping what was fetched and not taken
    /// (`rados_nobjects_list_seek_cursor`); the placement group it falls
    /// in (its seed; 0 if the pool is gone).
    pub fn seek_cursor(&mut self, at: HObject) -> u32 {
        let hash = at.hash;
        self.page = None;
        self.ready.clear();
        self.ended = false;
        self.cursor.seek(at);
        self.io
            .with_pool(|p| msgr_osdmap::hash::stable_mod(hash, p.pg_num, p.pg_num_mask))
            .unwrap_or(0)
    }

    /// Goes on from the first position of hash `hash` in the pool (0: from
    /// the start), dropping what was fetched and not taken
    /// (`rados_nobjects_list_seek`).
    pub fn seek(&mut self, hash: u32) {
        self.page = None;
        self.ready.clear();
        self.ended = false;
        self.cursor.seek(HObject {
            hash,
            pool: self.io.pool,
            ..HObject::default()
        });
    }

    /// The next object, `None` at the end.
    pub async fn next(&mut self) -> Option<Result<Listed, RadosError>> {
        std::future::poll_fn(|cx| self.poll_entry(cx)).await
    }

    fn poll_entry(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Listed, RadosError>>> {
        loop {
            if let Some(entry) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(entry)));
            }
            if self.ended || self.cursor.done() {
                return Poll::Ready(None);
            }
            let page = self.page.get_or_insert_with(|| {
                let (io, at) = (self.io.clone(), self.cursor.at());
                Box::pin(async move { io.list_page(at).await })
            });
            let answer = ready!(page.as_mut().poll(cx));
            self.page = None;
            let step = answer.and_then(|(osd, next, entries)| {
                self.cursor.advance(osd, next)?;
                Ok(entries)
            });
            match step {
                Ok(entries) => self.ready.extend(entries),
                Err(e) => {
                    self.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl Stream for ObjectList {
    type Item = Result<Listed, RadosError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_entry(cx)
    }
}
