//! The `--faults SPEC` language of `xunds run`: a comma-separated list of
//! `KIND@TRIGGER[/coreN]` items, each one rule of the HAL's seeded
//! `FaultInjector` (`crate::sim::fault`) plan.
//!
//! | KIND | fault | what the caller sees |
//! |---|---|---|
//! | `error:CLASS` (an [`ErrorClass`] name: `generic`, `numerical`, ...) | an engine's DONE NQ record becomes an ERROR of CLASS | 1003 (numerical), 6 `HW_ERROR` (hw, XU degraded), else 1004 |
//! | `timeout` | an NQ record write is dropped (the device never completes; that ring stays stuck) | 5 `TIMEOUT`, XU degraded, later schedules 101 |
//! | `doorbell` | a doorbell (`tail_inc`) is dropped | 5 `TIMEOUT`, XU degraded |
//! | `corrupt:len`, `corrupt:ring_id`, `corrupt:addr` | a descriptor is corrupted (length, ring id, address outside device memory) | 1203 `EXEC_HW_ERR_DMA_ABORT`, XU degraded; what was queued behind it times out |
//! | `nq_overflow` | the device reads an NQ ring's head register (`NQ_HEAD[engine]`) a full ring behind, so the ring looks full: the device drops the record and counts it in the core's `NQ_OVERFLOWS` register (its own overflow path, [`NQ_OVERFLOW`]) | 1204 `EXEC_SW_NQ_OVERFLOW` for the execution that lost the record, once its deadline passes (the record never comes); `INFER_COMPLETED_WITH_ERR` and EXT `ERR_SW_NQ_OVERFLOW` +1, no error class; XU degraded as soon as the worker sees the overflow (later schedules 101); the ring is not stuck: what is queued behind completes |
//!
//! | TRIGGER | fires on |
//! |---|---|
//! | `P` (a decimal in 0..=1, e.g. `0.001`) or `N/D` | each eligible operation with that probability (seeded by `--seed`) |
//! | `#N` | only the N-th eligible operation |
//! | `N+` | every eligible operation from the N-th on |
//!
//! Eligible operations: NQ record writes (`error`, `timeout`; one per engine,
//! five per execution of the example model), the device's reads of an NQ
//! head before each NQ record write (`nq_overflow`; the same five), doorbells
//! (two per execution), descriptor writes (`corrupt`; six per execution).
//! `/coreN` restricts a
//! rule to one core. Example: `error:hw@0.01,timeout@0.001,corrupt:ring_id@#40/core1`.
//! Queue-full refusals are not a device fault: they happen when a client
//! outpaces the device (the workload driver backs off and retries).

use core::fmt;

use crate::device::memmap::{reg, MAX_NQ_LEN};
use crate::sim::fault::{DescCorruption, Fault, FaultPlan, FaultRule, Trigger};
use crate::wire::nq::{self, ErrorClass};

/// The HAL fault behind `nq_overflow`: reads of the `NQ_HEAD[engine]`
/// registers lag by the longest NQ ring there is, so any ring looks full to
/// the device's NQ writer (`count - head >= len`), which then drops the
/// record and bumps `NQ_OVERFLOWS`; the harvester reports
/// `HarvestError::Overflow` (`EXEC_SW_NQ_OVERFLOW`). A stale head never
/// lets the writer overwrite an unread slot: it can only make it drop.
pub const NQ_OVERFLOW: Fault = Fault::StaleRead {
    off: reg::NQ_HEAD,
    span: 4 * nq::ENGINES as usize,
    lag: MAX_NQ_LEN,
};

/// A parsed `--faults` spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultSpec {
    /// The rules, in spec order.
    pub rules: Vec<FaultRule>,
}

/// Why a spec did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpecError {
    /// The offending item.
    pub item: String,
    /// What is wrong.
    pub why: String,
}

impl fmt::Display for FaultSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad fault {:?}: {}", self.item, self.why)
    }
}

impl std::error::Error for FaultSpecError {}

/// The kinds without a parameter, by name (`error:CLASS` takes its names
/// from [`ErrorClass`], `corrupt:WHAT` from [`DescCorruption`]). A new kind is
/// one row here.
const KINDS: [(&str, Fault); 3] = [
    ("timeout", Fault::DropNq),
    ("doorbell", Fault::DropDoorbell),
    ("nq_overflow", NQ_OVERFLOW),
];

/// A number of the spec: plain decimal digits (Rust's integer parsing
/// would take a leading `+` too).
fn digits<T: core::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A decimal probability `0.001` or a fraction `1/1000` as `(num, den)`.
fn parse_chance(s: &str) -> Option<(u64, u64)> {
    if let Some((n, d)) = s.split_once('/') {
        let (n, d) = (digits::<u64>(n)?, digits::<u64>(d)?);
        return (d > 0 && n <= d).then_some((n, d));
    }
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 12 {
        return None;
    }
    let den = 10u64.pow(frac.len() as u32);
    let int: u64 = if int.is_empty() { 0 } else { digits(int)? };
    let frac_v: u64 = if frac.is_empty() { 0 } else { digits(frac)? };
    let num = int.checked_mul(den)?.checked_add(frac_v)?;
    (num <= den).then_some((num, den))
}

