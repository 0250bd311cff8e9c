//! Dates and times of stored runs: `--since` parsing and local-time display (`linerate runs`,
//! `show`, reports), through `jiff`: its ISO 8601 / RFC 9557 parser, its calendar, and the
//! system's time zone (`TZ` if set, else `/etc/localtime`, read from the system's time-zone
//! database; UTC when neither is usable), so no database is bundled and no `unsafe` C call is
//! made. The only place that reads the local time zone. A local time that a DST change skips
//! is read on the clock before the change (02:30 in a gap = 03:30 after it); one it repeats is
//! the earlier instant, so `--since` includes both (jiff's `compatible`, as RFC 5545).

use jiff::civil::Time;
use jiff::fmt::temporal::Pieces;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// Why a `--since` date was refused; each message ends with what to give.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DateError {
    /// Not a date jiff's ISO 8601 parser takes, or one the calendar or the clock does not have
    /// (2025-02-29, 25:00); jiff's message says which part.
    #[error(
        "not a date ({0}); give YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], local time unless it ends in Z, \
         ±HH:MM or [Area/City], e.g. 2026-05-20"
    )]
    NotADate(jiff::Error),
    /// A `[Area/City]` the system's time-zone database does not have.
    #[error("{0}; name a zone of the system's time-zone database, e.g. [Europe/Paris], or give Z or ±HH:MM")]
    NoSuchZone(jiff::Error),
    /// Past the end of jiff's range (year 9999) once the zone is applied.
    #[error("{0}; give a date before 9999-12-31")]
    OutOfRange(jiff::Error),
    /// Before the Unix epoch.
    #[error("dates before 1970 are not supported; give 1970-01-01 or later")]
    BeforeEpoch,
}

/// Parses a `--since` date into Unix epoch ms: `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]` (a space
/// or `t` may stand for the `T`; ISO 8601's other forms, e.g. `20260520` or fractions of a
/// second, are taken too), in the system's local time unless followed by `Z`, `±HH:MM` or a
/// `[Area/City]` zone.
pub fn parse_since(s: &str) -> Result<u64, DateError> {
    parse_since_in(s, &TimeZone::system())
}

/// [`parse_since`] with `local` as the local time zone.
fn parse_since_in(s: &str, local: &TimeZone) -> Result<u64, DateError> {
    let pieces = Pieces::parse(s.trim()).map_err(DateError::NotADate)?;
    let wall = pieces
        .date()
        .to_datetime(pieces.time().unwrap_or(Time::midnight()));
    let instant = match pieces.offset() {
        // An offset fixes the instant; a zone annotation beside it changes nothing.
        Some(offset) => offset.to_numeric_offset().to_timestamp(wall),
        None => match pieces.to_time_zone().map_err(DateError::NoSuchZone)? {
            Some(zone) => zone.to_ambiguous_timestamp(wall).compatible(),
            None => local.to_ambiguous_timestamp(wall).compatible(),
        },
    }
    .map_err(DateError::OutOfRange)?;
    u64::try_from(instant.as_millisecond()).map_err(|_| DateError::BeforeEpoch)
}

/// `YYYY-MM-DD HH:MM:SS` in the system's local time (`@SECONDS` past year 9999).
pub fn format_local(unix_ms: u64) -> String {
    format_in(unix_ms, &TimeZone::system())
}

