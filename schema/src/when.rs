//! `scheduled_at` as a client writes it: an ISO 8601 time, or a phrase such as `in 2 hours`,
//! `tomorrow at 9am` or `next monday 14:30`. Everything is read as UTC; a day without a time
//! means 09:00. A send may be scheduled from 1 minute to 30 days ahead.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Utc, Weekday};

/// The earliest a scheduled send may be.
pub const MIN_AHEAD: TimeDelta = TimeDelta::minutes(1);
/// The latest a scheduled send may be.
pub const MAX_AHEAD: TimeDelta = TimeDelta::days(30);

/// The message of every refusal, showing both accepted forms.
pub const FORMS: &str = "Use an ISO 8601 time such as 2026-11-22T09:00:00Z, or a phrase such as \"in 2 hours\", \
    \"tomorrow at 9am\" or \"next monday 14:30\" (read as UTC), from 1 minute to 30 days ahead.";

/// Why a `scheduled_at` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhenError {
    /// Neither an ISO 8601 time nor a known phrase.
    Unreadable,
    /// Less than a minute ahead (or in the past).
    TooSoon,
    /// More than 30 days ahead.
    TooLate,
}

impl WhenError {
    pub fn message(&self) -> String {
        let why = match self {
            WhenError::Unreadable => "`scheduled_at` is not a time Herald can read.",
            WhenError::TooSoon => "`scheduled_at` must be at least 1 minute ahead.",
            WhenError::TooLate => "`scheduled_at` must be at most 30 days ahead.",
        };
        format!("{why} {FORMS}")
    }
}

