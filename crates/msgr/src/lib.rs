//! Ceph's messenger in Rust: the layer Ceph's daemons and clients talk
//! through, wire-exact with Ceph 16 and 20 (msgr2.0 and 2.1 in crc and
//! secure mode, compression, and the classic msgr1), with cephx, Ceph's
//! seven policies, sessions that reconnect and replay without losing or
//! repeating a message, perf counters named as Ceph's, an admin socket
//! Ceph's own CLI reads, and logs at Ceph's `debug_ms` levels. This crate
//! gathers what a program needs from the workspace's crates.
//!
//! # A messenger
//!
//! A [`Messenger`] binds addresses (`v2:IP:PORT` for msgr2, `v1:IP:PORT`
//! for msgr1), accepts and opens [`Connection`]s, and hands what arrives
//! to a [`Dispatcher`]. Its [`Options`] name it, give each peer type its
//! [`Policy`] (a [`PolicySet`]), its authentication ([`auth`]) and its
//! limits. A connection is a cheap handle usable from any thread: `send`
//! queues a message, [`Connection::call`] sends a request and awaits its
//! reply, [`Connection::ready`] waits for the session.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use msgr::{Connection, Dispatcher, EntityType, IncomingMessage, Message, Messenger, Options, Policy, PolicySet};
//! use msgr::transport::MemoryNet;
//!
//! /// Answers each MOSDOp (type 42) with an MOSDOpReply (43) of its tid.
//! struct Echo;
//! impl Dispatcher for Echo {
//!     fn ms_dispatch(&self, conn: &Connection, msg: IncomingMessage) {
//!         let mut reply = Message::new(43, Default::default());
//!         reply.tid = msg.tid;
//!         conn.send_nowait(reply);
//!     }
//! }
//! struct Quiet;
//! impl Dispatcher for Quiet {
//!     fn ms_dispatch(&self, _: &Connection, _: IncomingMessage) {}
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let net = MemoryNet::new();
//! let auth = Arc::new(msgr::auth::NoneProvider);
//! let server = Messenger::new(
//!     net.clone(),
//!     Options::new("osd.0".parse()?, PolicySet::new(Policy::stateless_server()), auth.clone()),
//!     Arc::new(Echo),
//! );
//! let addrs = server.bind(&"v2:10.0.0.1:6800".parse()?).await?;
//! let client = Messenger::new(
//!     net,
//!     Options::new("client.1".parse()?, PolicySet::new(Policy::lossy_client()), auth)
//!         .with_message_types(msgr::CEPH_MESSAGE_TYPES),
//!     Arc::new(Quiet),
//! );
//! let osd = client.connect(&addrs, EntityType::OSD);
//! osd.ready().await?;
//! let reply = osd.call(Message::new(42, "hello".into()), Duration::from_secs(5)).await?;
//! assert_eq!(reply.msg_type, 43);
//! client.shutdown().await;
//! server.shutdown().await;
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
//!
//! # Talking to a cluster
//!
//! [`monc::identity`] reads who the program is as the `ceph` CLI does
//! (ceph.conf, CEPH_ARGS, the keyring), and [`monc::MonClient`] opens a
//! monitor session with it, which fetches the cephx tickets a messenger
//! made with [`monc::identity::Identity::client_options`] presents to the
//! daemons; [`monc::MonClient::osd_addrs`] finds an OSD in the OSD map.
//! [`messages`] holds Ceph's message types (MOSDOp and its reply,
//! MCommand, the monitor's); [`CEPH_MESSAGE_TYPES`], given as
//! [`Options::message_types`], names them in the per-type counters and
//! tells [`Connection::call`] which requests have which replies.
//!
//! ```no_run
//! use std::time::Duration;
//! use msgr::messages::{MCommand, MCommandReply, TypedMessage};
//! use msgr::monc::{identity::{ClusterOpts, Identity}, MonClient};
//! use msgr::{dispatch, EntityType, Messenger, Policy, PolicySet};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut opts = ClusterOpts::default();
//! opts.take("-c", || Ok("/etc/ceph/ceph.conf".into()))?;
//! let id = Identity::load(&opts)?;
//! let mon = MonClient::connect(id.mon_client_config()).await?;
//! let osd0 = mon.osd_addrs(0, Duration::from_secs(10)).await?;
//! let (dispatcher, _events) = dispatch::events();
//! let client = Messenger::new(
//!     msgr::transport::Tcp::default(),
//!     id.client_options(PolicySet::new(Policy::lossy_client())),
//!     dispatcher,
//! );
//! let osd = client.connect(&osd0, EntityType::OSD);
//! osd.ready().await?;
//! let version = MCommand {
//!     tid: 0,
//!     fsid: mon.monmap().fsid,
//!     cmd: vec![r#"{"prefix": "version"}"#.into()],
//!     input: Default::default(),
//! };
//! let reply = osd.call(version.to_message(osd.features()), Duration::from_secs(10)).await?;
//! println!("{}", String::from_utf8_lossy(&MCommandReply::from_message(&reply)?.output));
//! # Ok(()) }
//! ```
//!
//! # Objects: a RADOS client
//!
//! [`rados::Rados`] is librados's data path on this messenger: a monitor
//! session keeping the [`osdmap::OsdMap`] current, an objecter sending each
//! request to its PG's acting primary (and again when a map moves it, its
//! connection resets or an OSD lifts a backoff), in-flight limits and
//! timeouts. [`rados::IoCtx`] reads and writes objects of one pool.
//!
//! ```no_run
//! use msgr::rados::{Bytes, RadosConfig};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // As a librados program: who we are, ceph.conf, options, connect.
//! let rados = RadosConfig::with_id("admin")
//!     .conf_read_file("/etc/ceph/ceph.conf")?
//!     .conf_set("rados_osd_op_timeout", "30")
//!     .connect()
//!     .await?;
//! let io = rados.ioctx("test")?;
//! io.write_full(b"greeting", Bytes::from_static(b"hello")).await?;
//! assert_eq!(&io.read(b"greeting", 0, 0).await?[..], b"hello");
//! println!("{} bytes", io.stat(b"greeting").await?.size);
//! // Where it lives, as `ceph osd map` says.
//! let map = rados.osdmap();
//! let p = map.place(io.pool(), b"greeting", b"").ok_or("no such pool")?;
//! println!("{}", p.ceph_line(map.epoch, "test", "greeting", ""));
//! rados.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! A command-line tool resolves `-c`, `--id`, `-m` and the rest as Ceph's
//! tools do with [`monc::identity::Identity::load`] and
//! [`rados::Rados::connect`].
//!
//! # Seeing into it
//!
//! Each messenger counts what it does in Ceph's `AsyncMessenger::Worker-N`
//! perf counters, shown in the [`admin::perf::Collection`]
//! given as [`Options::perf`]; an [`admin::socket::AdminSocket`] answers
//! `ceph --admin-daemon PATH perf dump` (and `messenger dump`, `config
//! show`, ...) from it. Logs go through `tracing` (target `msgr`), at the
//! levels Ceph's `debug_ms` names. [`Messenger::traffic_by_type`] counts
//! messages and bytes by type ([`Traffic`]).
//!
//! # When things go wrong
//!
//! [`errors`] lists the errors a user meets, what each says and what to
//! do, each produced by a test.
//!
//! # Other ways to take what arrives
//!
//! [`dispatch::Chain`] runs dispatchers in turn, as Ceph keeps a list;
//! [`dispatch::events`] turns everything into a stream to await.
//!
//! The examples (`cargo run -p msgr --example NAME`): `cluster_ping` (a
//! real cluster's monitor and OSD, with ceph.conf and a keyring: the code
//! above, complete), `osd_client` (MOSDOp
//! writes to an OSD-like server, each reply awaited), `osd_server` (a
//! server with a dispatcher), `lossless_peers` (two peers whose sessions
//! survive injected socket failures).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod errors;

