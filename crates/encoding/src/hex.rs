//! Hexadecimal text for byte strings (key files, test vectors).

/// Lower-case hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex text; ASCII whitespace between digits is ignored.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return Err("odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).map_err(|_| "not hex".to_string())?;
            u8::from_str_radix(s, 16).map_err(|_| format!("not hex: {s:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn roundtrip() {
        assert_eq!(super::decode("0a ff\n10").unwrap(), vec![10, 255, 16]);
        assert_eq!(super::encode(&[10, 255, 16]), "0aff10");
        assert!(super::decode("abc").is_err());
        assert!(super::decode("zz").is_err());
    }
}
