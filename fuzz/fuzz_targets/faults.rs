//! The `--faults` grammar over untrusted text: `FaultSpec::parse` never
//! panics, and an accepted spec's canonical text parses back to the same
//! spec (and is its own canonical text).
#![no_main]

use libfuzzer_sys::fuzz_target;
use xunds::system::faults::FaultSpec;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = FaultSpec::parse(text) {
        let canon = spec.text();
        let again = FaultSpec::parse(&canon).expect("the canonical text parses");
        assert_eq!(again, spec, "{text:?} -> {canon:?}");
        assert_eq!(again.text(), canon);
        let _ = spec.plan(1);
    }
});
