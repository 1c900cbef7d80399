//! Frame tags (`enum class Tag` in src/msg/async/frames_v2.h).

use std::fmt;

/// A frame's tag. Kept as the raw byte so that a frame with a tag we do not
/// know can still be carried and shown; the protocol layer rejects it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(pub u8);

macro_rules! tags {
    ($($name:ident = $value:literal),* $(,)?) => {
        impl Tag {
            $(
                #[doc = concat!("`Tag::", stringify!($name), "`: the ", stringify!($name), " frame's tag.")]
                pub const $name: Tag = Tag($value);
            )*

            /// The name as in Ceph's frames_v2.h, if the tag is known.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// Every tag Ceph defines, in numeric order.
            pub const ALL: &'static [Tag] = &[$(Tag($value)),*];
        }
    };
}

tags! {
    HELLO = 1,
    AUTH_REQUEST = 2,
    AUTH_BAD_METHOD = 3,
    AUTH_REPLY_MORE = 4,
    AUTH_REQUEST_MORE = 5,
    AUTH_DONE = 6,
    AUTH_SIGNATURE = 7,
    CLIENT_IDENT = 8,
    SERVER_IDENT = 9,
    IDENT_MISSING_FEATURES = 10,
    SESSION_RECONNECT = 11,
    SESSION_RESET = 12,
    SESSION_RETRY = 13,
    SESSION_RETRY_GLOBAL = 14,
    SESSION_RECONNECT_OK = 15,
    WAIT = 16,
    MESSAGE = 17,
    KEEPALIVE2 = 18,
    KEEPALIVE2_ACK = 19,
    ACK = 20,
    COMPRESSION_REQUEST = 21,
    COMPRESSION_DONE = 22,
}

impl Tag {
    /// Whether Ceph's frames_v2.h names this tag.
    pub fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// Segment alignments Ceph announces for this tag's used segments:
    /// `MessageFrame` is 8, 8, 8, 4096 (`PAGE_SIZE_ALIGNMENT` for data),
    /// control frames 8 (`segment_t::DEFAULT_ALIGNMENT`, sizeof(void*)).
    pub fn segment_alignments(self) -> [u16; 4] {
        if self == Tag::MESSAGE {
            [8, 8, 8, 4096]
        } else {
            [8, 8, 8, 8]
        }
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "UNKNOWN({})", self.0),
        }
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_matches_frames_v2_h() {
        assert_eq!(Tag::ALL.len(), 22);
        for (i, t) in Tag::ALL.iter().enumerate() {
            assert_eq!(t.0 as usize, i + 1);
        }
        assert_eq!(Tag::MESSAGE.to_string(), "MESSAGE");
        assert_eq!(Tag(123).to_string(), "UNKNOWN(123)");
    }
}