// Who and where: names and addresses.
pub use msgr_encoding::{
    AuthName, EntityAddr, EntityAddrType, EntityAddrvec, EntityName, EntityType,
};

// The messenger, its connections, and what it hands its user.
pub use msgr_messenger::{
    CallError, Connection, Dispatcher, IncomingMessage, Messenger, NotReady, Placement,
};
pub use msgr_protocol::{ConnState, ConnStats, Message, ProtocolError};

// Options, and every type that fills them.
pub use msgr_frames::compression::Algorithm as CompressionAlgorithm;
pub use msgr_frames::FrameLimits;
pub use msgr_messenger::{InjectConfig, MessageTypes, Options};
pub use msgr_protocol::{
    CompressionConfig, Policy, PolicyName, PolicySet, ThrottleLimits, Timeouts,
};

/// Messages and bytes in and out of one message type
/// ([`Messenger::traffic_by_type`]).
pub use msgr_messenger::counters::Traffic;

/// Ceph's message type names and request/reply pairs (msgr-messages'
/// [`messages::MESSAGE_TYPES`] and [`messages::REPLY_TYPES`]), for
/// [`Options::message_types`]: the per-type counters show Ceph's names,
/// and [`Connection::call`] waits for MOSDOpReply, MCommandReply and
/// MMonCommandAck.
pub const CEPH_MESSAGE_TYPES: MessageTypes =
    MessageTypes::new(msgr_messages::MESSAGE_TYPES, msgr_messages::REPLY_TYPES);

