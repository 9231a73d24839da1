//! Sizes on the command line: "4096", "512K", "64M", "1G", "2T" (binary
//! units; an optional "iB" or "B" after the letter, any case).

/// Parses a size; the error says what was wrong in words.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits_end = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("invalid size '{text}': expected a number such as 4096, 512K, 64M or 1G"));
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("invalid size '{text}': unknown unit '{unit}' (use K, M, G or T)")),
    };
    let number: u64 = digits.parse().map_err(|_| format!("invalid size '{text}': number too large"))?;
    number.checked_mul(1u64 << shift).ok_or_else(|| format!("invalid size '{text}': too large"))
}

/// A byte count for people: the library's, so that its refusals and these
/// reports name sizes alike.
pub use fslab::format::human_bytes as human;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_and_without_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
    }

    #[test]
    fn bad_sizes_are_refused_with_a_reason() {
        for bad in ["", "M", "12X", "-5", "1.5G", "99999999999999999999", "20000000T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
