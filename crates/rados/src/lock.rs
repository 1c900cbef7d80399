//! Advisory object locks: the client of the OSDs' `lock` object class
//! (src/cls/lock/cls_lock_client.cc, cls_lock_ops.h, cls_lock_types.h),
//! as librados's users (`rados lock`, rbd, rgw) take them.
//!
//! A lock is named, per object; it is exclusive (one locker) or shared
//! (many), held by lockers each known by their client's entity name
//! (`client.4123`) and a cookie of their choice, with an optional tag
//! (every locker must give the same), a description and an expiry. The
//! OSD keeps it in the object's xattr `lock.NAME`; taking a lock creates
//! the object.
//!
//! Errors are the class's, as librados reports them: EBUSY when another
//! holds the lock (or the tag or type differ), EEXIST when we already hold
//! it with that cookie (unless [`Lock::may_renew`]), ENOENT on unlocking a
//! lock we do not hold (or [`Lock::must_renew`] one we do not), EINVAL for
//! an empty name.
//!
//! ```no_run
//! # async fn f(io: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
//! use std::time::Duration;
//! use msgr_rados::lock::Lock;
//!
//! let lock = Lock::exclusive("backup")
//!     .cookie("run-17")
//!     .description("nightly backup")
//!     .duration(Duration::from_secs(60));
//! io.lock(b"obj", &lock).await?;
//! let info = io.lock_info(b"obj", "backup").await?;
//! for l in &info.lockers {
//!     println!("{} {} until {}", l.locker, l.cookie, l.expiration);
//! }
//! io.unlock(b"obj", "backup", "run-17").await?;
//! # Ok(()) }
//! ```

use std::time::Duration;

use bytes::BufMut;
use msgr_encoding::{
    decode_versioned, encode_versioned, DecodeError, DecodeResult, Decoder, Encode, EntityAddr,
    EntityName, UTime,
};

use crate::error::RadosError;
use crate::ioctx::{first_out, IoCtx};
use crate::request::{Op, Ops};

/// The object class.
pub const CLASS: &str = "lock";

/// `LOCK_FLAG_MAY_RENEW`: taking a lock we hold (same cookie) renews it
/// instead of failing with EEXIST.
pub const FLAG_MAY_RENEW: u8 = 0x1;
/// `LOCK_FLAG_MUST_RENEW`: the lock must already be ours (ENOENT if not);
/// renews it. Ceph 14 and later.
pub const FLAG_MUST_RENEW: u8 = 0x2;

/// `ClsLockType`: how a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockType {
    /// `LOCK_NONE`: nobody holds it (what an unheld lock's info says).
    None,
    /// `LOCK_EXCLUSIVE`: one locker.
    Exclusive,
    /// `LOCK_SHARED`: any number of lockers, all shared.
    Shared,
    /// `LOCK_EXCLUSIVE_EPHEMERAL`: exclusive, and unlocking removes the
    /// object (Ceph 15 and later).
    ExclusiveEphemeral,
}

impl LockType {
    /// The byte the ops carry.
    pub fn code(self) -> u8 {
        match self {
            LockType::None => 0,
            LockType::Exclusive => 1,
            LockType::Shared => 2,
            LockType::ExclusiveEphemeral => 3,
        }
    }

    /// From the byte the ops carry; None for a value Ceph does not define.
    pub fn from_code(code: u8) -> Option<LockType> {
        Some(match code {
            0 => LockType::None,
            1 => LockType::Exclusive,
            2 => LockType::Shared,
            3 => LockType::ExclusiveEphemeral,
            _ => return None,
        })
    }

    /// As `cls_lock_type_str` names it (`rados lock info`'s `type`).
    pub fn as_str(self) -> &'static str {
        match self {
            LockType::None => "none",
            LockType::Exclusive => "exclusive",
            LockType::Shared => "shared",
            LockType::ExclusiveEphemeral => "exclusive-ephemeral",
        }
    }
}

