//! Object class calls: `CEPH_OSD_OP_CALL` runs a method of a class the OSD
//! loaded (`cls_lock`, `cls_hello`, `cls_rbd`, ...) on one object, with an
//! input the method decodes and an output it encodes (librados's
//! `rados_exec`, `ObjectOperation::call`; src/include/rados.h,
//! src/osdc/Objecter.h).
//!
//! A call is a read-mode op (`CEPH_OSD_OP_MODE_RD`): whether it writes is
//! the method's business (its `CLS_METHOD_WR`), known to the OSD only.
//! librados sends it as the operation it is part of says: `rados_exec` as
//! a read (`IoCtxImpl::exec` → `operate_read`), an
//! `ObjectWriteOperation`'s `exec` as a write (the WRITE flag, the mtime,
//! the snap context). [`IoCtx::exec`] and [`IoCtx::exec_write`] are those
//! two.

use bytes::Bytes;

use crate::compound::{into_result, now};
use crate::error::RadosError;
use crate::ioctx::{first_out, IoCtx};
use crate::request::{flag, Op, Ops, Reply};

/// `CEPH_OSD_OP_CALL`: `__CEPH_OSD_OP(RD, EXEC, 1)`.
pub const CALL: u16 = 0x1401;

/// The longest class or method name a call carries: the `cls` union
/// member's `__u8 class_len`, `__u8 method_len`.
pub const MAX_NAME_LEN: usize = u8::MAX as usize;

impl Op {
    /// `CEPH_OSD_OP_CALL` of `class`.`method` with `input`: the `cls`
    /// member of the op's arguments (`u8 class_len; u8 method_len; u8
    /// argc; le32 indata_len`, packed), and as input data the class name,
    /// the method name and `input`, one after the other
    /// (`ObjectOperation::add_call`). A name longer than
    /// [`MAX_NAME_LEN`] bytes, or an empty one, is
    /// [`RadosError::InvalidArgument`]; so is an input of 4 GiB or more.
    pub fn call(class: &str, method: &str, input: &[u8]) -> Result<Op, RadosError> {
        let len8 = |what: &str, name: &str| {
            match u8::try_from(name.len()) {
            Ok(0) => Err(RadosError::InvalidArgument(format!(
                "an object class call needs a {what} name; got an empty one"
            ))),
            Ok(n) => Ok(n),
            Err(_) => Err(RadosError::InvalidArgument(format!(
                "the {what} name {:?}... is {} bytes; CEPH_OSD_OP_CALL carries at most {MAX_NAME_LEN}",
                name.chars().take(16).collect::<String>(),
                name.len()
            ))),
        }
        };
        let class_len = len8("class", class)?;
        let method_len = len8("method", method)?;
        let input_len = u32::try_from(input.len()).map_err(|_| {
            RadosError::InvalidArgument(format!(
                "a class call's input of {} bytes: at most {} fit its le32 length",
                input.len(),
                u32::MAX
            ))
        })?;
        let mut o = Op::new(CALL);
        o.op.args[0] = class_len;
        o.op.args[1] = method_len;
        // argc: unused by the OSD, 0 as librados leaves it.
        o.op.args[2] = 0;
        o.op.args[3..7].copy_from_slice(&input_len.to_le_bytes());
        let mut indata = Vec::with_capacity(
            class
                .len()
                .saturating_add(method.len())
                .saturating_add(input.len()),
        );
        indata.extend_from_slice(class.as_bytes());
        indata.extend_from_slice(method.as_bytes());
        indata.extend_from_slice(input);
        o.indata = Bytes::from(indata);
        Ok(o)
    }
}

impl Ops {
    /// Adds a call of `class`.`method` with `input` ([`Op::call`]); its
    /// output is its op's `outdata` in the [`Reply`].
    pub fn call(self, class: &str, method: &str, input: &[u8]) -> Result<Ops, RadosError> {
        Ok(self.push(Op::call(class, method, input)?))
    }
}

