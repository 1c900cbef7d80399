//! The safe core behind the C API: a cluster handle (`rados_t`) owning its
//! runtime and going configuring -> connected -> shut down, an I/O context
//! handle (`rados_ioctx_t`), and the errno each failure is reported as.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

use msgr_rados::{IoCtx, Rados, RadosConfig, RadosError};
use tokio::runtime::{Handle, Runtime};

use crate::aio::{Finisher, Writes};
use crate::errno::{errno_of, mon_errno};
use crate::runtime::block_on;

/// The tokio worker threads each cluster handle runs (the messengers'
/// connections, the monitor session, the objecter's timers).
pub const WORKER_THREADS: usize = 2;

/// The most threads tokio's blocking pool of a handle holds at once (the
/// objecter's placements after a new map or a reset run there); started
/// on demand, an idle one ends after 10 s.
pub const BLOCKING_THREADS: usize = 2;

/// How long a monitor command may take when `rados_mon_op_timeout` is not
/// set (librados then waits as long as it takes; this bounds a lost reply).
pub const MON_COMMAND_TIMEOUT: Duration = Duration::from_secs(3600);

/// The levels librados sets an option at, lowest first (md_config_t's
/// CONF_ENV, CONF_CMDLINE, CONF_OVERRIDE): a value set at a higher level
/// wins over one set at a lower level, whichever came last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `rados_conf_parse_env`.
    Env = 0,
    /// `rados_conf_parse_argv*`.
    Cmdline = 1,
    /// `rados_conf_set`.
    Override = 2,
}

struct State {
    /// The configuration files and names (`rados_create*`,
    /// `rados_conf_read_file`), without the options set at a level.
    base: RadosConfig,
    /// What each [`Level`] sets, in order.
    levels: [Vec<(String, String)>; 3],
    /// `base` with the levels' options on top: what connects.
    config: RadosConfig,
    rados: Option<Arc<Rados>>,
    mon_timeout: Duration,
}

/// What `rados_t` points to: the configuration until `rados_connect`, then
/// the connected client, and the runtime it runs on.
///
/// Thread safety as librados documents it: configuring and connecting
/// from one thread; once connected, every call may come from any thread.
///
/// What `rados_create2`, `rados_conf_read_file`, `rados_connect`,
/// `rados_ioctx_create`, `rados_write_full` and `rados_shutdown` do:
///
/// ```no_run
/// use msgr_rados::RadosConfig;
/// use rados::Cluster;
///
/// # fn main() -> Result<(), i32> {
/// let cluster = Cluster::new(RadosConfig::with_name("client.admin").map_err(|_| -22)?)?;
/// cluster.configure(|c| c.conf_read_file("/etc/ceph/ceph.conf").map_err(|_| -22))?;
/// cluster.connect()?;
/// let io = cluster.ioctx("test")?;
/// io.run(|ctx| async move { ctx.write_full(b"greeting", "hello".into()).await })?;
/// cluster.shutdown();
/// # Ok(()) }
/// ```
pub struct Cluster {
    rt: Runtime,
    state: Mutex<State>,
    finisher: Arc<Finisher>,
    /// The cluster log watch and the service registration (admin.rs).
    pub(crate) admin: crate::admin::AdminState,
}

/// A reply to a monitor command: its result, output and status line.
pub struct CommandOutput {
    /// 0 or a negative errno.
    pub r: i32,
    /// The command's output (`outbuf`).
    pub out: Vec<u8>,
    /// The status line (`outs`).
    pub status: String,
}