impl std::fmt::Display for LockType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A lock to take (`cls_lock_lock_op`; `rados::cls::lock::Lock`): its
/// name, type, cookie, tag, description, duration and flags.
///
/// ```no_run
/// use std::time::Duration;
/// use msgr_rados::lock::Lock;
/// # async fn f(io: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
/// let lock = Lock::exclusive("owner")
///     .cookie("worker-7")
///     .description("rebuilding the index")
///     .duration(Duration::from_secs(30));
/// match io.lock(b"index", &lock).await {
///     Ok(()) => {
///         // ... the work the lock guards ...
///         io.unlock(b"index", "owner", "worker-7").await?;
///     }
///     // EBUSY: another client holds it; see who.
///     Err(e) if e.errno() == Some(-16) => {
///         for l in io.lock_info(b"index", "owner").await?.lockers {
///             println!("held by {} ({})", l.locker, l.description);
///         }
///     }
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// The lock's name (not empty).
    pub name: String,
    /// Exclusive or shared.
    pub kind: LockType,
    /// Tells this locker's holds apart from its others (may be empty).
    pub cookie: String,
    /// Every locker of the lock must give the same tag.
    pub tag: String,
    /// What the locker says of itself.
    pub description: String,
    /// How long the lock is held (zero: until unlocked); whole seconds
    /// and nanoseconds, as a `utime_t`.
    pub duration: UTime,
    /// [`FLAG_MAY_RENEW`], [`FLAG_MUST_RENEW`].
    pub flags: u8,
}

impl Lock {
    /// An exclusive lock `name`, with no cookie, tag or description, held
    /// until unlocked.
    ///
    /// ```
    /// use std::time::Duration;
    /// use msgr_rados::lock::Lock;
    ///
    /// let lock = Lock::exclusive("backup")
    ///     .cookie("run-17")
    ///     .duration(Duration::from_millis(1500));
    /// assert_eq!((lock.duration.sec, lock.duration.nsec), (1, 500_000_000));
    /// // The CALL op of the class `lock`, method `lock`, as the OSD takes it.
    /// let op = lock.op().expect("a named lock");
    /// assert_eq!(op.op.op, 0x1401);
    /// ```
    pub fn exclusive(name: &str) -> Lock {
        Lock::new(name, LockType::Exclusive)
    }

    /// A shared lock `name`.
    pub fn shared(name: &str) -> Lock {
        Lock::new(name, LockType::Shared)
    }

    /// A lock `name` of type `kind`.
    pub fn new(name: &str, kind: LockType) -> Lock {
        Lock {
            name: name.to_string(),
            kind,
            cookie: String::new(),
            tag: String::new(),
            description: String::new(),
            duration: UTime::default(),
            flags: 0,
        }
    }

    /// With cookie `cookie`.
    pub fn cookie(mut self, cookie: &str) -> Lock {
        self.cookie = cookie.to_string();
        self
    }

    /// With tag `tag`.
    pub fn tag(mut self, tag: &str) -> Lock {
        self.tag = tag.to_string();
        self
    }

    /// With description `description`.
    pub fn description(mut self, description: &str) -> Lock {
        self.description = description.to_string();
        self
    }

    /// Held for `d` (then it expires: the OSD drops it when next read).
    pub fn duration(mut self, d: Duration) -> Lock {
        self.duration = UTime::from_duration(d);
        self
    }

    /// Renewing the lock if we hold it already ([`FLAG_MAY_RENEW`]).
    pub fn may_renew(mut self) -> Lock {
        self.flags |= FLAG_MAY_RENEW;
        self
    }

    /// Only renewing a lock we hold ([`FLAG_MUST_RENEW`]).
    pub fn must_renew(mut self) -> Lock {
        self.flags |= FLAG_MUST_RENEW;
        self
    }

