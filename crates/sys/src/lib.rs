//! Thread placement for the messenger's shards: which CPUs the process may
//! run on, and pinning a thread to one of them; the open-file limit a
//! process holding many connections raises; and the one socket option the
//! standard library and socket2 lack (SO_RCVLOWAT).
//!
//! The messenger runs its connections on shards, threads each driving its
//! own current-thread runtime. As crimson does (seastar's reactor pins one
//! thread per core), it pins each shard's thread to one core: a shard's
//! connections, buffers and caches then stay on one CPU, and the scheduler
//! does not move two shards onto one core while another idles. That needs
//! two things the standard library does not offer: the CPUs this process
//! may use (a cpuset from taskset or a container, not only how many) and
//! setting a thread's affinity. Both are C calls (`sched_getaffinity`,
//! `sched_setaffinity` on Linux), made here so that every other crate
//! keeps `unsafe_code = "forbid"`.
//!
//! # Unsafe code
//! The crate denies unsafe code and allows it block by block: the libc
//! calls and the zeroed `cpu_set_t` they take, each with the argument why
//! it is sound. A CPU number is checked against `CPU_SETSIZE` before it
//! reaches `CPU_SET` or `CPU_ISSET`. The API is safe.
#![warn(missing_docs)]
#![deny(unsafe_code)]

use std::io;
use std::num::NonZeroUsize;

/// CPUs this process may run on (sched_getaffinity), in order; on other
/// OSes, 0..available_parallelism.
///
/// On Linux this is the calling thread's affinity, which is the process's
/// until the thread is pinned: call it before pinning, from the thread
/// that starts the shards. Where the mask cannot be read (more CPUs than a
/// `cpu_set_t` holds) it falls back as other OSes do.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    if let Some(cpus) = linux::thread_cpus().ok().filter(|c| !c.is_empty()) {
        return cpus;
    }
    let n = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    (0..n).collect()
}

/// Pins the calling thread to `cpu` (sched_setaffinity on Linux); Err where
/// the OS refuses or cannot.
///
/// Errors: `InvalidInput` for a CPU number past what a `cpu_set_t` holds;
/// the kernel's error (EINVAL) for one not in the process's cpuset or not
/// online; `Unsupported` on other OSes.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        linux::pin_current_thread(cpu)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "pinning a thread to a CPU is implemented for Linux only",
        ))
    }
}

/// Raises this process's limit on open files (RLIMIT_NOFILE) to its hard
/// limit, as servers holding many connections do (Ceph's daemons raise it
/// to `max_open_files`); returns the limit now in force. Unix only
/// (`Unsupported` elsewhere).
pub fn raise_fd_limit() -> io::Result<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit through a pointer to a live,
        // properly aligned local of that type; nothing else is touched.
        #[allow(unsafe_code)]
        let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        if got != 0 {
            return Err(io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            // SAFETY: setrlimit reads one rlimit from a live local; a limit
            // within the hard limit needs no privilege.
            #[allow(unsafe_code)]
            let set = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
            if set != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(lim.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "raising the open-file limit is implemented for Unix only",
        ))
    }
}

/// The CPU time this process has used so far, user + system, over all its
/// threads (getrusage RUSAGE_SELF: microseconds, where /proc/self/stat
/// counts clock ticks), for a benchmark's CPU per op. Unix only
/// (`Unsupported` elsewhere).
pub fn process_cpu_time() -> io::Result<std::time::Duration> {
    #[cfg(unix)]
    {
        // SAFETY: rusage is plain integers and timevals: all zero bits is
        // a valid value.
        #[allow(unsafe_code)]
        let mut r = unsafe { std::mem::zeroed::<libc::rusage>() };
        // SAFETY: getrusage writes one rusage through a pointer to a live,
        // properly aligned local of that type; nothing else is touched.
        #[allow(unsafe_code)]
        let got = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
        if got != 0 {
            return Err(io::Error::last_os_error());
        }
        let micros = |t: libc::timeval| {
            let s = u64::try_from(t.tv_sec).unwrap_or(0);
            let us = u64::try_from(t.tv_usec).unwrap_or(0);
            std::time::Duration::from_secs(s).saturating_add(std::time::Duration::from_micros(us))
        };
        Ok(micros(r.ru_utime).saturating_add(micros(r.ru_stime)))
    }
    #[cfg(not(unix))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the process's CPU time is read on Unix only",
        ))
    }
}