/// Other ways to take what arrives: a chain of dispatchers, or a stream.
pub mod dispatch {
    pub use msgr_messenger::dispatch::{events, Chain, ChainLink, DispatchEvent};
}

/// Authentication: auth none, cephx (keys, keyrings, both sides), modes.
pub mod auth {
    pub use msgr_auth::cephx;
    pub use msgr_auth::{
        system_clock, AuthError, AuthProvider, ConMode, Identity, NoneProvider, Random,
        SeededRandom, SystemRandom,
    };
}

/// Transports: TCP over epoll, Unix sockets, and an in-memory network for
/// tests.
pub mod transport {
    pub use msgr_transport::memory::MemoryNet;
    pub use msgr_transport::tcp::Tcp;
    pub use msgr_transport::unix::Unix;
    pub use msgr_transport::Transport;
}

/// Ceph's message types: the typed messages, their type numbers and
/// names, and which requests have replies.
pub mod messages {
    pub use msgr_messages::osd_types;
    pub use msgr_messages::simple::{MSG_COMMAND, MSG_COMMAND_REPLY, MSG_PING};
    pub use msgr_messages::{
        message_type_name, reply_type, MCommand, MCommandReply, MMonCommand, MMonCommandAck,
        MOSDBackoff, MOSDOp, MOSDOpReply, MPing, MessageError, MonInfo, MonMap, RequestRedirect,
        TypedMessage, MESSAGE_TYPES, MSG_MON_COMMAND, MSG_MON_COMMAND_ACK, MSG_OSD_BACKOFF,
        MSG_OSD_OP, MSG_OSD_OPREPLY, REPLY_TYPES,
    };
}

/// Ceph's configuration as the `ceph` CLI reads it.
pub mod config {
    pub use msgr_config::{
        parse_mon_host, ConfFile, ConfParseError, Config, ConfigError, ConfigOptions, Env,
        OptionsError, MON_PORT_V1, MON_PORT_V2,
    };
}

/// A monitor client, and who the program is on a cluster.
pub mod monc {
    pub use msgr_monc::identity;
    pub use msgr_monc::{CommandReply, MonAuth, MonClient, MonClientConfig, MonError, OsdAddrs};
}

/// Perf counters and the admin socket.
pub mod admin {
    pub use msgr_admin::{perf, socket};
}

/// The OSD map: full maps and incrementals, pools, placement.
pub mod osdmap {
    pub use msgr_osdmap::{
        Incremental, MapFollower, OsdMap, OsdMapError, PgId, Placement, Pool, UpActing,
    };
}

/// A RADOS client: `Rados` and `IoCtx`, their limits, requests and
/// replies.
pub mod rados {
    pub use msgr_rados::{
        io_error, Bytes, IoCtx, Limits, Listed, ObjectHandle, ObjectList, Ops, Rados, RadosConfig,
        RadosError, Reply, SnapContext, Stat, UTime, ALL_NAMESPACES, NOSNAP, OBJECT_CHUNK,
        OBJECT_WINDOW, OP_SIZE,
    };
}
