//! Periods and durations on the command line and in the monitor's
//! configuration: one parser, so every place refuses the same text with the
//! same words. A file of its own so the monitor-config fuzz target can
//! compile it in beside `monitor/config.rs`.

use std::time::Duration;

/// The longest period or duration the command line takes.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// A period or duration: a number with a unit (`ns`, `us`, `ms`, `s`, `m`,
/// `h`), as neuron-monitor writes them (`"1s"`, `"500ms"`, `"1.5s"`); a
/// bare number is seconds. Zero, negative and longer than
/// [`MAX_DURATION`] are refused, each saying so.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(s.len(), |(i, _)| i);
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. \"5s\", \"200ms\")"))?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("{s:?}: unknown unit {u:?} (ns, us, ms, s, m, h)")),
    };
    let secs = v * scale;
    // NaN is not a number a period can have either.
    if secs.is_nan() || secs <= 0.0 {
        return Err(format!("{s:?}: must be positive"));
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(format!("{s:?}: must be at most 24h"));
    }
    // Under half a nanosecond rounds to a zero period, which a loop would
    // spin on.
    let d = Duration::from_secs_f64(secs);
    if d.is_zero() {
        return Err(format!("{s:?}: must be positive (at least 1ns)"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_or_say_why_not() {
        let ok = |s| parse_duration(s).unwrap();
        assert_eq!(ok("5s"), Duration::from_secs(5));
        assert_eq!(ok("200ms"), Duration::from_millis(200));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("3"), Duration::from_secs(3));
        assert_eq!(ok("+24h"), MAX_DURATION);
        let err = |s| parse_duration(s).unwrap_err();
        assert!(err("0s").contains("must be positive"));
        assert!(err("-1s").contains("must be positive"));
        assert!(err("1e12s").contains("unknown unit"));
        assert!(err("1000000000s").contains("at most 24h"));
        assert!(err("25h").contains("at most 24h"));
        assert!(err("fast").contains("not a duration"));
        assert!(err("5 parsecs").contains("unknown unit"));
        assert!(err("").contains("not a duration"));
        assert!(err("nan").contains("not a duration"));
        // A period that rounds to zero nanoseconds is no period.
        assert!(err("0.0000000001ns").contains("must be positive"));
        assert_eq!(ok("1ns"), Duration::from_nanos(1));
        // One too long says so, not that it must be positive.
        assert!(!err("99999999999999s").contains("positive"));
    }
}