/// Sets a socket's receive low-water mark (SO_RCVLOWAT): readiness, and
/// the wake-up of a reader, wait until that many bytes are queued (Linux
/// caps it at half the largest receive buffer, and grows the buffer to
/// hold it). A reader of a large frame asks for the frame's rest: one
/// wake-up when it is all there instead of one per segment, and a peer
/// whose sends do not each wake us. Unix only (`Unsupported` elsewhere).
pub fn set_recv_lowat(fd: &impl std::os::fd::AsFd, bytes: usize) -> io::Result<()> {
    #[cfg(unix)]
    {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, bytes)
    }
    #[cfg(not(unix))]
    {
        let _ = (fd, bytes);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "SO_RCVLOWAT is set on Unix only",
        ))
    }
}

/// Sets a TCP socket's unsent low-water mark (TCP_NOTSENT_LOWAT): the
/// kernel takes writes, and reports the socket writable, only while fewer
/// than `bytes` written bytes wait unsent (those in flight, sent and not
/// acknowledged, are not counted). What the kernel has taken goes out in
/// order whatever comes later; bytes kept in user space can still be
/// passed by a message of higher priority. Linux only (`Unsupported`
/// elsewhere).
pub fn set_unsent_lowat(fd: &impl std::os::fd::AsFd, bytes: usize) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, bytes);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "TCP_NOTSENT_LOWAT is set on Linux only",
        ))
    }
}

/// setsockopt of an int option, `v` saturated to c_int's range.
#[cfg(unix)]
fn setsockopt_int(
    fd: &impl std::os::fd::AsFd,
    level: libc::c_int,
    option: libc::c_int,
    v: usize,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let v = libc::c_int::try_from(v).unwrap_or(libc::c_int::MAX);
    // SAFETY: the fd is borrowed open for the call; setsockopt reads
    // `optlen` bytes from a pointer to a live, aligned c_int local, as the
    // int options this is called with take.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            option,
            std::ptr::from_ref(&v).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::mem;

    use libc::cpu_set_t;

    /// How many CPUs a `cpu_set_t` holds (1024 with glibc): the bound on
    /// every index given to `CPU_SET` / `CPU_ISSET`. A positive constant,
    /// so the cast is exact.
    pub(crate) const SET_SIZE: usize = libc::CPU_SETSIZE as usize;

    /// The empty set.
    fn empty_set() -> cpu_set_t {
        // SAFETY: cpu_set_t is a plain array of integers (a bit mask, no
        // pointers, no invariants): all zero bits is a valid value, the
        // empty set (what CPU_ZERO makes).
        #[allow(unsafe_code)]
        let set = unsafe { mem::zeroed::<cpu_set_t>() };
        set
    }

    /// Whether `cpu` is in `set`; false past the set's size.
    fn contains(set: &cpu_set_t, cpu: usize) -> bool {
        if cpu >= SET_SIZE {
            return false;
        }
        // SAFETY: CPU_ISSET only reads bit `cpu` of the set's array, and
        // `cpu < CPU_SETSIZE` (checked above) keeps that bit inside it.
        #[allow(unsafe_code)]
        let set = unsafe { libc::CPU_ISSET(cpu, set) };
        set
    }

    /// The calling thread's affinity mask, as CPU numbers in order.
    pub(crate) fn thread_cpus() -> io::Result<Vec<usize>> {
        let mut set = empty_set();
        // SAFETY: pid 0 names the calling thread; the kernel writes at most
        // `cpusetsize` bytes to the mask, and `set` is a cpu_set_t of
        // exactly that size, exclusively borrowed for the call.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..SET_SIZE).filter(|&cpu| contains(&set, cpu)).collect())
    }

    pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
        if cpu >= SET_SIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is past the {SET_SIZE} a cpu_set_t holds"),
            ));
        }
        let mut set = empty_set();
        // SAFETY: CPU_SET only sets bit `cpu` of the set's array, and
        // `cpu < CPU_SETSIZE` (checked above) keeps that bit inside it.
        #[allow(unsafe_code)]
        unsafe {
            libc::CPU_SET(cpu, &mut set)
        };
        // SAFETY: pid 0 names the calling thread; the kernel reads
        // `cpusetsize` bytes of the mask, and `set` is a cpu_set_t of
        // exactly that size, borrowed for the call.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::sched_setaffinity(0, mem::size_of::<cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU the calling thread runs on now.
    #[cfg(target_os = "linux")]
    fn current_cpu() -> usize {
        // SAFETY: sched_getcpu takes nothing and only returns a number (or
        // -1 with errno).
        #[allow(unsafe_code)]
        let cpu = unsafe { libc::sched_getcpu() };
        usize::try_from(cpu).expect("sched_getcpu failed")
    }

    #[cfg(unix)]
    #[test]
    fn the_fd_limit_is_raised_to_the_hard_limit() {
        let now = raise_fd_limit().unwrap();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as in raise_fd_limit.
        #[allow(unsafe_code)]
        let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        assert_eq!(got, 0);
        assert_eq!(lim.rlim_cur, lim.rlim_max);
        assert_eq!(now, lim.rlim_cur);
    }

    #[test]
    fn allowed_cpus_are_listed_in_order() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        assert!(
            cpus.windows(2).all(|w| matches!(w, [a, b] if a < b)),
            "{cpus:?}"
        );
    }

    /// A thread pinned to an allowed CPU runs there and may run only
    /// there, and pinning it leaves the other threads' affinity alone.
    #[cfg(target_os = "linux")]
    #[test]
    fn pinned_thread_runs_on_its_cpu() {
        let cpus = allowed_cpus();
        let first = *cpus.first().unwrap();
        let last = *cpus.last().unwrap();
        for cpu in [first, last] {
            std::thread::spawn(move || {
                pin_current_thread(cpu).unwrap();
                assert_eq!(linux::thread_cpus().unwrap(), vec![cpu]);
                assert_eq!(allowed_cpus(), vec![cpu]);
                assert_eq!(current_cpu(), cpu);
                // Still there after a reschedule.
                std::thread::yield_now();
                assert_eq!(current_cpu(), cpu);
            })
            .join()
            .unwrap();
        }
        assert_eq!(allowed_cpus(), cpus);
    }

    /// CPU numbers a cpu_set_t cannot hold, and ones the process may not
    /// use, are errors (no index past CPU_SETSIZE, no panic), and the
    /// thread's affinity stays as it was.
    #[test]
    fn pinning_to_an_absurd_cpu_is_an_error() {
        std::thread::spawn(|| {
            let before = allowed_cpus();
            for cpu in [100_000, usize::MAX] {
                let err = pin_current_thread(cpu).unwrap_err();
                #[cfg(target_os = "linux")]
                assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
                #[cfg(not(target_os = "linux"))]
                assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
            }
            #[cfg(target_os = "linux")]
            {
                // Inside the set's size but outside the process's CPUs:
                // the kernel refuses it.
                let outside = (0..linux::SET_SIZE).find(|c| !before.contains(c)).unwrap();
                assert!(pin_current_thread(outside).is_err());
                // The first number past the set's size.
                let err = pin_current_thread(linux::SET_SIZE).unwrap_err();
                assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
            }
            assert_eq!(allowed_cpus(), before);
        })
        .join()
        .unwrap();
    }

    #[cfg(not(target_os = "linux"))]
    #[test]
    fn pinning_is_unsupported() {
        let err = pin_current_thread(0).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Unsupported);
    }

    #[cfg(unix)]
    #[test]
    fn process_cpu_time_counts_a_busy_loop() {
        let before = process_cpu_time().unwrap();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spent = process_cpu_time().unwrap() - before;
        // 50 ms spinning is at least some CPU time, and a process cannot
        // have used more than its threads' wall time (a handful here).
        assert!(spent >= std::time::Duration::from_millis(10), "{spent:?}");
        assert!(spent < std::time::Duration::from_secs(5), "{spent:?}");
    }
}

