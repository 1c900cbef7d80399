//! The safe core behind `capi_admin`: the cluster log watch a handle runs
//! for `rados_monitor_log*` (entries handed to the finisher thread), the
//! service registration `rados_service_register` records, and the text
//! librados formats (log lines, addresses, `pg ls` output).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use msgr_encoding::{EntityAddr, EntityAddrType, EntityAddrvec};
use msgr_messages::log::{prio, LogEntry};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// A service daemon registration (`rados_service_register`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Service {
    /// The service (`rgw`).
    pub service: String,
    /// The daemon's name in it.
    pub daemon: String,
    /// Its static metadata.
    pub metadata: BTreeMap<String, String>,
}

#[derive(Default)]
struct Inner {
    log_task: Option<JoinHandle<()>>,
    service: Option<Service>,
    service_task: Option<JoinHandle<()>>,
}

/// A service daemon's status and whether the mgr has it yet.
pub type Status = Arc<Mutex<(BTreeMap<String, String>, bool)>>;

/// Per-handle state of the administrative calls.
#[derive(Default)]
pub struct AdminState {
    inner: Mutex<Inner>,
    /// The service daemon's status (`rados_service_update_status`).
    pub status: Status,
}

impl AdminState {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the log watch task (None: stops it), waiting on `rt` for
    /// the old one to end (so it holds nothing of the client any more).
    pub fn set_log_task(&self, rt: &Handle, task: Option<JoinHandle<()>>) {
        let old = std::mem::replace(&mut self.lock().log_task, task);
        if let Some(t) = old {
            t.abort();
            let _ = crate::runtime::block_on(rt, async move {
                let _ = t.await;
            });
        }
    }

    /// Stops the log watch and the service beacons (`rados_shutdown`).
    pub fn stop(&self, rt: &Handle) {
        self.set_log_task(rt, None);
        let old = self.lock().service_task.take();
        if let Some(t) = old {
            t.abort();
            let _ = crate::runtime::block_on(rt, async move {
                let _ = t.await;
            });
        }
    }

    /// Whether the service beacons run.
    pub fn beacons_running(&self) -> bool {
        self.lock().service_task.is_some()
    }

    /// Records the task sending the service beacons.
    pub fn set_service_task(&self, task: JoinHandle<()>) {
        if let Some(old) = self.lock().service_task.replace(task) {
            old.abort();
        }
    }

    /// The registration, if any.
    pub fn service(&self) -> Option<Service> {
        self.lock().service.clone()
    }

    /// Records a registration; -EEXIST if there is one (librados's
    /// `service_daemon_register`).
    pub fn register(&self, s: Service) -> Result<(), i32> {
        let mut inner = self.lock();
        if inner.service.is_some() {
            return Err(-libc::EEXIST);
        }
        inner.service = Some(s);
        Ok(())
    }
}

/// A `"\0"`-separated dict (`key\0value\0...\0\0`) as librados's
/// `dict_to_map` reads it: pairs until an empty key.
pub fn dict_to_map(bytes: &[&[u8]]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for pair in bytes.chunks(2) {
        if let [k, v] = pair {
            m.insert(
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            );
        }
    }
    m
}

/// What librados's `collect_sys_info` tells of this host that this
/// library knows: `hostname`, `arch`, `os`, `kernel_version`,
/// `kernel_description`.
pub fn sys_info() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    // SAFETY: uname fills the zeroed struct we own; its fields are
    // NUL-terminated.
    #[allow(unsafe_code)]
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) == 0 {
            let f = |p: &[libc::c_char]| {
                std::ffi::CStr::from_ptr(p.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            m.insert("hostname".to_string(), f(&u.nodename));
            m.insert("arch".to_string(), f(&u.machine));
            m.insert("os".to_string(), f(&u.sysname));
            m.insert("kernel_version".to_string(), f(&u.release));
            m.insert("kernel_description".to_string(), f(&u.version));
        }
    }
    m
}

/// Ceph's `clog_type` as it prints it.
pub fn prio_name(p: u16) -> &'static str {
    match p {
        prio::DEBUG => "[DBG]",
        prio::INFO => "[INF]",
        prio::SEC => "[SEC]",
        prio::WARN => "[WRN]",
        prio::ERROR => "[ERR]",
        _ => "[???]",
    }
}

/// An address as Ceph's `entity_addr_t` prints it (a client's, of type
/// ANY, without a prefix: `127.0.0.1:0/1446458539`).
pub fn addr_string(a: &EntityAddr) -> String {
    if a.kind == EntityAddrType::ANY {
        match a.addr {
            Some(s) => format!("{s}/{}", a.nonce),
            None => format!("(unspec)/{}", a.nonce),
        }
    } else {
        a.to_string()
    }
}

