//! A trace's header line over untrusted bytes: `TraceHeader::read`, then
//! `JobConfig::from_header` and the job's checks, as `xunds replay` does
//! before it runs anything. Never a panic; an accepted header's line reads
//! back to the same header; a configuration rebuilt from a header writes
//! that header's config line again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xunds::system::job::JobConfig;
use xunds::system::trace::TraceHeader;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = TraceHeader::read(&mut &data[..]) else {
        return;
    };
    let line = h.line();
    let again = TraceHeader::parse(&line).expect("a header's own line parses");
    assert_eq!(again.line(), line);
    if let Ok(cfg) = JobConfig::from_header(&h) {
        assert_eq!(cfg.header_config(), h.config);
        assert_eq!(cfg.seed, h.seed);
        let _ = cfg.check();
    }
});