/// Reads `raw` relative to `now` and checks it lies 1 minute to 30 days ahead.
pub fn parse_scheduled_at(raw: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, WhenError> {
    let at = read(raw, now).ok_or(WhenError::Unreadable)?;
    if at - now < MIN_AHEAD {
        Err(WhenError::TooSoon)
    } else if at - now > MAX_AHEAD {
        Err(WhenError::TooLate)
    } else {
        Ok(at)
    }
}

/// A length of time as written in a request or a setting: a number and a unit, with or without
/// a space (`30s`, `10m`, `10 minutes`, `2h`, `1 day`, `1w`). A bare number is seconds.
pub fn parse_duration(raw: &str) -> Option<TimeDelta> {
    let text = raw.trim().to_ascii_lowercase();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().ok()?;
    let unit = unit.trim_start();
    let unit = if unit.len() > 2 { unit.trim_end_matches('s') } else { unit };
    let delta = match unit {
        "" | "s" | "sec" | "second" => TimeDelta::try_seconds(number)?,
        "m" | "min" | "minute" => TimeDelta::try_minutes(number)?,
        "h" | "hr" | "hour" => TimeDelta::try_hours(number)?,
        "d" | "day" => TimeDelta::try_days(number)?,
        "w" | "week" => TimeDelta::try_weeks(number)?,
        _ => return None,
    };
    Some(delta)
}

fn read(raw: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let text = raw.trim();
    iso(text).or_else(|| phrase(&text.to_ascii_lowercase(), now))
}

/// ISO 8601: with an offset; without one (UTC); or a bare date (09:00 UTC).
fn iso(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"] {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Some(at.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok().map(|day| day.and_time(nine()).and_utc())
}

fn nine() -> NaiveTime {
    NaiveTime::from_hms_opt(9, 0, 0).expect("09:00 is a time")
}

/// `in N <unit>`, or a day (`today`, `tomorrow`, a weekday, `next <weekday>`) with an optional
/// `at <time>`, or `at <time>` alone (today, or tomorrow once that time has passed).
fn phrase(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if let ["in", amount, unit] = words.as_slice() {
        let amount: i64 = match *amount {
            "a" | "an" | "one" => 1,
            number => number.parse().ok().filter(|n| *n > 0)?,
        };
        let unit = unit.trim_end_matches('s');
        let delta = match unit {
            "minute" | "min" => Duration::minutes(amount),
            "hour" | "hr" => Duration::hours(amount),
            "day" => Duration::days(amount),
            "week" => Duration::weeks(amount),
            _ => return None,
        };
        return Some(now + delta);
    }
    let (day_words, time_words) = match words.iter().position(|w| *w == "at") {
        Some(at) => (&words[..at], &words[at + 1..]),
        None => {
            // `tomorrow 9am` or `next monday 14:30`: a trailing time without `at`.
            let split = words.iter().position(|w| time_of_day(w).is_some()).unwrap_or(words.len());
            (&words[..split], &words[split..])
        }
    };
    let time = match time_words {
        [] => None,
        words => Some(time_of_day(&words.join(""))?),
    };
    let today = now.date_naive();
    let day = match day_words {
        [] if time.is_some() => {
            let at = today.and_time(time?).and_utc();
            return Some(if at > now { at } else { at + Duration::days(1) });
        }
        ["today"] => today,
        ["tomorrow"] => today.succ_opt()?,
        [weekday] => next_weekday(today, weekday_named(weekday)?),
        ["next", weekday] => next_weekday(today, weekday_named(weekday)?),
        _ => return None,
    };
    Some(day.and_time(time.unwrap_or_else(nine)).and_utc())
}

/// `9am`, `9:30pm`, `14:30`, `noon`, `midnight`.
fn time_of_day(word: &str) -> Option<NaiveTime> {
    match word {
        "noon" => return NaiveTime::from_hms_opt(12, 0, 0),
        "midnight" => return NaiveTime::from_hms_opt(0, 0, 0),
        _ => {}
    }
    let (clock, pm) = match (word.strip_suffix("am"), word.strip_suffix("pm")) {
        (Some(clock), _) => (clock, Some(false)),
        (_, Some(clock)) => (clock, Some(true)),
        _ => (word, None),
    };
    let (hour, minute) = match clock.split_once(':') {
        Some((hour, minute)) if minute.len() == 2 => (hour.parse::<u32>().ok()?, minute.parse::<u32>().ok()?),
        None if pm.is_some() => (clock.parse::<u32>().ok()?, 0),
        _ => return None,
    };
    let hour = match pm {
        None if hour < 24 => hour,
        Some(pm) if (1..=12).contains(&hour) => hour % 12 + if pm { 12 } else { 0 },
        _ => return None,
    };
    NaiveTime::from_hms_opt(hour, minute, 0)
}

fn weekday_named(word: &str) -> Option<Weekday> {
    word.parse::<Weekday>().ok()
}

/// The next `weekday` after `today`; `monday` and `next monday` both mean the coming Monday
/// (on a Monday, the one in seven days).
fn next_weekday(today: NaiveDate, weekday: Weekday) -> NaiveDate {
    let ahead = (7 + weekday.num_days_from_monday() as i64 - today.weekday().num_days_from_monday() as i64) % 7;
    today + Duration::days(if ahead == 0 { 7 } else { ahead })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Saturday 2026-11-21, 10:42:17 UTC.
    fn now() -> DateTime<Utc> {
        "2026-11-21T10:42:17Z".parse().unwrap()
    }

    fn at(raw: &str) -> String {
        parse_scheduled_at(raw, now()).unwrap_or_else(|e| panic!("{raw}: {e:?}")).to_rfc3339()
    }

    #[test]
    fn iso_times_are_read_with_their_offset_or_as_utc_and_a_bare_date_means_nine() {
        assert_eq!(at("2026-11-22T09:30:00+02:00"), "2026-11-22T07:30:00+00:00");
        assert_eq!(at("2026-11-22T09:30:00"), "2026-11-22T09:30:00+00:00");
        assert_eq!(at("2026-11-23"), "2026-11-23T09:00:00+00:00");
    }

    #[test]
    fn relative_phrases_count_from_now() {
        assert_eq!(at("in 2 hours"), "2026-11-21T12:42:17+00:00");
        assert_eq!(at("In 1 Day"), "2026-11-22T10:42:17+00:00");
        assert_eq!(at("in 5 minutes"), "2026-11-21T10:47:17+00:00");
        assert_eq!(at("in a week"), "2026-11-28T10:42:17+00:00");
    }

    #[test]
    fn days_with_and_without_a_time() {
        assert_eq!(at("tomorrow at 9am"), "2026-11-22T09:00:00+00:00");
        assert_eq!(at("tomorrow"), "2026-11-22T09:00:00+00:00");
        assert_eq!(at("tomorrow 2:30pm"), "2026-11-22T14:30:00+00:00");
        assert_eq!(at("today at 17:00"), "2026-11-21T17:00:00+00:00");
        assert_eq!(at("monday"), "2026-11-23T09:00:00+00:00");
        assert_eq!(at("next monday 14:30"), "2026-11-23T14:30:00+00:00");
        assert_eq!(at("saturday at noon"), "2026-11-28T12:00:00+00:00");
        assert_eq!(at("at 8am"), "2026-11-22T08:00:00+00:00");
        assert_eq!(at("at 11pm"), "2026-11-21T23:00:00+00:00");
    }

    #[test]
    fn unreadable_past_and_far_times_are_refused_with_both_forms_shown() {
        for raw in ["soon", "in 0 hours", "tomorrow at 25:00", "13pm", "next", "2026-13-01", ""] {
            assert_eq!(parse_scheduled_at(raw, now()), Err(WhenError::Unreadable), "{raw}");
        }
        assert_eq!(parse_scheduled_at("2026-11-21T10:42:30Z", now()), Err(WhenError::TooSoon));
        assert_eq!(parse_scheduled_at("2026-11-20", now()), Err(WhenError::TooSoon));
        assert_eq!(parse_scheduled_at("in 31 days", now()), Err(WhenError::TooLate));
        assert!(parse_scheduled_at("in 30 days", now()).is_ok());
        let message = WhenError::Unreadable.message();
        assert!(message.contains("ISO 8601") && message.contains("in 2 hours"));
    }

    #[test]
    fn durations_read_with_or_without_a_space_and_in_long_or_short_units() {
        assert_eq!(parse_duration("10m"), Some(TimeDelta::minutes(10)));
        assert_eq!(parse_duration("1 day"), Some(TimeDelta::days(1)));
        assert_eq!(parse_duration("48 hours"), Some(TimeDelta::hours(48)));
        assert_eq!(parse_duration("90"), Some(TimeDelta::seconds(90)));
        assert_eq!(parse_duration("2 weeks"), Some(TimeDelta::weeks(2)));
        assert_eq!(parse_duration("ten minutes"), None);
        assert_eq!(parse_duration("5 fortnights"), None);
        assert_eq!(parse_duration("10ms"), None);
        assert_eq!(parse_duration(""), None);
    }
}