/// What TCP knows of a connection's path (TCP_INFO): whether bytes are in
/// flight, how many retransmissions (or zero-window probes) in a row went
/// unanswered, and how long since the peer's host acknowledged anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPath {
    /// Segments sent and not yet acknowledged (tcpi_unacked).
    pub unacked: u32,
    /// Retransmissions of the oldest unacknowledged segment in a row
    /// (tcpi_retransmits).
    pub retransmits: u8,
    /// Zero-window probes in a row unanswered (tcpi_probes).
    pub probes: u8,
    /// Since the last acknowledgement arrived (tcpi_last_ack_recv).
    pub since_ack: std::time::Duration,
}

/// The path of TCP socket `fd` (Linux's TCP_INFO; `Unsupported` elsewhere).
pub fn tcp_path(fd: &impl std::os::fd::AsFd) -> io::Result<TcpPath> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: tcp_info is plain data (integers), valid all-zero.
        #[allow(unsafe_code)]
        let mut info = unsafe { std::mem::zeroed::<libc::tcp_info>() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: the fd is borrowed open for the call; getsockopt writes at
        // most `len` bytes into `info`, a live local of that size, and
        // stores the length it wrote in `len`.
        #[allow(unsafe_code)]
        let r = unsafe {
            libc::getsockopt(
                fd.as_fd().as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                std::ptr::from_mut(&mut info).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TcpPath {
            unacked: info.tcpi_unacked,
            retransmits: info.tcpi_retransmits,
            probes: info.tcpi_probes,
            since_ack: std::time::Duration::from_millis(u64::from(info.tcpi_last_ack_recv)),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = fd;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "TCP_INFO is read on Linux only",
        ))
    }
}
