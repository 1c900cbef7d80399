//! Paging through what an OSD hands out a page at a time (a pool's
//! objects PG by PG, an object's omap), refusing an OSD whose pages do not
//! move on.

use std::cmp::Ordering;

use msgr_messages::HObject;

use crate::error::RadosError;
use crate::request::Listed;

/// Ceph's order of `hobject_t` (`cmp`, the bitwise sort a PG lists in):
/// the end last, then by pool, the hash bit-reversed, namespace, the
/// locator key (when either has one: its key, else its name), name, snap.
fn hobject_order(l: &HObject, r: &HObject) -> Ordering {
    let effective = |h: &HObject| match h.key.is_empty() {
        true => h.oid.clone(),
        false => h.key.clone(),
    };
    l.max
        .cmp(&r.max)
        .then(l.pool.cmp(&r.pool))
        .then(l.hash.reverse_bits().cmp(&r.hash.reverse_bits()))
        .then(l.nspace.cmp(&r.nspace))
        .then_with(|| match l.key.is_empty() && r.key.is_empty() {
            true => Ordering::Equal,
            false => effective(l).cmp(&effective(r)),
        })
        .then(l.oid.cmp(&r.oid))
        .then(l.snap.cmp(&r.snap))
}

/// A listing cursor, as an error shows it.
fn cursor_text(h: &HObject) -> String {
    match h.max {
        true => "the end".into(),
        false => format!(
            "pool {} hash {:08x} namespace {:?} name {:?}",
            h.pool,
            h.hash,
            String::from_utf8_lossy(&h.nspace),
            String::from_utf8_lossy(&h.oid)
        ),
    }
}

/// Where a PG listing is: the cursor to ask from next. An OSD lists from
/// the cursor on and answers where it stopped (the next PG's start once a
/// PG is done), so each cursor is past the one asked with in Ceph's
/// order; one that is not would have us ask round a loop for ever, and
/// ends the listing as the OSD's fault. (Ceph's objecter takes what it is
/// given.)
#[derive(Debug, Clone, Default)]
pub(crate) struct ListCursor {
    cursor: HObject,
}

impl ListCursor {
    /// The cursor to ask from.
    pub(crate) fn at(&self) -> HObject {
        self.cursor.clone()
    }

    /// Moves the cursor to `at` (a seek: the listing goes on from there).
    pub(crate) fn seek(&mut self, at: HObject) {
        self.cursor = at;
    }

    /// Whether the listing reached the end.
    pub(crate) fn done(&self) -> bool {
        self.cursor.max
    }

    /// Takes `osd`'s answer to a page asked from [`at`](ListCursor::at):
    /// the cursor to go on from.
    pub(crate) fn advance(&mut self, osd: i32, next: HObject) -> Result<(), RadosError> {
        if hobject_order(&next, &self.cursor) != Ordering::Greater {
            return Err(RadosError::NoProgress {
                osd,
                what: "an object listing".into(),
                detail: format!(
                    "asked from {}, it answered {}, which is not past it",
                    cursor_text(&self.cursor),
                    cursor_text(&next)
                ),
            });
        }
        self.cursor = next;
        Ok(())
    }
}

/// A PG listing, page by page: `page(cursor)` answers with the OSD that
/// answered, the cursor to go on from and what it found.
pub(crate) async fn list_pages<F, Fut>(mut page: F) -> Result<Vec<Listed>, RadosError>
where
    F: FnMut(HObject) -> Fut,
    Fut: std::future::Future<Output = Result<(i32, HObject, Vec<Listed>), RadosError>>,
{
    let mut cursor = ListCursor::default();
    let mut found = Vec::new();
    while !cursor.done() {
        let (osd, next, entries) = page(cursor.at()).await?;
        cursor.advance(osd, next)?;
        found.extend(entries);
    }
    Ok(found)
}

