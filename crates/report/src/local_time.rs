//! Dates and times of stored runs: `--since` parsing and local-time display (`linerate runs`,
//! `show`, reports), with the C library's time zone rules (`localtime_r`), so no time zone
//! database is bundled. The only place that reads the local time zone.

/// Why a `--since` date was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateError {
    /// Not in one of the accepted forms.
    #[error("not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], e.g. 2026-05-20")]
    NotADate,
    /// A well-formed date the calendar does not have (2025-02-29).
    #[error("no such day")]
    NoSuchDay,
    /// A well-formed time the clock does not have (25:00).
    #[error("no such time of day")]
    NoSuchTime,
    /// Before the Unix epoch.
    #[error("dates before 1970 are not supported")]
    BeforeEpoch,
}

/// Parses a `--since` date into Unix epoch ms: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` (a space
/// may stand for the `T`), in local time unless followed by `Z` or `±HH:MM`.
pub fn parse_since(s: &str) -> Result<u64, DateError> {
    let bad = || DateError::NotADate;
    let s = s.trim();
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let (Some(y), Some(mo), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let num = |t: &str, len: usize| -> Result<i64, DateError> {
        (t.len() == len && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
            .ok_or_else(bad)
    };
    let (y, mo, d) = (num(y, 4)?, num(mo, 2)?, num(d, 2)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return Err(DateError::NoSuchDay);
    }
    let (mut secs, mut offset) = (0, None);
    if let Some(t) = time {
        let (clock, zone) = match t.find(['Z', 'z', '+', '-']) {
            Some(i) => (&t[..i], Some(&t[i..])),
            None => (t, None),
        };
        let f: Vec<&str> = clock.split(':').collect();
        let (h, m, sec) = match f.as_slice() {
            [h, m] => (num(h, 2)?, num(m, 2)?, 0),
            [h, m, s] => (num(h, 2)?, num(m, 2)?, num(s, 2)?),
            _ => return Err(bad()),
        };
        if h > 23 || m > 59 || sec > 60 {
            return Err(DateError::NoSuchTime);
        }
        secs = h * 3600 + m * 60 + sec;
        offset = match zone {
            None => None,
            Some("Z" | "z") => Some(0),
            Some(z) => {
                let sign = if z.starts_with('-') { -1 } else { 1 };
                let (oh, om) = z[1..].split_once(':').ok_or_else(bad)?;
                Some(sign * (num(oh, 2)? * 3600 + num(om, 2)? * 60))
            }
        };
    }
    let wall = days_from_civil(y, mo, d) * 86_400 + secs;
    let utc = match offset {
        Some(off) => wall - off,
        None => {
            // Local wall time: the offset at the guessed instant, refined once across a DST change.
            let guess = wall - local_offset_s(wall);
            wall - local_offset_s(guess)
        }
    };
    u64::try_from(utc)
        .map(|s| s * 1000)
        .map_err(|_| DateError::BeforeEpoch)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The local time at `unix_s`, broken down (`localtime_r`); `None` if the C library refuses.
fn local_tm(unix_s: i64) -> Option<libc::tm> {
    let t = libc::time_t::try_from(unix_s).ok()?;
    // SAFETY: localtime_r writes only into `tm`, which outlives the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        (!libc::localtime_r(&t, &mut tm).is_null()).then_some(tm)
    }
}

/// Seconds east of UTC of the local time zone at `unix_s` (0 when unknown).
fn local_offset_s(unix_s: i64) -> i64 {
    local_tm(unix_s).map_or(0, |tm| tm.tm_gmtoff)
}

/// `YYYY-MM-DD HH:MM:SS` in local time.
pub fn format_local(unix_ms: u64) -> String {
    let secs = i64::try_from(unix_ms / 1000).unwrap_or(i64::MAX);
    match local_tm(secs) {
        Some(tm) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        ),
        None => format!("@{secs}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_dates() {
        assert_eq!(parse_since("1970-01-02Z").ok(), None, "a zone needs a time");
        assert_eq!(
            parse_since("2026-05-20T00:00:00Z").unwrap(),
            1_779_235_200_000
        );
        assert_eq!(
            parse_since("2026-05-20T02:30+02:30").unwrap(),
            1_779_235_200_000
        );
        assert_eq!(
            parse_since("2026-05-20 01:00:00-01:00").unwrap(),
            1_779_242_400_000
        );
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        // Local dates: midnight local time, whatever the zone.
        let local = parse_since("2026-05-20").unwrap();
        assert_eq!(format_local(local), "2026-05-20 00:00:00");
        let local = parse_since("2024-02-29T13:45").unwrap();
        assert_eq!(format_local(local), "2024-02-29 13:45:00");
        for bad in [
            "20260520",
            "2026-5-20",
            "2026-13-01",
            "2025-02-29",
            "2026-05-20T25:00",
            "yesterday",
            "2026-05-20T10",
        ] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }
}