/// [`format_local`] in `zone`.
fn format_in(unix_ms: u64, zone: &TimeZone) -> String {
    let secs = i64::try_from(unix_ms / 1000).unwrap_or(i64::MAX);
    match Timestamp::from_second(secs) {
        Ok(t) => {
            let t = zone.to_datetime(t);
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            )
        }
        Err(_) => format!("@{secs}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central Europe as a POSIX `TZ` string: needs no time-zone database, so the tests hold on
    /// any host. DST from the last Sunday of March 01:00 UTC to the last of October 01:00 UTC.
    fn cet() -> TimeZone {
        TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").expect("a valid POSIX TZ string")
    }

    /// 2026-05-20T00:00:00Z in Unix ms.
    const MAY_20_UTC: u64 = 1_779_235_200_000;
    const HOUR: u64 = 3_600_000;

    #[test]
    fn since_dates() {
        assert!(parse_since("1970-01-02Z").is_err(), "a zone needs a time");
        assert_eq!(parse_since("2026-05-20T00:00:00Z").unwrap(), MAY_20_UTC);
        assert_eq!(parse_since("2026-05-20T02:30+02:30").unwrap(), MAY_20_UTC);
        assert_eq!(
            parse_since("2026-05-20 01:00:00-01:00").unwrap(),
            MAY_20_UTC + 2 * HOUR
        );
        // Local dates: midnight local time, whatever the zone.
        let local = parse_since("2026-05-20").unwrap();
        assert_eq!(format_local(local), "2026-05-20 00:00:00");
        let local = parse_since("2024-02-29T13:45").unwrap();
        assert_eq!(format_local(local), "2024-02-29 13:45:00");
        for bad in [
            "2026-5-20",
            "2026-13-01",
            "2025-02-29",
            "2026-05-20T25:00",
            "yesterday",
            "",
        ] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_documented_form_is_taken_in_the_local_zone_unless_it_names_one() {
        let z = cet();
        for (form, ms) in [
            ("2026-05-20", MAY_20_UTC - 2 * HOUR),
            (" 2026-05-20 ", MAY_20_UTC - 2 * HOUR),
            ("2026-05-20T10:00", MAY_20_UTC + 8 * HOUR),
            ("2026-05-20t10:00:30", MAY_20_UTC + 8 * HOUR + 30_000),
            ("2026-05-20 10:00:00", MAY_20_UTC + 8 * HOUR),
            ("2026-05-20T10:00Z", MAY_20_UTC + 10 * HOUR),
            ("2026-05-20T10:00:00z", MAY_20_UTC + 10 * HOUR),
            (
                "2026-05-20T10:00+05:30",
                MAY_20_UTC + 10 * HOUR - 5 * HOUR - HOUR / 2,
            ),
            ("2026-05-20T10:00-01:00", MAY_20_UTC + 11 * HOUR),
            ("2026-05-20T10:00:60Z", MAY_20_UTC + 10 * HOUR + 59_000),
            // ISO 8601's basic form, hour-only times, fractions and annotations, as jiff reads them.
            ("20260520", MAY_20_UTC - 2 * HOUR),
            ("2026-05-20T10", MAY_20_UTC + 8 * HOUR),
            ("2026-05-20T10:00:00.750Z", MAY_20_UTC + 10 * HOUR + 750),
            ("2026-05-20T10:00+0100", MAY_20_UTC + 9 * HOUR),
            ("2026-05-20T10:00[+03:00]", MAY_20_UTC + 7 * HOUR),
            ("2026-05-20T10:00Z[Asia/Tokyo]", MAY_20_UTC + 10 * HOUR),
            ("1970-01-01T00:00:00Z", 0),
        ] {
            assert_eq!(parse_since_in(form, &z).ok(), Some(ms), "{form}");
        }
    }

    #[test]
    fn local_dates_follow_the_zones_daylight_saving_changes() {
        let z = cet();
        let jan_20 = MAY_20_UTC - 120 * 24 * HOUR;
        assert_eq!(parse_since_in("2026-01-20", &z).unwrap(), jan_20 - HOUR);
        // 2026-03-29 02:00 CET does not exist (clocks go to 03:00): 02:30 is read on the CET
        // clock, 01:30 UTC, shown as 03:30 CEST.
        let gap = parse_since_in("2026-03-29T02:30", &z).unwrap();
        assert_eq!(format_in(gap, &TimeZone::UTC), "2026-03-29 01:30:00");
        assert_eq!(format_in(gap, &z), "2026-03-29 03:30:00");
        // 2026-10-25 02:30 happens twice (CEST then CET): the earlier, 00:30 UTC.
        let fold = parse_since_in("2026-10-25T02:30", &z).unwrap();
        assert_eq!(format_in(fold, &TimeZone::UTC), "2026-10-25 00:30:00");
        assert_eq!(format_in(fold + HOUR, &z), "2026-10-25 02:30:00");
    }

    #[test]
    fn times_print_in_the_zone_a_tz_string_names() {
        let z = cet();
        assert_eq!(format_in(MAY_20_UTC, &z), "2026-05-20 02:00:00");
        assert_eq!(format_in(MAY_20_UTC + 1_999, &z), "2026-05-20 02:00:01");
        let jan_20 = MAY_20_UTC - 120 * 24 * HOUR;
        assert_eq!(format_in(jan_20, &z), "2026-01-20 01:00:00");
        let new_york = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap();
        assert_eq!(format_in(MAY_20_UTC, &new_york), "2026-05-19 20:00:00");
        assert_eq!(format_in(0, &TimeZone::UTC), "1970-01-01 00:00:00");
        // Past jiff's range: the seconds, not a panic or a wrong date.
        assert_eq!(format_in(u64::MAX, &z), "@18446744073709551");
        // Round trip: a local date prints as given.
        let t = parse_since_in("2024-02-29T13:45:07", &new_york).unwrap();
        assert_eq!(format_in(t, &new_york), "2024-02-29 13:45:07");
    }

    #[test]
    fn a_refused_date_says_in_one_line_what_to_give() {
        let z = cet();
        for bad in [
            "2026-5-20",
            "2026-13-01",
            "2025-02-29",
            "2026-05-20T25:00",
            "2026-05-20T10:61",
            "2026-05-20T10:00+99:99",
            "yesterday",
            "1970-01-02Z",
        ] {
            let e = parse_since_in(bad, &z).unwrap_err();
            assert!(matches!(e, DateError::NotADate(_)), "{bad}: {e:?}");
            let msg = e.to_string();
            assert!(msg.starts_with("not a date ("), "{bad}: {msg}");
            assert!(msg.contains("); give YYYY-MM-DD"), "{bad}: {msg}");
            assert!(!msg.contains('\n'), "{bad}: {msg}");
        }
        let e = parse_since_in("2025-02-29", &z).unwrap_err().to_string();
        assert!(e.contains("day"), "{e}");
        let e = parse_since_in("2026-05-20T10:00[Nowhere/Atlantis]", &z).unwrap_err();
        assert!(matches!(e, DateError::NoSuchZone(_)), "{e:?}");
        assert!(e.to_string().contains("Nowhere/Atlantis"), "{e}");
        for early in ["1969-12-31T23:59:59Z", "1970-01-01"] {
            let e = parse_since_in(early, &z).unwrap_err();
            assert!(matches!(e, DateError::BeforeEpoch), "{early}: {e:?}");
            assert!(e.to_string().contains("give 1970-01-01 or later"));
        }
        let e = parse_since_in("9999-12-31T23:59-23:00", &z).unwrap_err();
        assert!(matches!(e, DateError::OutOfRange(_)), "{e:?}");
    }
}
