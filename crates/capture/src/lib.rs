//! Reading captured network traffic: pcap and pcapng files, link, IP and
//! TCP headers, and TCP stream reassembly. Pure parsing of untrusted bytes:
//! no I/O, no panics, typed errors.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod file;
pub mod packet;
pub mod tcp;

pub use file::{read_packets, write_pcap, CaptureError, RawPacket};
pub use packet::{tcp_segment, TcpSegment};
pub use tcp::{Direction, Reassembler, StreamEvent};