    /// `cls_lock_lock_op`, ENCODE_START(1, 1).
    pub fn encode_op(&self) -> Vec<u8> {
        let mut v = Vec::new();
        encode_versioned(&mut v, 1, 1, |b| {
            self.name.encode(b);
            b.put_u8(self.kind.code());
            self.cookie.encode(b);
            self.tag.encode(b);
            self.description.encode(b);
            self.duration.encode(b);
            b.put_u8(self.flags);
        });
        v
    }

    /// The call `lock.lock` taking this lock (for a write operation).
    pub fn op(&self) -> Result<Op, RadosError> {
        Op::call(CLASS, "lock", &self.encode_op())
    }
}

/// `cls_lock_unlock_op`: `name`, `cookie`.
pub fn encode_unlock(name: &str, cookie: &str) -> Vec<u8> {
    let mut v = Vec::new();
    encode_versioned(&mut v, 1, 1, |b| {
        name.encode(b);
        cookie.encode(b);
    });
    v
}

/// `cls_lock_break_op`: `name`, the locker's entity name, its cookie.
pub fn encode_break(name: &str, locker: &EntityName, cookie: &str) -> Vec<u8> {
    let mut v = Vec::new();
    encode_versioned(&mut v, 1, 1, |b| {
        name.encode(b);
        locker.encode(b);
        cookie.encode(b);
    });
    v
}

/// `cls_lock_get_info_op`: `name`.
pub fn encode_get_info(name: &str) -> Vec<u8> {
    let mut v = Vec::new();
    encode_versioned(&mut v, 1, 1, |b| name.encode(b));
    v
}

/// `cls_lock_assert_op`: `name`, type, cookie, tag.
pub fn encode_assert(name: &str, kind: LockType, cookie: &str, tag: &str) -> Vec<u8> {
    let mut v = Vec::new();
    encode_versioned(&mut v, 1, 1, |b| {
        name.encode(b);
        b.put_u8(kind.code());
        cookie.encode(b);
        tag.encode(b);
    });
    v
}

/// `cls_lock_set_cookie_op`: `name`, type, cookie, tag, the new cookie.
pub fn encode_set_cookie(
    name: &str,
    kind: LockType,
    cookie: &str,
    tag: &str,
    new_cookie: &str,
) -> Vec<u8> {
    let mut v = Vec::new();
    encode_versioned(&mut v, 1, 1, |b| {
        name.encode(b);
        b.put_u8(kind.code());
        cookie.encode(b);
        tag.encode(b);
        new_cookie.encode(b);
    });
    v
}

/// One holder of a lock (`locker_id_t` and `locker_info_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locker {
    /// The client that holds it (`client.4123`).
    pub locker: EntityName,
    /// Its cookie.
    pub cookie: String,
    /// When the hold ends (zero: never).
    pub expiration: UTime,
    /// The client's address as the OSD saw it.
    pub addr: EntityAddr,
    /// Its description.
    pub description: String,
}

/// A lock's state (`cls_lock_get_info_reply`): who holds it, how, with
/// what tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// The holders, in the OSD's order (by entity name, then cookie).
    pub lockers: Vec<Locker>,
    /// How it is held ([`LockType::None`] when nobody holds it).
    pub kind: LockType,
    /// The lockers' tag.
    pub tag: String,
}

/// The fewest bytes one locker takes: two envelopes, an entity name, a
/// cookie's length, a utime, the smallest address, a description's
/// length.
const MIN_LOCKER_LEN: usize = 6 + 9 + 4 + 6 + 8 + EntityAddr::MIN_LEN + 4;

fn decode_lock_type(d: &mut Decoder<'_>) -> DecodeResult<LockType> {
    let t = d.u8("cls_lock lock type")?;
    LockType::from_code(t).ok_or(DecodeError::InvalidValue {
        what: "cls_lock lock type (0 to 3)",
        value: t as u64,
    })
}

