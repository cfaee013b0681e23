//! `NRT_STATUS`: an open newtype over `u32` with the runtime's names and codes
//! (docs/abi.md §3). Codes are never renumbered, only
//! appended, so an unknown code survives a round trip and prints as
//! `NRT_STATUS(<code>)`.

use core::fmt;

/// A runtime status code. Open: any `u32` is representable; the default
/// is `NRT_SUCCESS` (0).
///
/// # Examples
///
/// ```
/// use xunds::NrtStatus;
///
/// assert_eq!(NrtStatus::QUEUE_FULL.code(), 7);
/// assert_eq!(NrtStatus::from_name("NRT_TIMEOUT"), Some(NrtStatus::TIMEOUT));
/// assert_eq!(NrtStatus::TIMEOUT.to_string(), "NRT_TIMEOUT (5)");
/// // A code this build does not name survives and prints as a number.
/// assert_eq!(NrtStatus(4242).name(), None);
/// assert_eq!(NrtStatus(4242).to_string(), "NRT_STATUS(4242)");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct NrtStatus(pub u32);

codec_as!(NrtStatus: u32, |s| s.0, |v| Some(NrtStatus(v)));

macro_rules! statuses {
    ($($name:ident = $code:expr),* $(,)?) => {
        impl NrtStatus {
            $(
                #[doc = concat!("`NRT_", stringify!($name), "` (", stringify!($code), ").")]
                pub const $name: NrtStatus = NrtStatus($code);
            )*

            /// Every named status, in code order.
            pub const ALL: &'static [NrtStatus] = &[$(NrtStatus::$name),*];

            /// The C name without the `NRT_` prefix, or `None` for an unknown code.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($code => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

statuses! {
    SUCCESS = 0,
    FAILURE = 1,
    INVALID = 2,
    INVALID_HANDLE = 3,
    RESOURCE = 4,
    TIMEOUT = 5,
    HW_ERROR = 6,
    QUEUE_FULL = 7,
    LOAD_NOT_ENOUGH_NC = 9,
    UNSUPPORTED_NEFF_VERSION = 10,
    FAIL_HOST_MEM_ALLOC = 11,
    UNINITIALIZED = 13,
    CLOSED = 14,
    QUEUE_EMPTY = 15,
    EXEC_UNIT_UNRECOVERABLE = 101,
    EXEC_BAD_INPUT = 1002,
    EXEC_COMPLETED_WITH_NUM_ERR = 1003,
    EXEC_COMPLETED_WITH_ERR = 1004,
    EXEC_NC_BUSY = 1005,
    EXEC_OOB = 1006,
    COLL_PENDING = 1100,
    EXEC_HW_ERR_COLLECTIVES = 1200,
    EXEC_HW_ERR_HBM_UE = 1201,
    EXEC_HW_ERR_NC_UE = 1202,
    EXEC_HW_ERR_DMA_ABORT = 1203,
    EXEC_SW_NQ_OVERFLOW = 1204,
    EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
    NETWORK_PROXY_FAILURE = 1206,
}

impl NrtStatus {
    /// The raw code.
    pub const fn code(self) -> u32 {
        self.0
    }

    /// `true` for `NRT_SUCCESS`.
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }

    /// Look a status up by its name, with or without the `NRT_` prefix.
    pub fn from_name(name: &str) -> Option<NrtStatus> {
        let bare = name.strip_prefix("NRT_").unwrap_or(name);
        Self::ALL.iter().copied().find(|s| s.name() == Some(bare))
    }
}

impl From<u32> for NrtStatus {
    fn from(v: u32) -> Self {
        NrtStatus(v)
    }
}

impl From<NrtStatus> for u32 {
    fn from(s: NrtStatus) -> u32 {
        s.0
    }
}

impl fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "NRT_{n} ({})", self.0),
            None => write!(f, "NRT_STATUS({})", self.0),
        }
    }
}

impl fmt::Debug for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_spec_notes() {
        assert_eq!(NrtStatus::QUEUE_FULL.code(), 7);
        assert_eq!(NrtStatus::EXEC_UNIT_UNRECOVERABLE.code(), 101);
        assert_eq!(NrtStatus::EXEC_COMPLETED_WITH_ERR.code(), 1004);
        assert_eq!(NrtStatus::NETWORK_PROXY_FAILURE.code(), 1206);
        assert_eq!(NrtStatus::ALL.len(), 28);
    }

    #[test]
    fn unknown_codes_round_trip() {
        let s = NrtStatus::from(4242);
        assert_eq!(s.name(), None);
        assert_eq!(u32::from(s), 4242);
        assert_eq!(s.to_string(), "NRT_STATUS(4242)");
    }

    #[test]
    fn display_and_lookup() {
        assert_eq!(NrtStatus::TIMEOUT.to_string(), "NRT_TIMEOUT (5)");
        assert_eq!(
            NrtStatus::from_name("NRT_HW_ERROR"),
            Some(NrtStatus::HW_ERROR)
        );
        assert_eq!(
            NrtStatus::from_name("QUEUE_FULL"),
            Some(NrtStatus::QUEUE_FULL)
        );
        assert_eq!(NrtStatus::from_name("NOPE"), None);
    }
}