impl Cluster {
    /// A handle for `config`, not connected: its runtime is built now
    /// (threads start here, as librados's `rados_create` starts its
    /// context's).
    pub fn new(config: RadosConfig) -> Result<Cluster, i32> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .max_blocking_threads(BLOCKING_THREADS)
            .thread_name("msgr-rados")
            .enable_all()
            .build()
            .map_err(|e| 0i32.saturating_sub(e.raw_os_error().unwrap_or(libc::ENOMEM)))?;
        Ok(Cluster {
            rt,
            state: Mutex::new(State {
                base: config.clone(),
                levels: Default::default(),
                config,
                rados: None,
                mon_timeout: MON_COMMAND_TIMEOUT,
            }),
            finisher: Arc::new(Finisher::default()),
            admin: crate::admin::AdminState::default(),
        })
    }

    /// A copy of the configuration (`rados_create_with_context`).
    pub fn config(&self) -> RadosConfig {
        self.state().config.clone()
    }

    /// How long a monitor or mgr command may take (`rados_mon_op_timeout`).
    pub fn mon_timeout(&self) -> Duration {
        self.state().mon_timeout
    }

    /// The handle's runtime.
    pub fn runtime(&self) -> Handle {
        self.rt.handle().clone()
    }

    /// The handle's finisher (callbacks run there).
    pub fn finisher(&self) -> Arc<Finisher> {
        Arc::clone(&self.finisher)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the configuration with `f` (which fails with an errno and
    /// leaves it as it was).
    pub fn configure(
        &self,
        f: impl FnOnce(RadosConfig) -> Result<RadosConfig, i32>,
    ) -> Result<(), i32> {
        let mut st = self.state();
        st.base = f(st.base.clone())?;
        Self::rebuild(&mut st);
        Ok(())
    }

    /// Sets option `key` to `value` at `level` (the caller has checked
    /// both against Ceph's schema).
    pub fn set_option(&self, level: Level, key: &str, value: &str) {
        let mut st = self.state();
        if let Some(l) = st.levels.get_mut(level as usize) {
            l.push((key.to_string(), value.to_string()));
        }
        Self::rebuild(&mut st);
    }

    fn rebuild(st: &mut State) {
        let mut config = st.base.clone();
        for (k, v) in st.levels.iter().flatten() {
            config = config.conf_set(k, v);
        }
        st.config = config;
    }

    /// Whether a configuration file has been read (librados then keeps
    /// it when `rados_conf_read_file` finds none of the files named).
    pub fn has_conf_file(&self) -> bool {
        self.state().base.conf_file().is_some()
    }

    /// Option `key`'s value, -ENOENT if nothing sets it.
    pub fn conf_get(&self, key: &str) -> Result<String, i32> {
        let config = self.state().config.clone();
        config
            .conf_get(key)
            .map_err(|e| errno_of(&e))?
            .ok_or(-libc::ENOENT)
    }

    /// Connects (`rados_connect`): -EISCONN if connected already.
    pub fn connect(&self) -> Result<(), i32> {
        let config = {
            let st = self.state();
            if st.rados.is_some() {
                return Err(-libc::EISCONN);
            }
            st.config.clone()
        };
        let mon_timeout = match config.conf_get("rados_mon_op_timeout") {
            Ok(Some(v)) => match v.trim().parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Duration::from_secs_f64(s),
                Ok(_) => MON_COMMAND_TIMEOUT,
                Err(_) => return Err(-libc::EINVAL),
            },
            Ok(None) => MON_COMMAND_TIMEOUT,
            Err(e) => return Err(errno_of(&e)),
        };
        let rados = block_on(self.rt.handle(), async move { config.connect().await })?
            .map_err(|e| errno_of(&e))?;
        let mut st = self.state();
        st.rados = Some(Arc::new(rados));
        st.mon_timeout = mon_timeout;
        Ok(())
    }

    /// The connected client, -ENOTCONN before `rados_connect`.
    pub fn rados(&self) -> Result<Arc<Rados>, i32> {
        self.state().rados.clone().ok_or(-libc::ENOTCONN)
    }

    /// Runs `fut` on this handle's runtime, waiting for it.
    pub fn block<F>(&self, fut: F) -> Result<F::Output, i32>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        block_on(self.rt.handle(), fut)
    }

    /// The client's instance id; 0 before `rados_connect`, as librados.
    pub fn instance_id(&self) -> u64 {
        self.state().rados.as_ref().map_or(0, |r| r.instance_id())
    }

    /// The cluster's fsid as Ceph prints it; all zeros before
    /// `rados_connect` (no monmap yet), as librados.
    pub fn fsid(&self) -> String {
        match &self.state().rados {
            Some(r) => r.mon().monmap().fsid.to_string(),
            None => "00000000-0000-0000-0000-000000000000".to_string(),
        }
    }

    /// A monitor command (`rados_mon_command`): its parts, as MMonCommand
    /// carries them, and its input.
    pub fn mon_command(&self, cmd: Vec<String>, input: Vec<u8>) -> Result<CommandOutput, i32> {
        let rados = self.rados()?;
        let timeout = self.state().mon_timeout;
        let reply = self
            .block(async move { rados.mon().command_parts(cmd, input.into(), timeout).await })?
            .map_err(|e| mon_errno(&e))?;
        Ok(CommandOutput {
            r: reply.r,
            out: reply.output.to_vec(),
            status: reply.rs,
        })
    }

    /// An I/O context on pool `name` (`rados_ioctx_create`).
    pub fn ioctx(&self, name: &str) -> Result<Io, i32> {
        let rados = self.rados()?;
        let io = rados.ioctx(name).map_err(|e| errno_of(&e))?;
        Ok(Io {
            owner: self as *const Cluster as usize,
            rt: self.rt.handle().clone(),
            rados: Arc::downgrade(&rados),
            io: RwLock::new(io),
            finisher: Arc::clone(&self.finisher),
            writes: Arc::new(Writes::default()),
        })
    }

    /// An I/O context on pool `id` (`rados_ioctx_create2`): -ENOENT if the
    /// map has no such pool.
    pub fn ioctx_by_id(&self, id: i64) -> Result<Io, i32> {
        let name = self.rados()?.pool_reverse_lookup(id).ok_or(-libc::ENOENT)?;
        self.ioctx(&name)
    }

    /// Closes the sessions and stops the runtime's threads
    /// (`rados_shutdown`), then the finisher thread, once it has run the
    /// callbacks queued (an op still in flight completes with -ENOTCONN).
    /// I/O contexts left open fail with -ENOTCONN.
    pub fn shutdown(self) {
        self.admin.stop(self.rt.handle());
        let rados = self.state().rados.take();
        if let Some(rados) = rados.and_then(|r| Arc::try_unwrap(r).ok()) {
            let _ = block_on(self.rt.handle(), rados.shutdown());
        }
        if Handle::try_current().is_ok() {
            // Dropping a runtime where blocking is not allowed panics.
            self.rt.shutdown_background();
        } else {
            self.rt.shutdown_timeout(Duration::from_secs(5));
        }
        self.finisher.shutdown();
    }
}