/// An address vector as Ceph's `entity_addrvec_t` prints it: its one
/// address, or `[a,b]`.
pub fn addrvec_string(v: &EntityAddrvec) -> String {
    match v.0.as_slice() {
        [one] => addr_string(one),
        all => format!(
            "[{}]",
            all.iter().map(addr_string).collect::<Vec<_>>().join(",")
        ),
    }
}

/// A stamp as Ceph's `utime_t` prints it: local time,
/// `2026-11-28T21:15:00.123456+0000`.
pub fn stamp_string(sec: u32, nsec: u32) -> String {
    let t = libc::time_t::from(sec);
    // SAFETY: localtime_r writes the zeroed struct we own; strftime
    // writes at most the buffer's length.
    #[allow(unsafe_code)]
    let s = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return format!("{sec}.{:06}", nsec / 1000);
        }
        let mut date = [0u8; 64];
        let n = libc::strftime(
            date.as_mut_ptr().cast(),
            date.len(),
            c"%Y-%m-%dT%H:%M:%S".as_ptr(),
            &tm,
        );
        let mut zone = [0u8; 16];
        let z = libc::strftime(zone.as_mut_ptr().cast(), zone.len(), c"%z".as_ptr(), &tm);
        format!(
            "{}.{:06}{}",
            String::from_utf8_lossy(date.get(..n).unwrap_or_default()),
            nsec / 1000,
            String::from_utf8_lossy(zone.get(..z).unwrap_or_default())
        )
    };
    s
}

/// What librados's `handle_log` hands a callback for one entry.
pub struct LogLine {
    /// `STAMP NAME LEVEL MSG`.
    pub line: String,
    /// `cluster` or the entry's channel.
    pub channel: String,
    /// `RANK ADDRS` (`client.4123 127.0.0.1:0/77`).
    pub who: String,
    /// The auth name (`client.admin`).
    pub name: String,
    /// Seconds and nanoseconds of the stamp.
    pub sec: u64,
    /// Nanoseconds.
    pub nsec: u64,
    /// The sender's sequence number.
    pub seq: u64,
    /// `[INF]`, ...
    pub level: String,
    /// The text.
    pub msg: String,
}

impl LogLine {
    /// The fields librados formats from `e`.
    pub fn of(e: &LogEntry) -> LogLine {
        let name = e.name.to_string();
        let level = prio_name(e.prio).to_string();
        LogLine {
            line: format!(
                "{} {} {} {}",
                stamp_string(e.stamp.sec, e.stamp.nsec),
                name,
                level,
                e.msg
            ),
            channel: e.channel.clone(),
            who: format!("{} {}", e.rank, addrvec_string(&e.addrs)),
            name,
            sec: u64::from(e.stamp.sec),
            nsec: u64::from(e.stamp.nsec),
            seq: e.seq,
            level,
            msg: e.msg.clone(),
        }
    }
}

/// The `pgid`s of a `pg ls -f json` reply (an array, or an object with
/// `pg_stats`), as librados's `get_inconsistent_pgs` reads them; None if
/// it is not JSON it can read.
pub fn pgids_of(json: &str) -> Option<Vec<String>> {
    let t = json.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(at) = rest.find("\"pgid\"") {
        rest = rest.get(at.saturating_add(6)..)?;
        let after = rest.trim_start().strip_prefix(':')?.trim_start();
        let after = after.strip_prefix('"')?;
        let end = after.find('"')?;
        out.push(after.get(..end)?.to_string());
        rest = after.get(end..)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_ceph_prints() {
        let a: EntityAddr = "v2:127.0.0.1:3300/0".parse().unwrap();
        assert_eq!(addr_string(&a), "v2:127.0.0.1:3300/0");
        let v = EntityAddrvec(vec![a, "v1:127.0.0.1:6789/0".parse().unwrap()]);
        assert_eq!(
            addrvec_string(&v),
            "[v2:127.0.0.1:3300/0,v1:127.0.0.1:6789/0]"
        );
        assert_eq!(prio_name(prio::WARN), "[WRN]");
        let s = stamp_string(0, 123_456_000);
        assert!(s.contains('T') && s.contains(".123456"), "{s}");
    }

    #[test]
    fn pg_ls_output() {
        let obj = r#"{"pg_ready":true,"pg_stats":[{"pgid":"3.1","state":"x"},{"pgid": "3.a"}]}"#;
        assert_eq!(pgids_of(obj).unwrap(), ["3.1", "3.a"]);
        assert_eq!(pgids_of("[]").unwrap(), Vec::<String>::new());
        assert!(pgids_of("nope").is_none());
    }

    #[test]
    fn dicts_and_registration() {
        let m = dict_to_map(&[b"a", b"1", b"b", b"2"]);
        assert_eq!(m.get("b").map(String::as_str), Some("2"));
        let st = AdminState::default();
        assert_eq!(st.register(Service::default()), Ok(()));
        assert_eq!(st.register(Service::default()), Err(-libc::EEXIST));
    }
}
