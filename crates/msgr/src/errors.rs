//! The errors a user meets, what each says, and what to do about it.
//!
//! Every row is produced by a test: `crates/msgr/tests/errors.rs` (our
//! messengers as the peers that refuse, real sockets where the error is
//! about them), `crates/messenger/tests/runtime.rs`, and
//! `scripts/interop/clusters.sh` against real Ceph 16 and 20 clusters.
//!
//! | What happened | The error | What it says | What to do | Test |
//! |---|---|---|---|---|
//! | Our key is not the cluster's | [`MonError::AuthFailed`](crate::monc::MonError::AuthFailed) | `authentication failed: mon v2:127.0.0.1:3300/0: authentication denied: the server refused client.admin (EACCES: wrong key, unknown entity, or a stale ticket)` | Compare the keyring's key with `ceph auth get client.admin`; check the name (`-n`). | `wrong_key`; clusters.sh `*-wrong-key` (Ceph 16 and 20, msgr2 and msgr1) |
//! | No monitor answers | [`MonError::Unreachable`](crate::monc::MonError::Unreachable) | `no monitor session within 20s; tried v2:127.0.0.1:3300/0 (transport: Connection refused (os error 111)), v2:127.0.0.2:3300/0 (...): check mon_host and that the monitors are up` | Fix `mon_host` (ceph.conf, `-m`), or start the monitors. | `unreachable_monitors` |
//! | The peer allows none of our connection modes | [`AuthError::ModeRefused`](crate::auth::AuthError::ModeRefused), in `MonError::AuthFailed` or [`NotReady`](crate::NotReady)'s fault | `the peer allows connection mode secure, we offered crc (ms_client_mode / ms_mon_client_mode, or --mode)` | Offer a mode it allows (`ms_client_mode`, `ms_mon_client_mode`). | `mode_refused`; clusters.sh `pacific-mode-refused` (a Ceph 16 monitor) |
//! | The peer requires features we do not offer | [`ProtocolError::FeaturesRefused`](crate::ProtocolError::FeaturesRefused) | `the peer requires features 0x4000000000000000 that we do not offer (our policy's features_supported): a newer release, or features we turned off` | Offer them (the policy's `features_supported`), or lower the peer's requirement. | `features_refused_and_missing` (msgr2 and msgr1) |
//! | The peer lacks features we require | [`ProtocolError::MissingFeatures`](crate::ProtocolError::MissingFeatures) | `the peer lacks features 0x4000000000000000 that our policy requires (features_required): an older release, or features it turned off` | Upgrade the peer, or require less (`features_required`). | `features_refused_and_missing` (msgr1) |
//! | The keyring has no key for us | [`IdentityError::NoKey`](crate::monc::identity::IdentityError::NoKey) | `no key for client.nobody (looked in /etc/ceph/keyring); auth_client_required is "cephx": add client.nobody's key to a keyring, give one with -k, or name another entity with -n` | As it says. | `keyring_without_the_entity` |
//! | The peer is another kind of daemon than we dialed | [`ProtocolError::PeerTypeMismatch`](crate::ProtocolError::PeerTypeMismatch) | `peer is a osd but we connected to a mon` | Check the address, or connect with `EntityType::ANY` to learn the type from HELLO. | `wrong_peer_type` |
//! | Nothing listens at the address | `NotReady` with [`ProtocolError::Transport`](crate::ProtocolError::Transport) | `the connection closed before its session was ready: transport: Connection refused (os error 111)` | Check the address and that the daemon runs; the connection retries as its policy says until marked down. | `unreachable_peer` |
//! | The OSD map has no such OSD | [`MonError::NoSuchOsd`](crate::monc::MonError::NoSuchOsd) | `osd.7 is not in the OSD map` | Check the id (`ceph osd ls`). | clusters.sh `pacific-example-no-osd` |
//! | A request got no reply in time, or its session ended | [`CallError`](crate::CallError) `Timeout`, `Reset`, `Closed` | `no reply within 5s`; `the session was reset before the reply came`; `the connection closed before the reply came` | After a reset the request may or may not have been handled: make it idempotent, or check before resending. | runtime.rs `call_waits_for_the_reply_by_tid` |
//! | A call for a message that has no reply | `CallError::NoReplyType` | `message type 99 has no reply to wait for (send it instead)` | `send` it. | runtime.rs `call_waits_for_the_reply_by_tid` |
//!
//! A connection's faults also reach the dispatcher
//! ([`Dispatcher::ms_handle_fault`](crate::Dispatcher::ms_handle_fault))
//! and the logs (target `msgr`, level info), each naming who was at fault
//! ([`ProtocolError::fault`](crate::ProtocolError::fault)).