/// What `rados_ioctx_t` points to: an I/O context of a connected handle,
/// and that handle's runtime. Its namespace and locator key are read by
/// every op and set by `rados_ioctx_set_namespace` and
/// `rados_ioctx_locator_set_key` (librados: not to be changed while ops on
/// the context are in flight in other threads; here it is safe anyway).
pub struct Io {
    /// The `rados_t` it was made from (`rados_ioctx_get_cluster`): the
    /// boxed `Cluster`'s address, never dereferenced here.
    pub(crate) owner: usize,
    pub(crate) rt: Handle,
    rados: Weak<Rados>,
    io: RwLock<IoCtx>,
    pub(crate) finisher: Arc<Finisher>,
    pub(crate) writes: Arc<Writes>,
}

impl Io {
    /// A copy of the context as it stands, for one op.
    pub fn ctx(&self) -> IoCtx {
        self.io.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the context (namespace, locator key).
    pub fn update(&self, f: impl FnOnce(&mut IoCtx)) {
        f(&mut self.io.write().unwrap_or_else(|p| p.into_inner()));
    }

    /// The pool's id.
    pub fn pool(&self) -> i64 {
        self.ctx().pool()
    }

    /// The pool's name; -ENOENT if it is gone from the map, -ENOTCONN if
    /// the handle was shut down.
    pub fn pool_name(&self) -> Result<String, i32> {
        let rados = self.rados.upgrade().ok_or(-libc::ENOTCONN)?;
        rados.pool_reverse_lookup(self.pool()).ok_or(-libc::ENOENT)
    }

    /// The connected client, -ENOTCONN if the handle was shut down.
    pub fn rados(&self) -> Result<Arc<Rados>, i32> {
        self.rados.upgrade().ok_or(-libc::ENOTCONN)
    }

    /// Runs `fut` on the handle's runtime, waiting for it.
    pub fn block<F>(&self, fut: F) -> Result<F::Output, i32>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        block_on(&self.rt, fut)
    }

    /// Runs an op of this context, `f` of a copy of it, waiting for its
    /// result; errors as librados's errnos.
    pub fn run<F, Fut, T>(&self, f: F) -> Result<T, i32>
    where
        F: FnOnce(IoCtx) -> Fut,
        Fut: Future<Output = Result<T, RadosError>> + Send + 'static,
        T: Send + 'static,
    {
        block_on(&self.rt, f(self.ctx()))?.map_err(|e| errno_of(&e))
    }
}
