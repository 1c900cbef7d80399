//! Shared set-up of the frame benchmarks (benches/frames.rs), and the
//! idle-connection probe ([`idle`]) of the `idle-conns` tool.
// Benchmarks: arithmetic on their own sizes and counts, no peer input.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
#![forbid(unsafe_code)]

pub mod idle;

use bytes::{Bytes, BytesMut};
use msgr_encoding::Encode;
use msgr_frames::crypto::{Role, SecureKeys};
use msgr_frames::{
    FrameDecoder, FrameEncoder, FrameLimits, MsgHeader2, Tag, WireFormat, WireQueue,
};

/// Payload sizes the issue asks for: 4 KiB, 64 KiB, 1 MiB, 4 MiB.
pub const SIZES: [usize; 4] = [4 << 10, 64 << 10, 1 << 20, 4 << 20];

pub const MODES: [WireFormat; 4] = [
    WireFormat::CRC_REV0,
    WireFormat::CRC_REV1,
    WireFormat::SECURE_REV0,
    WireFormat::SECURE_REV1,
];

/// One side's encoder and the other side's decoder, in `format`.
pub fn pair(format: WireFormat) -> (FrameEncoder, FrameDecoder) {
    let mut enc = FrameEncoder::new(format.rev1);
    let mut dec = FrameDecoder::new(format.rev1, FrameLimits::default());
    if format.secure {
        let secret = [7u8; 64];
        let c = SecureKeys::from_connection_secret(&secret, Role::Connector).expect("64 bytes");
        let a = SecureKeys::from_connection_secret(&secret, Role::Acceptor).expect("64 bytes");
        enc.set_cipher(c.ciphers(format.rev1).0);
        dec.set_cipher(a.ciphers(format.rev1).1);
    }
    (enc, dec)
}

/// The segments of a MESSAGE carrying `size` bytes of data.
pub fn message(size: usize) -> [Bytes; 4] {
    let header = MsgHeader2 {
        seq: 1,
        msg_type: 42,
        ..Default::default()
    };
    let data: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
    [
        header.to_bytes(),
        Bytes::new(),
        Bytes::new(),
        Bytes::from(data),
    ]
}

/// One connection's two ends in one process: what one frame costs from
/// the sender's segments to the receiver's segments.
pub struct Roundtrip {
    enc: FrameEncoder,
    dec: FrameDecoder,
    queue: WireQueue,
    rx: BytesMut,
}

impl Roundtrip {
    pub fn new(format: WireFormat) -> Self {
        let (enc, dec) = pair(format);
        Roundtrip {
            enc,
            dec,
            queue: WireQueue::new(),
            rx: BytesMut::new(),
        }
    }

    /// Encodes the frame, hands its bytes to the decoder and decodes it.
    /// The bytes cross with one copy of the payload, as through a socket: a
    /// secure frame is encrypted from the segments into one buffer on the
    /// way out, which is copied into the receive buffer and decrypted
    /// there in place; a crc frame leaves the encoder as scattered pieces
    /// (payload uncopied), which are gathered into the receive buffer.
    pub fn run(&mut self, segments: &[Bytes]) -> usize {
        self.enc
            .encode(Tag::MESSAGE, segments, &mut self.queue)
            .expect("encode");
        self.rx.clear();
        while let Some(chunk) = self.queue.pop_chunk() {
            self.rx.extend_from_slice(&chunk);
        }
        let frame = self.rx.split();
        let head = self.dec.decode_head(&frame).expect("head");
        let got = self
            .dec
            .decode_frame(&head, frame)
            .expect("frame")
            .expect("complete");
        got.segments[3].len()
    }
}
