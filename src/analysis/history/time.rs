//! RFC 3339 times (`created_at`) as instants that order correctly whatever their offset
//! and fraction digits: `2026-11-25T12:00:00Z`, `2026-11-25T12:00:00.5+01:00`.
//!
//! Must not: format times (the reports' own text is shown).

/// Seconds since 1970-01-01T00:00:00Z and nanoseconds; `None` when `s` is not RFC 3339.
pub fn parse(s: &str) -> Option<(i64, u32)> {
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = b.get(r)?;
        t.iter()
            .all(u8::is_ascii_digit)
            .then(|| t.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d, h, mi, sec) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b[i] == b'.' {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let v = |x: &u8, y: &u8| -> Option<i64> {
                (x.is_ascii_digit() && y.is_ascii_digit()).then(|| i64::from(x - b'0') * 10 + i64::from(y - b'0'))
            };
            let o = v(h1, h2)? * 3600 + v(m1, m2)? * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    Some((
        days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset,
        nanos,
    ))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_order_by_instant() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse("2026-11-25T12:00:00.5Z"), Some((1_795_608_000, 500_000_000)));
        assert_eq!(parse("2026-11-25T13:00:00+01:00"), parse("2026-11-25T12:00:00Z"));
        assert!(parse("2026-11-25T12:00:01Z") > parse("2026-11-25T12:00:00.999Z"));
        for bad in [
            "",
            "yesterday",
            "2026-11-25",
            "2026-13-01T00:00:00Z",
            "2026-11-25T12:00:00",
            "2026-11-25T12:00:00.Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