/// The KIND of a rule injecting `fault`, as the spec names it
/// (`error:hw`, `timeout`, ...).
pub fn kind_name(fault: Fault) -> String {
    let named = KINDS.iter().find(|k| k.1 == fault);
    match (named, fault) {
        (Some(k), _) => k.0.to_string(),
        (None, Fault::NqError(c)) => format!("error:{c}"),
        (None, Fault::CorruptDesc { what, .. }) => format!("corrupt:{what}"),
        // Not expressible in the spec language (a rule built by hand):
        // named without spaces, but it does not parse back.
        (None, Fault::StaleRead { off, span, lag }) => {
            let end = off.saturating_add(span);
            format!("stale_read(+{off:#x}..+{end:#x},-{lag})")
        }
        // DropNq and DropDoorbell have a KINDS row.
        (None, f) => format!("{f:?}"),
    }
}

impl FaultSpec {
    /// `true` without rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Parse a spec (the empty string and `none` are no faults).
    pub fn parse(spec: &str) -> Result<FaultSpec, FaultSpecError> {
        let mut rules = Vec::new();
        let spec = spec.trim();
        if spec.is_empty() || spec == "none" {
            return Ok(FaultSpec { rules });
        }
        for item in spec.split(',') {
            let item = item.trim();
            let bad = |why: &str| FaultSpecError {
                item: item.to_string(),
                why: why.to_string(),
            };
            let (kind, rest) = item
                .split_once('@')
                .ok_or_else(|| bad("expected KIND@TRIGGER"))?;
            // The core is the last `/` part: a probability trigger has a
            // `/` of its own (`1/100/core1`).
            let (trig, core) = match rest.rsplit_once('/') {
                Some((t, c)) if c.starts_with("core") => {
                    let n = digits::<u8>(&c[4..]).ok_or_else(|| bad("bad /coreN"))?;
                    (t, Some(n))
                }
                _ => (rest, None),
            };
            let unknown =
                |what: &str, names: &[&str]| bad(&format!("unknown {what} ({})", names.join(", ")));
            let fault = match kind.split_once(':') {
                Some(("error", c)) => Fault::NqError(
                    ErrorClass::from_name(c)
                        .ok_or_else(|| unknown("class", &ErrorClass::ALL.map(ErrorClass::name)))?,
                ),
                Some(("corrupt", c)) => Fault::CorruptDesc {
                    what: DescCorruption::from_name(c).ok_or_else(|| {
                        unknown("corruption", &DescCorruption::ALL.map(DescCorruption::name))
                    })?,
                    dir: None,
                },
                _ => KINDS
                    .iter()
                    .find(|(n, _)| *n == kind)
                    .map(|k| k.1)
                    .ok_or_else(|| {
                        let named = ["error:CLASS", "corrupt:WHAT"].into_iter();
                        unknown("kind", &named.chain(KINDS.map(|k| k.0)).collect::<Vec<_>>())
                    })?,
            };
            let trigger = if let Some(n) = trig.strip_prefix('#') {
                Trigger::Nth(digits(n).filter(|&n| n > 0).ok_or_else(|| bad("bad #N"))?)
            } else if let Some(n) = trig.strip_suffix('+') {
                Trigger::From(digits(n).filter(|&n| n > 0).ok_or_else(|| bad("bad N+"))?)
            } else {
                let (num, den) = parse_chance(trig).ok_or_else(|| bad("bad probability"))?;
                Trigger::Chance { num, den }
            };
            rules.push(FaultRule {
                fault,
                trigger,
                core,
            });
        }
        Ok(FaultSpec { rules })
    }

