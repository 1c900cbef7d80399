//! `encoding!`: declare a struct and its Ceph encoding in one place.
//!
//! ```
//! msgr_encoding::encoding! {
//!     /// Fields are encoded in declaration order, each with its own encoding.
//!     #[derive(Debug, Clone, PartialEq, Default)]
//!     pub struct Plain {
//!         pub a: u32,
//!         pub b: String,
//!     }
//! }
//!
//! msgr_encoding::encoding! {
//!     #[versioned(version = 3, compat = 1)]
//!     /// ENCODE_START(3, 1): fields marked `= since N` exist from version N
//!     /// on; decoding an older version leaves them at their `Default`.
//!     #[derive(Debug, Clone, PartialEq, Default)]
//!     pub struct Versioned {
//!         pub a: u32,
//!         pub b: Vec<u64> = since 2,
//!         pub c: bool = since 3,
//!     }
//! }
//! ```
//!
//! `#[struct_v = N]` (also first) declares a struct that starts with a bare
//! `u8` version, as cephx's structures do: written as `N`, and any non-zero
//! version is read.
//!
//! `#[versioned(..)]` must be the first attribute. A versioned struct decodes any envelope whose compat version is at most
//! `version`; bytes of fields newer than `version` are skipped.

/// Declares a struct with its Ceph encoding: the fields in wire order, and
/// [`Encode`](crate::Encode) and [`Decode`](crate::Decode) impls that write
/// and read them. `#[versioned(version = V, compat = C)]` wraps them in an
/// ENCODE_START envelope (a field marked `= since N` takes its default when
/// the envelope is older than N); `#[struct_v = N]` starts them with a bare
/// version byte, as cephx's structures do.
#[macro_export]
macro_rules! encoding {
    (
        #[versioned(version = $version:literal, compat = $compat:literal)]
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty $(= since $since:literal)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl $crate::Encode for $name {
            fn encode(&self, out: &mut Vec<u8>) {
                $crate::encode_versioned(out, $version, $compat, |out| {
                    $( $crate::Encode::encode(&self.$field, out); )*
                });
            }
        }

        impl $crate::Decode for $name {
            const MIN_ENCODED_LEN: usize = $crate::ENVELOPE_HEADER_LEN;
            #[allow(unused_variables)]
            fn decode(d: &mut $crate::Decoder<'_>) -> $crate::DecodeResult<Self> {
                $crate::decode_versioned(d, stringify!($name), $version, |d, struct_v| {
                    $(
                        let $field: $ty = $( if struct_v < $since {
                            ::core::default::Default::default()
                        } else )? {
                            <$ty as $crate::Decode>::decode(d).map_err(|e| {
                                e.context(concat!(stringify!($name), ".", stringify!($field)))
                            })?
                        };
                    )*
                    Ok($name { $($field),* })
                })
            }
        }
    };

    (
        #[struct_v = $sv:literal]
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl $crate::Encode for $name {
            fn encode(&self, out: &mut Vec<u8>) {
                out.push($sv);
                $( $crate::Encode::encode(&self.$field, out); )*
            }
        }

        impl $crate::Decode for $name {
            const MIN_ENCODED_LEN: usize = 1 $( + <$ty as $crate::Decode>::MIN_ENCODED_LEN )*;
            fn decode(d: &mut $crate::Decoder<'_>) -> $crate::DecodeResult<Self> {
                // A bare `__u8 struct_v` (no compat, no length), as cephx
                // writes it; a newer version's extra fields are not read.
                let struct_v = d.u8(concat!(stringify!($name), ".struct_v"))?;
                if struct_v == 0 {
                    return Err($crate::DecodeError::InvalidValue {
                        what: concat!(stringify!($name), ".struct_v"),
                        value: 0,
                    });
                }
                $(
                    let $field = <$ty as $crate::Decode>::decode(d).map_err(|e| {
                        e.context(concat!(stringify!($name), ".", stringify!($field)))
                    })?;
                )*
                Ok($name { $($field),* })
            }
        }
    };

    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl $crate::Encode for $name {
            #[allow(unused_variables)]
            fn encode(&self, out: &mut Vec<u8>) {
                $( $crate::Encode::encode(&self.$field, out); )*
            }
        }

        impl $crate::Decode for $name {
            const MIN_ENCODED_LEN: usize = 0 $( + <$ty as $crate::Decode>::MIN_ENCODED_LEN )*;
            #[allow(unused_variables)]
            fn decode(d: &mut $crate::Decoder<'_>) -> $crate::DecodeResult<Self> {
                $(
                    let $field = <$ty as $crate::Decode>::decode(d).map_err(|e| {
                        e.context(concat!(stringify!($name), ".", stringify!($field)))
                    })?;
                )*
                Ok($name { $($field),* })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::{Decode, DecodeError, Encode};

    crate::encoding! {
        #[derive(Debug, Clone, PartialEq, Default)]
        struct Plain {
            a: u32,
            b: String,
        }
    }

    crate::encoding! {
        #[versioned(version = 3, compat = 2)]
        #[derive(Debug, Clone, PartialEq, Default)]
        struct Versioned {
            a: u32,
            b: Vec<u8> = since 2,
            c: bool = since 3,
        }
    }

    #[test]
    fn plain_struct_is_its_fields_in_order() {
        let p = Plain {
            a: 1,
            b: "x".into(),
        };
        let wire = p.to_bytes();
        assert_eq!(&wire[..], &[1, 0, 0, 0, 1, 0, 0, 0, b'x']);
        assert_eq!(Plain::decode_exact(&wire, "p").unwrap(), p);
        assert_eq!(Plain::MIN_ENCODED_LEN, 8);
    }

    #[test]
    fn field_errors_name_the_field() {
        let err = Plain::decode_exact(&[1, 0, 0, 0, 9, 0, 0, 0], "p").unwrap_err();
        assert!(matches!(
            err,
            DecodeError::LengthTooLarge { what: "string", .. }
        ));
        let err = Plain::decode_exact(&[1, 0], "p").unwrap_err();
        assert!(matches!(
            err,
            DecodeError::Truncated {
                what: "Plain.a",
                ..
            }
        ));
    }

    #[test]
    fn versioned_struct_reads_older_versions_with_defaults() {
        let v = Versioned {
            a: 5,
            b: vec![1],
            c: true,
        };
        let wire = v.to_bytes();
        assert_eq!(
            &wire[..],
            &[3, 2, 10, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 1, 1]
        );
        assert_eq!(Versioned::decode_exact(&wire, "v").unwrap(), v);

        // A version-2 encoder did not know `c`.
        let old = [2, 2, 9, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 1];
        let decoded = Versioned::decode_exact(&old, "v").unwrap();
        assert_eq!(decoded, Versioned { c: false, ..v });
    }
}