/// An object's omap (`what`: keys or values), page by page: `page(after)`
/// answers with the OSD that answered, the entries after key `after` in
/// key order, and whether more follow. Each page must move past `after`
/// (the OSD lists after it); one that does not while promising more would
/// have us ask the same for ever, and ends the paging as the OSD's fault.
pub(crate) async fn omap_pages<V, F, Fut>(
    what: &str,
    mut page: F,
) -> Result<Vec<(String, V)>, RadosError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Result<(i32, Vec<(String, V)>, bool), RadosError>>,
{
    let mut all = Vec::new();
    // The last key taken (none before the first page, asked after "").
    let mut after: Option<String> = None;
    loop {
        let (osd, batch, more) = page(after.clone().unwrap_or_default()).await?;
        // A page is in key order (a set or map): its first key is its
        // least.
        if let (Some(last), Some((first, _))) = (&after, batch.first()) {
            if first <= last {
                return Err(RadosError::NoProgress {
                    osd,
                    what: format!("the {what} of an object"),
                    detail: format!("asked for keys after {last:?}, it answered from {first:?}"),
                });
            }
        }
        let done = !more || batch.is_empty();
        if let Some((last, _)) = batch.last() {
            after = Some(last.clone());
        }
        all.extend(batch);
        if done {
            return Ok(all);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// A cursor in pool 1 at `hash`, and the end.
    fn at(hash: u32) -> HObject {
        HObject {
            pool: 1,
            hash,
            ..HObject::default()
        }
    }

    fn entry(name: &'static str) -> Listed {
        Listed {
            nspace: String::new(),
            name: Bytes::from_static(name.as_bytes()),
            locator: String::new(),
        }
    }

    /// A fake OSD (osd.3) answering pages from a script, then repeating
    /// its last answer; more than 100 asks is a loop (the test fails).
    fn script<T: Clone>(answers: Vec<T>) -> impl FnMut() -> T {
        let mut asked = 0usize;
        move || {
            asked = asked.saturating_add(1);
            assert!(asked <= 100, "asked {asked} times: a loop");
            let i = asked.min(answers.len()).saturating_sub(1);
            answers.get(i).cloned().expect("an answer")
        }
    }

    #[tokio::test]
    async fn a_listing_goes_on_while_its_cursor_moves() {
        let mut osd = script(vec![
            (at(0x8000_0000), vec![entry("a")]),
            (at(0x4000_0000), vec![entry("b")]),
            (HObject::max(), vec![entry("c")]),
        ]);
        let listed = list_pages(|_| {
            let (next, found) = osd();
            std::future::ready(Ok((3, next, found)))
        })
        .await
        .expect("listed");
        assert_eq!(listed, vec![entry("a"), entry("b"), entry("c")]);
    }

    /// An OSD that answers with the cursor it was asked from (with entries
    /// each time) would have the listing ask and grow for ever.
    #[tokio::test]
    async fn an_osd_repeating_its_cursor_ends_the_listing() {
        let mut osd = script(vec![(at(0x8000_0000), vec![entry("a")])]);
        let e = list_pages(|_| {
            let (next, found) = osd();
            std::future::ready(Ok((3, next, found)))
        })
        .await
        .expect_err("no progress");
        let RadosError::NoProgress { osd, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*osd, 3);
        let said = e.to_string();
        assert!(said.contains("osd.3 made no progress"), "{said}");
        assert!(said.contains("the OSD is at fault"), "{said}");
        // Two cursors in turn, and one going back: as bad.
        for answers in [
            vec![at(0x8000_0000), at(0x4000_0000), at(0x8000_0000)],
            vec![at(0x4000_0000), at(0x8000_0000)],
        ] {
            let mut osd = script(answers);
            let r = list_pages(|_| std::future::ready(Ok((3, osd(), vec![entry("x")])))).await;
            assert!(
                matches!(r, Err(RadosError::NoProgress { osd: 3, .. })),
                "{r:?}"
            );
        }
    }

    #[test]
    fn cursors_order_as_ceph_orders_hobjects() {
        // The hash counts bit-reversed: 0x80000000 comes before 0x40000000.
        assert_eq!(
            hobject_order(&at(0x8000_0000), &at(0x4000_0000)),
            Ordering::Less
        );
        assert_eq!(hobject_order(&HObject::default(), &at(0)), Ordering::Less);
        assert_eq!(
            hobject_order(&at(u32::MAX), &HObject::max()),
            Ordering::Less
        );
        let named = |key: &'static str, oid: &'static str| HObject {
            key: Bytes::from_static(key.as_bytes()),
            oid: Bytes::from_static(oid.as_bytes()),
            ..at(7)
        };
        // The locator key, when there is one, before the name.
        assert_eq!(
            hobject_order(&named("b", "a"), &named("", "c")),
            Ordering::Less
        );
        assert_eq!(
            hobject_order(&named("", "a"), &named("", "b")),
            Ordering::Less
        );
        assert_eq!(
            hobject_order(&named("", "a"), &named("", "a")),
            Ordering::Equal
        );
    }

    type Page = (Vec<(String, ())>, bool);

    fn keys(names: &[&str], more: bool) -> Page {
        (names.iter().map(|k| (k.to_string(), ())).collect(), more)
    }

    #[tokio::test]
    async fn omap_paging_goes_on_while_its_keys_move() {
        let mut osd = script(vec![keys(&["a", "b"], true), keys(&["c"], false)]);
        let mut asked = Vec::new();
        let all = omap_pages("omap keys", |after| {
            asked.push(after);
            let (batch, more) = osd();
            std::future::ready(Ok((3, batch, more)))
        })
        .await
        .expect("paged");
        assert_eq!(asked, ["", "b"]);
        let all: Vec<String> = all.into_iter().map(|(k, ())| k).collect();
        assert_eq!(all, ["a", "b", "c"]);
    }

    /// An OSD that repeats its last key, or goes back, while saying more
    /// follow would have us ask the same for ever.
    #[tokio::test]
    async fn an_osd_repeating_its_omap_keys_ends_the_paging() {
        for answers in [
            vec![keys(&["a", "b"], true)],
            vec![keys(&["a", "b"], true), keys(&["b", "c"], true)],
            vec![keys(&["m"], true), keys(&["a"], true)],
        ] {
            let mut osd = script(answers);
            let r = omap_pages("omap keys", |_| {
                let (batch, more) = osd();
                std::future::ready(Ok((3, batch, more)))
            })
            .await;
            let Err(e) = r else { panic!("{r:?}") };
            assert!(matches!(e, RadosError::NoProgress { osd: 3, .. }), "{e:?}");
            assert!(e.to_string().contains("the omap keys of an object"), "{e}");
        }
    }
}