    /// The canonical text (parses back to the same spec; no spaces, so it
    /// fits a trace header token). `none` without rules.
    pub fn text(&self) -> String {
        if self.rules.is_empty() {
            return "none".to_string();
        }
        self.rules
            .iter()
            .map(|r| {
                let core = r.core.map(|c| format!("/core{c}")).unwrap_or_default();
                let trigger = match r.trigger {
                    Trigger::Nth(n) => format!("#{n}"),
                    Trigger::From(n) => format!("{n}+"),
                    Trigger::Chance { num, den } => format!("{num}/{den}"),
                };
                format!("{}@{trigger}{core}", kind_name(r.fault))
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The injector's plan, seeded.
    pub fn plan(&self, seed: u64) -> FaultPlan {
        FaultPlan {
            seed,
            rules: self.rules.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_and_trigger() {
        let s = FaultSpec::parse(
            "error:hw@0.01, timeout@0.001,corrupt:ring_id@#40/core1,doorbell@3+,error:numerical@1/8",
        )
        .unwrap();
        assert_eq!(s.rules.len(), 5);
        assert_eq!(s.rules[0].fault, Fault::NqError(ErrorClass::Hw));
        assert_eq!(s.rules[0].trigger, Trigger::Chance { num: 1, den: 100 });
        assert_eq!(s.rules[1].fault, Fault::DropNq);
        assert_eq!(s.rules[1].trigger, Trigger::Chance { num: 1, den: 1000 });
        assert_eq!(s.rules[2].trigger, Trigger::Nth(40));
        assert_eq!(s.rules[2].core, Some(1));
        assert_eq!(s.rules[3].fault, Fault::DropDoorbell);
        assert_eq!(s.rules[3].trigger, Trigger::From(3));
        assert_eq!(s.rules[4].trigger, Trigger::Chance { num: 1, den: 8 });
        let text = s.text();
        assert_eq!(
            text,
            "error:hw@1/100,timeout@1/1000,corrupt:ring_id@#40/core1,doorbell@3+,error:numerical@1/8"
        );
        assert_eq!(FaultSpec::parse(&text).unwrap(), s);
    }

    /// A probability trigger on one core: the core is the last `/` part,
    /// after the probability's own `/`. It did not parse (the first `/`
    /// was taken for the core's), though `text()` writes it: a recorded
    /// trace with one did not replay, and the sim lost such cases' faults.
    #[test]
    fn a_probability_on_one_core_round_trips() {
        let s = FaultSpec::parse("error:hw@0.01/core1,timeout@1/8/core0").unwrap();
        assert_eq!(
            (s.rules[0].trigger, s.rules[0].core),
            (Trigger::Chance { num: 1, den: 100 }, Some(1))
        );
        assert_eq!(
            (s.rules[1].trigger, s.rules[1].core),
            (Trigger::Chance { num: 1, den: 8 }, Some(0))
        );
        assert_eq!(s.text(), "error:hw@1/100/core1,timeout@1/8/core0");
        assert_eq!(FaultSpec::parse(&s.text()).unwrap(), s);
    }

    #[test]
    fn refuses_nonsense() {
        for bad in [
            "error@0.1",
            "error:bogus@0.1",
            "timeout",
            "timeout@2",
            "timeout@-1",
            "timeout@#0",
            "corrupt:x@0.1",
            "fire@0.1",
            "timeout@0.1/cpu1",
            "timeout@1/0",
            "nq_overflow:pe@#1",
            "nq_overflow",
            "overflow@#1",
            // Numbers are plain digits: Rust's integer parsing takes a sign.
            "timeout@#+5",
            "timeout@+5+",
            "timeout@#5/core+1",
            "timeout@+1/8",
            "timeout@1/+8",
            "timeout@#",
            "timeout@+",
            "timeout@#5/core",
        ] {
            assert!(FaultSpec::parse(bad).is_err(), "{bad}");
        }
        assert!(FaultSpec::parse("").unwrap().is_empty());
        assert!(FaultSpec::parse("none").unwrap().is_empty());
        assert_eq!(FaultSpec::default().text(), "none");
        assert_eq!(parse_chance("1"), Some((1, 1)));
        assert_eq!(parse_chance("0.5"), Some((5, 10)));
        assert_eq!(parse_chance("."), None);
    }

    #[test]
    fn nq_overflow_is_a_stale_nq_head() {
        let s = FaultSpec::parse("nq_overflow@#3/core1,nq_overflow@0.5").unwrap();
        assert_eq!(s.rules[0].fault, NQ_OVERFLOW);
        assert_eq!(
            (s.rules[0].trigger, s.rules[0].core),
            (Trigger::Nth(3), Some(1))
        );
        assert_eq!(s.text(), "nq_overflow@#3/core1,nq_overflow@5/10");
        assert_eq!(FaultSpec::parse(&s.text()).unwrap(), s);
        // It covers exactly the five NQ_HEAD registers, and lags by at least
        // any ring's length, so every valid ring looks full to the writer.
        let Fault::StaleRead { off, span, lag } = NQ_OVERFLOW else {
            panic!("{NQ_OVERFLOW:?}");
        };
        assert_eq!(reg::name(off), Some("NQ_HEAD[PE]"));
        assert_eq!(reg::name(off + span - 4), Some("NQ_HEAD[SP]"));
        assert_eq!(reg::name(off + span), None);
        assert!(lag >= MAX_NQ_LEN);
        // A hand-made stale read has a name without spaces, which does not
        // parse back (the spec language has no such kind).
        let odd = FaultSpec {
            rules: vec![FaultRule {
                fault: Fault::StaleRead {
                    off: 0x18,
                    span: 4,
                    lag: 1,
                },
                trigger: Trigger::Nth(1),
                core: None,
            }],
        };
        assert_eq!(odd.text(), "stale_read(+0x18..+0x1c,-1)@#1");
        assert!(FaultSpec::parse(&odd.text()).is_err());
    }
}