/// `lock.get_info`'s output (`cls_lock_get_info_reply`, version 1):
/// bounded by its input, a malformed one a [`DecodeError`].
pub fn decode_lock_info(out: &[u8]) -> Result<LockInfo, DecodeError> {
    use msgr_encoding::Decode;
    let mut d = Decoder::new(out);
    decode_versioned(&mut d, "cls_lock_get_info_reply", 1, |d, _| {
        let n = d.length("cls_lock_get_info_reply lockers", MIN_LOCKER_LEN)?;
        let mut lockers = Vec::with_capacity(n);
        for _ in 0..n {
            let (locker, cookie) = decode_versioned(d, "locker_id_t", 1, |d, _| {
                Ok((EntityName::decode(d)?, String::decode(d)?))
            })?;
            let (expiration, addr, description) =
                decode_versioned(d, "locker_info_t", 1, |d, _| {
                    Ok((
                        UTime::decode(d)?,
                        EntityAddr::decode(d)?,
                        String::decode(d)?,
                    ))
                })?;
            lockers.push(Locker {
                locker,
                cookie,
                expiration,
                addr,
                description,
            });
        }
        let kind = decode_lock_type(d)?;
        let tag = String::decode(d)?;
        Ok(LockInfo { lockers, kind, tag })
    })
}

/// `lock.list_locks`' output (`cls_lock_list_locks_reply`, version 1):
/// the names of the object's locks.
pub fn decode_list_locks(out: &[u8]) -> Result<Vec<String>, DecodeError> {
    use msgr_encoding::Decode;
    let mut d = Decoder::new(out);
    decode_versioned(&mut d, "cls_lock_list_locks_reply", 1, |d, _| {
        Vec::<String>::decode(d)
    })
}

impl IoCtx {
    /// Takes `lock` on object `name` (creating the object), as librados's
    /// `rados::cls::lock::lock` does: a write operation calling
    /// `lock.lock`. EBUSY if another holds it (or with another tag or
    /// type), EEXIST if we hold it with this cookie already.
    pub async fn lock(&self, name: &[u8], lock: &Lock) -> Result<(), RadosError> {
        self.operate_as_write(name, Ops::new().push(lock.op()?))
            .await
            .map(drop)
    }

    /// Releases our hold of lock `lock` with `cookie` (`lock.unlock`, a
    /// write); ENOENT if we hold none.
    pub async fn unlock(&self, name: &[u8], lock: &str, cookie: &str) -> Result<(), RadosError> {
        let ops = Ops::new().call(CLASS, "unlock", &encode_unlock(lock, cookie))?;
        self.operate_as_write(name, ops).await.map(drop)
    }

    /// Breaks the hold of `locker` (`client.N`) with `cookie` on lock
    /// `lock` (`lock.break_lock`, a write); ENOENT if it holds none.
    pub async fn break_lock(
        &self,
        name: &[u8],
        lock: &str,
        locker: &EntityName,
        cookie: &str,
    ) -> Result<(), RadosError> {
        let input = encode_break(lock, locker, cookie);
        let ops = Ops::new().call(CLASS, "break_lock", &input)?;
        self.operate_as_write(name, ops).await.map(drop)
    }

    /// Who holds lock `lock` of object `name`, how, with what tag
    /// (`lock.get_info`, a read; expired holds are left out). ENOENT if
    /// the object does not exist; an unheld lock is [`LockType::None`]
    /// with no lockers.
    pub async fn lock_info(&self, name: &[u8], lock: &str) -> Result<LockInfo, RadosError> {
        let ops = Ops::new().call(CLASS, "get_info", &encode_get_info(lock))?;
        let r = self.operate(name, ops).await?;
        decode_lock_info(&first_out(&r))
            .map_err(|e| RadosError::BadReply(format!("lock.get_info of lock {lock:?}: {e}")))
    }

    /// The names of object `name`'s locks (`lock.list_locks`, through
    /// `exec` as librados does); ENOENT if the object does not exist.
    pub async fn list_locks(&self, name: &[u8]) -> Result<Vec<String>, RadosError> {
        let out = self.exec(name, CLASS, "list_locks", &[]).await?;
        decode_list_locks(&out).map_err(|e| RadosError::BadReply(format!("lock.list_locks: {e}")))
    }

