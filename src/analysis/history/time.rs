//! RFC 3339 times (`created_at`) as instants that order correctly whatever their offset
//! and fraction digits: `2026-11-25T12:00:00Z`, `2026-11-25T12:00:00.5+01:00`; a date that
//! does not exist (February 31st, an offset of -99:99) is none (issue 64).
//!
//! Must not: format times (the reports' own text is shown).

/// Seconds since 1970-01-01T00:00:00Z and nanoseconds; `None` when `s` is not RFC 3339.
pub fn parse(s: &str) -> Option<(i64, u32)> {
    check(s).ok()
}

/// [`parse`], or why `s` is no RFC 3339 time, said of it: `is not an RFC 3339 time (...)`,
/// `is no real date: February 2026 has 28 days, not 31`.
pub fn check(s: &str) -> Result<(i64, u32), String> {
    const FORM: &str = "is not an RFC 3339 time (YYYY-MM-DDTHH:MM:SS, a fraction if any, then Z or +HH:MM)";
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
        return Err(FORM.into());
    }
    let fields = (|| {
        Some((
            num(0..4)?,
            num(5..7)?,
            num(8..10)?,
            num(11..13)?,
            num(14..16)?,
            num(17..19)?,
        ))
    })();
    let (y, mo, d, h, mi, sec) = fields.ok_or(FORM)?;
    if !(1..=12).contains(&mo) {
        return Err(format!("is no real date: there is no month {mo}"));
    }
    let days = days_in_month(y, mo);
    if !(1..=days).contains(&d) {
        return Err(format!(
            "is no real date: {} {y} has {days} days, not {d}",
            MONTHS[mo as usize - 1]
        ));
    }
    // A leap second is 60.
    if h > 23 || mi > 59 || sec > 60 {
        return Err(format!("is no real time: {h:02}:{mi:02}:{sec:02} is not a time of day"));
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
            return Err(FORM.into());
        }
        for _ in (i - start)..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(i..).ok_or(FORM)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let v = |x: &u8, y: &u8| -> Option<i64> {
                (x.is_ascii_digit() && y.is_ascii_digit()).then(|| i64::from(x - b'0') * 10 + i64::from(y - b'0'))
            };
            let (oh, om) = (v(h1, h2).ok_or(FORM)?, v(m1, m2).ok_or(FORM)?);
            if oh > 23 || om > 59 {
                return Err(format!(
                    "is no real time: its offset {}{oh:02}:{om:02} is none (hours 00 to 23, minutes 00 to 59)",
                    char::from(*sign)
                ));
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return Err(FORM.into()),
    };
    Ok((
        days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset,
        nanos,
    ))
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Days in month `m` of year `y` (proleptic Gregorian).
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// How far after now a report may be dated, seconds: a clock a little ahead (or a history
/// read on another machine) is no wrong clock (issue 64).
pub const FUTURE_SLACK_S: i64 = 3600;

/// `3 minutes`, `5 hours`, `26,801 days`.
pub fn span(seconds: i64) -> String {
    let (n, unit) = match seconds {
        s if s < 2 * 3600 => (s / 60, "minute"),
        s if s < 2 * 86_400 => (s / 3600, "hour"),
        s => (s / 86_400, "day"),
    };
    crate::util::format::count(n as usize, unit)
}

/// `2026-11-28T20:30:00Z`: seconds since 1970 as RFC 3339 in UTC.
pub fn format(seconds: i64) -> String {
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of a day since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Seconds since 1970-01-01T00:00:00Z now, by this machine's clock.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
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
            "2026-02-29T00:00:00Z",
            "2026-02-31T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-11-25T12:00:00-99:99",
            "2026-11-25T12:00:00+24:00",
            "2026-11-25T12:00:00+01:60",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(parse("2024-02-29T00:00:00Z").is_some());
        for t in [
            "1970-01-01T00:00:00Z",
            "2024-02-29T23:59:59Z",
            "2099-12-31T00:00:01Z",
            "1969-12-31T12:00:00Z",
        ] {
            assert_eq!(format(parse(t).unwrap().0), t);
        }
        assert_eq!(span(59 * 60), "59 minutes");
        assert_eq!(span(30 * 3600), "30 hours");
        assert!(parse("2000-02-29T00:00:00Z").is_some());
        assert_eq!(parse("1900-02-29T00:00:00Z"), None);
        assert_eq!(
            check("2026-02-31T00:00:00Z").unwrap_err(),
            "is no real date: February 2026 has 28 days, not 31"
        );
    }
}
