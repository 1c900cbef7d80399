//! What Ceph's tools read from a daemon: perf counters named as Ceph's
//! (`perf`), and the admin socket that serves them with the daemon's other
//! commands, in Ceph's protocol, so that `ceph --admin-daemon PATH perf
//! dump` reads a program built on this library as it reads an OSD
//! (`socket`). `json` is the JSON both speak; `private_dir` makes the
//! directories only their owner may enter that the socket is staged in.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod commands;
pub mod json;
pub mod perf;
pub mod private_dir;
pub mod socket;