    /// Moves our hold of lock `lock` (as `kind`, with `tag`) from cookie
    /// `cookie` to `new_cookie` (`lock.set_cookie`, a write): EBUSY unless
    /// we hold it so, EBUSY if `new_cookie` is ours already.
    pub async fn set_lock_cookie(
        &self,
        name: &[u8],
        lock: &str,
        kind: LockType,
        cookie: &str,
        tag: &str,
        new_cookie: &str,
    ) -> Result<(), RadosError> {
        let input = encode_set_cookie(lock, kind, cookie, tag, new_cookie);
        let ops = Ops::new().call(CLASS, "set_cookie", &input)?;
        self.operate_as_write(name, ops).await.map(drop)
    }

    /// Fails with EBUSY unless we hold lock `lock` as `kind` with `cookie`
    /// and `tag` (`lock.assert_locked`); as part of a compound operation
    /// it guards the rest ([`assert_locked_op`]).
    pub async fn assert_locked(
        &self,
        name: &[u8],
        lock: &str,
        kind: LockType,
        cookie: &str,
        tag: &str,
    ) -> Result<(), RadosError> {
        let ops = Ops::new().push(assert_locked_op(lock, kind, cookie, tag)?);
        self.operate(name, ops).await.map(drop)
    }
}

/// The call `lock.assert_locked` (for a compound operation).
pub fn assert_locked_op(
    lock: &str,
    kind: LockType,
    cookie: &str,
    tag: &str,
) -> Result<Op, RadosError> {
    Op::call(
        CLASS,
        "assert_locked",
        &encode_assert(lock, kind, cookie, tag),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_encoding::EntityType;

    #[test]
    fn the_lock_op_is_cls_lock_lock_op_v1() {
        let l = Lock::shared("L")
            .cookie("ck")
            .tag("t")
            .description("d")
            .duration(Duration::new(30, 5))
            .may_renew();
        let body: Vec<u8> = [
            &[1u8, 0, 0, 0][..],
            b"L",
            &[2],
            &[2, 0, 0, 0],
            b"ck",
            &[1, 0, 0, 0],
            b"t",
            &[1, 0, 0, 0],
            b"d",
            &30u32.to_le_bytes(),
            &5u32.to_le_bytes(),
            &[1],
        ]
        .concat();
        let mut want = vec![1u8, 1];
        want.extend_from_slice(&(body.len() as u32).to_le_bytes());
        want.extend_from_slice(&body);
        assert_eq!(l.encode_op(), want);
    }

    #[test]
    fn break_carries_the_entity_name_as_type_and_number() {
        let who = EntityName::new(EntityType::CLIENT, 4152);
        let v = encode_break("L", &who, "c");
        let body: Vec<u8> = [
            &[1u8, 0, 0, 0][..],
            b"L",
            &[EntityType::CLIENT.0],
            &4152i64.to_le_bytes(),
            &[1, 0, 0, 0],
            b"c",
        ]
        .concat();
        assert_eq!(&v[..2], &[1, 1]);
        assert_eq!(&v[2..6], &(body.len() as u32).to_le_bytes());
        assert_eq!(&v[6..], &body[..]);
    }

    /// A reply as cls_lock encodes one: two lockers, shared, tag "t".
    fn info_reply() -> Vec<u8> {
        let addr: EntityAddr = "v1:127.0.0.1:0/3339203723".parse().unwrap();
        let mut v = Vec::new();
        encode_versioned(&mut v, 1, 1, |b| {
            b.put_u32_le(2);
            for (num, cookie) in [(4152i64, "a"), (4153, "b")] {
                encode_versioned(b, 1, 1, |b| {
                    EntityName::new(EntityType::CLIENT, num).encode(b);
                    cookie.encode(b);
                });
                encode_versioned(b, 1, 1, |b| {
                    UTime::new(1_795_000_000, 1000).encode(b);
                    addr.encode(b);
                    "desc".encode(b);
                });
            }
            b.put_u8(2);
            "t".encode(b);
        });
        v
    }

    #[test]
    fn lock_info_decodes_lockers_type_and_tag() {
        let info = decode_lock_info(&info_reply()).unwrap();
        assert_eq!(info.kind, LockType::Shared);
        assert_eq!(info.tag, "t");
        assert_eq!(info.lockers.len(), 2);
        assert_eq!(info.lockers[0].locker.to_string(), "client.4152");
        assert_eq!(info.lockers[1].cookie, "b");
        assert_eq!(info.lockers[0].expiration, UTime::new(1_795_000_000, 1000));
        assert_eq!(info.lockers[0].addr.nonce, 3_339_203_723);
        assert_eq!(info.lockers[0].description, "desc");
    }

    #[test]
    fn malformed_lock_info_is_an_error_not_a_panic() {
        let good = info_reply();
        // Every truncation fails.
        for n in 0..good.len() {
            assert!(decode_lock_info(&good[..n]).is_err(), "cut at {n}");
        }
        // A hostile count is refused before allocating.
        let mut v = Vec::new();
        encode_versioned(&mut v, 1, 1, |b| b.put_u32_le(u32::MAX));
        assert!(matches!(
            decode_lock_info(&v),
            Err(DecodeError::LengthTooLarge { .. })
        ));
        // An unknown lock type.
        let mut bad = good.clone();
        let at = bad.len() - 6;
        bad[at] = 9;
        assert!(decode_lock_info(&bad).is_err());
        // A newer incompatible encoding.
        let mut newer = good;
        newer[1] = 2;
        assert!(matches!(
            decode_lock_info(&newer),
            Err(DecodeError::IncompatibleVersion { .. })
        ));
    }

    #[test]
    fn list_locks_decodes_the_names() {
        let mut v = Vec::new();
        encode_versioned(&mut v, 1, 1, |b| {
            vec!["a".to_string(), "b".to_string()].encode(b)
        });
        assert_eq!(decode_list_locks(&v).unwrap(), ["a", "b"]);
        assert!(decode_list_locks(&v[..v.len() - 1]).is_err());
    }
    /// get_info and list_locks outputs captured from Ceph 16 and 20 OSDs
    /// (Python's `ioctx.execute` after `lock_shared(obj, "S", "ck1", "tg",
    /// "shared by python", 60)` and an exclusive lock "X"; the fuzz
    /// corpus's seeds, after their selector byte).
    #[test]
    fn replies_captured_from_ceph_decode() {
        let seeds: [(&str, &[u8], &[u8]); 2] = [
            (
                "pacific",
                include_bytes!("../../../fuzz/corpus/cls_lock/pacific-info-shared"),
                include_bytes!("../../../fuzz/corpus/cls_lock/pacific-list"),
            ),
            (
                "tentacle",
                include_bytes!("../../../fuzz/corpus/cls_lock/tentacle-info-shared"),
                include_bytes!("../../../fuzz/corpus/cls_lock/tentacle-list"),
            ),
        ];
        for (release, info, list) in seeds {
            let info = decode_lock_info(&info[1..]).unwrap_or_else(|e| panic!("{release}: {e}"));
            assert_eq!(info.kind, LockType::Shared, "{release}");
            assert_eq!(info.tag, "tg", "{release}");
            assert_eq!(info.lockers.len(), 1, "{release}");
            let l = &info.lockers[0];
            assert_eq!(l.cookie, "ck1", "{release}");
            assert_eq!(l.description, "shared by python", "{release}");
            assert_eq!(l.locker.kind, EntityType::CLIENT, "{release}");
            assert_ne!(l.expiration.sec, 0, "{release}");
            assert_eq!(
                l.addr.addr.map(|a| a.ip().to_string()).as_deref(),
                Some("127.0.0.1"),
                "{release}"
            );
            let names = decode_list_locks(&list[1..]).unwrap();
            assert_eq!(names, ["S", "X"], "{release}");
        }
    }
}
