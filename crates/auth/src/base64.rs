//! Base64 as Ceph's armor (src/common/armor.c) reads and writes keys:
//! the standard alphabet with `=` padding; whitespace between characters is
//! ignored on input.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The character of a sextet's low six bits.
// `& 63` keeps the index below 64, the alphabet's length.
#[allow(clippy::indexing_slicing)]
fn symbol(sextet: u32) -> char {
    ALPHABET[(sextet & 63) as usize] as char
}

/// Encodes with padding.
pub fn encode(data: &[u8]) -> String {
    // Four characters per started group of three bytes (a slice holds at
    // most isize::MAX bytes: never saturates).
    let mut out = String::with_capacity(data.len().div_ceil(3).saturating_mul(4));
    for chunk in data.chunks(3) {
        let mut b = [0u8; 3];
        b.iter_mut().zip(chunk).for_each(|(b, &c)| *b = c);
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        // k bytes make k + 1 characters, then '=' up to four.
        for (i, sextet) in [n >> 18, n >> 12, n >> 6, n].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(symbol(sextet));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes; `Err` names the first problem.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let mut sextets = Vec::with_capacity(text.len());
    let mut padding = 0usize;
    for c in text.bytes() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            // At most text.len(): never saturates.
            padding = padding.saturating_add(1);
            continue;
        }
        if padding > 0 {
            return Err("base64: data after '=' padding".into());
        }
        let v = ALPHABET
            .iter()
            .position(|&a| a == c)
            .ok_or_else(|| format!("base64: invalid character {:?}", c as char))?;
        sextets.push(v as u8);
    }
    // Whole groups of four, the last one possibly two or three sextets
    // padded with two or one '='.
    match (sextets.len() % 4, padding) {
        (0, 0) | (2, 2) | (3, 1) => {}
        _ => return Err("base64: bad length".into()),
    }
    let mut out = Vec::with_capacity(sextets.len());
    for chunk in sextets.chunks(4) {
        let mut s = [0u8; 4];
        s.iter_mut().zip(chunk).for_each(|(s, &c)| *s = c);
        let n = (s[0] as u32) << 18 | (s[1] as u32) << 12 | (s[2] as u32) << 6 | s[3] as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // k sextets (2 to 4) carry k - 1 bytes.
        out.extend(bytes.iter().zip(chunk.iter().skip(1)).map(|(&b, _)| b));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), enc);
            assert_eq!(decode(enc).unwrap(), plain.as_bytes());
        }
        assert_eq!(decode("Zm9v\nYmFy").unwrap(), b"foobar");
        assert!(decode("Zm9v!").is_err());
        assert!(decode("Zm9").is_err());
        assert!(decode("Zg==Zg==").is_err());
        assert!(decode("Z===").is_err());
    }
}
