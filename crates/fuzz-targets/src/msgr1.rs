//! msgr1's wire decoders, chosen by the first byte: the acceptor's hello
//! (banner and legacy addresses), CONNECT, CONNECT_REPLY, the message
//! header, and an open session's stream fed in steps of the second byte.

use msgr_frames::v1::{Connect, ConnectReply, Footer, Item, MsgHeader, ServerHello, StreamReader};
use msgr_frames::FrameLimits;

pub fn msgr1(data: &[u8]) {
    let [mode, step, rest @ ..] = data else {
        return;
    };
    match mode % 4 {
        0 => hello_and_connect(rest),
        1 => reply(rest),
        2 => header(rest),
        _ => stream(rest, mode & 4 != 0, usize::from(*step) + 1),
    }
}

fn hello_and_connect(b: &[u8]) {
    if let Some(h) = b.first_chunk::<{ ServerHello::LEN }>() {
        if let Ok(hello) = ServerHello::decode(h) {
            // Legacy addresses ignore some bytes: decode ∘ encode is the
            // identity on what decoded, not encode ∘ decode on the input.
            assert_eq!(ServerHello::decode(&hello.encode()), Ok(hello));
        }
    }
    if let Some(c) = b.first_chunk::<{ Connect::LEN }>() {
        assert_eq!(&Connect::decode(c).encode(), c, "every byte is a field");
    }
}

fn reply(b: &[u8]) {
    if let Some(r) = b.first_chunk::<{ ConnectReply::LEN }>() {
        if let Ok(reply) = ConnectReply::decode(r) {
            assert_eq!(&reply.encode(), r);
        }
    }
}

fn header(b: &[u8]) {
    if let Some(h) = b.first_chunk::<{ MsgHeader::LEN }>() {
        if let Ok(header) = MsgHeader::decode(h) {
            assert_eq!(
                &header.encode(),
                h,
                "the crc held, so every byte is a field"
            );
        }
    }
    if let Some(f) = b.first_chunk::<{ Footer::LEN }>() {
        assert_eq!(&Footer::decode(f).encode(), f);
    }
}

fn stream(b: &[u8], msg_auth: bool, step: usize) {
    let limits = FrameLimits {
        max_segment_len: 1 << 20,
        max_frame_len: 2 << 20,
        max_decompressed_len: 1 << 20,
    };
    let mut r = StreamReader::new(limits, msg_auth);
    let mut buf = bytes::BytesMut::new();
    for chunk in b.chunks(step) {
        buf.extend_from_slice(chunk);
        loop {
            match r.next_raw(&mut buf) {
                Ok(Some((item, raw))) => {
                    if let Item::Msg(m) = item {
                        assert!(!m.complete() || m.check_crcs().is_ok());
                        assert_eq!(
                            raw.len() as u64,
                            m.header.payload_len() + 54 + r.footer_len() as u64
                        );
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        // What the reader asks for is bounded by the caps, whatever the
        // header claimed.
        assert!(r.bytes_needed(&buf) <= (2 << 20) + 54 + Footer::LEN);
    }
}