impl IoCtx {
    /// Runs method `method` of object class `class` on object `name` with
    /// `input`, as a read (librados's `rados_exec` / `IoCtx::exec`): the
    /// method's output. The OSD still lets a writing method write (its
    /// class flags say so), but the request carries no mtime nor snap
    /// context: for a method that writes, [`IoCtx::exec_write`] is what
    /// an `ObjectWriteOperation` would send.
    ///
    /// Errors are the method's errno (e.g. EBUSY from `lock.lock`), or
    /// EOPNOTSUPP for a class or method the OSD does not have.
    ///
    /// ```no_run
    /// # async fn f(io: msgr_rados::IoCtx) -> Result<(), msgr_rados::RadosError> {
    /// // cls_lock's list_locks: a cls_lock_list_locks_reply.
    /// let out = io.exec(b"obj", "lock", "list_locks", &[]).await?;
    /// let locks = msgr_rados::lock::decode_list_locks(&out)
    ///     .map_err(|e| msgr_rados::RadosError::BadReply(e.to_string()))?;
    /// println!("{locks:?}");
    /// # Ok(()) }
    /// ```
    pub async fn exec(
        &self,
        name: &[u8],
        class: &str,
        method: &str,
        input: &[u8],
    ) -> Result<Bytes, RadosError> {
        let ops = Ops::new().call(class, method, input)?;
        let r = self.operate(name, ops).await?;
        Ok(first_out(&r))
    }

    /// Runs `class`.`method` on object `name` as a write (an
    /// `ObjectWriteOperation` holding only the call): the WRITE flag, the
    /// write's mtime and this context's snap context; the method's
    /// output (usually empty: librados drops a write's outputs unless
    /// asked for them).
    pub async fn exec_write(
        &self,
        name: &[u8],
        class: &str,
        method: &str,
        input: &[u8],
    ) -> Result<Bytes, RadosError> {
        let ops = Ops::new().call(class, method, input)?;
        let r = self.operate_as_write(name, ops).await?;
        Ok(first_out(&r))
    }

    /// Runs `ops` on object `name` as a write whatever its ops' modes (as
    /// librados sends an `ObjectWriteOperation`: the WRITE flag, the
    /// mtime, the snap context), through the compound operations' path.
    pub(crate) async fn operate_as_write(
        &self,
        name: &[u8],
        ops: Ops,
    ) -> Result<Reply, RadosError> {
        let r = self
            .operate_compound(name, &ops.0, flag::WRITE, now(), self.read_snap)
            .await?;
        into_result(name, r).map(|r| r.reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objecter::{Object, Request};

    #[test]
    fn a_call_carries_its_names_and_input_as_librados_lays_them_out() {
        let o = Op::call("lock", "get_info", b"\x01\x02\x03").unwrap();
        assert_eq!(o.op.op, 0x1401);
        assert!(!o.writes(), "CALL is a read-mode op");
        // class_len 4, method_len 8, argc 0, indata_len 3; the rest zero.
        let mut args = [0u8; 28];
        args[..7].copy_from_slice(&[4, 8, 0, 3, 0, 0, 0]);
        assert_eq!(o.op.args, args);
        assert_eq!(&o.indata[..], b"lockget_info\x01\x02\x03");
    }

    #[test]
    fn names_that_do_not_fit_a_u8_or_are_empty_are_refused() {
        let long = "c".repeat(256);
        let e = Op::call(&long, "m", b"").unwrap_err();
        assert!(matches!(e, RadosError::InvalidArgument(_)), "{e}");
        assert_eq!(e.errno(), Some(-22));
        assert!(e.to_string().contains("256 bytes"), "{e}");
        let e = Op::call("c", &long, b"").unwrap_err();
        assert!(e.to_string().contains("method"), "{e}");
        assert!(Op::call("", "m", b"").is_err());
        assert!(Op::call("c", "", b"").is_err());
        // 255 is the most that fits.
        let max = "m".repeat(255);
        let o = Op::call("c", &max, b"").unwrap();
        assert_eq!(o.op.args[1], 255);
    }

    #[test]
    fn a_write_marked_request_writes_though_its_ops_read() {
        let object = Object {
            pool: 1,
            name: Bytes::from_static(b"o"),
            nspace: String::new(),
            key: String::new(),
            pg: None,
        };
        let ops = Ops::new().call("lock", "lock", b"").unwrap();
        let read = Request::new(object.clone(), ops.clone());
        assert!(!read.writes());
        let write = Request {
            flags: flag::WRITE,
            ..Request::new(object, ops)
        };
        assert!(write.writes());
    }
}
