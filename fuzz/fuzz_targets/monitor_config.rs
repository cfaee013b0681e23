//! `xunds monitor -c FILE`'s configuration parser over untrusted text (the
//! parser is the binary's; its source is compiled in here): never a panic,
//! every period it accepts positive, and a parsed configuration answers for
//! any tag.
#![no_main]

#[allow(dead_code)]
#[path = "../../src/bin/xunds/monitor/config.rs"]
mod config;
#[allow(dead_code)]
#[path = "../../src/bin/xunds/duration.rs"]
mod duration;
// `config.rs` names the binary's parser at the crate root.
use duration::parse_duration;

use std::time::Duration;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let default = Duration::from_secs(5);
    if let Ok(p) = parse_duration(text) {
        assert!(!p.is_zero());
    }
    if let Ok(c) = config::Config::parse(text, default, &mut |_| {}) {
        let rt = c.rules.iter().flat_map(|r| r.groups.iter().map(|g| g.1));
        for p in rt.chain(c.system.iter().map(|g| g.1)) {
            assert!(!p.is_zero(), "a zero period accepted");
        }
        assert!(c.tick(default) >= Duration::from_millis(10));
        for tag in ["", "xunds", "train-1", text] {
            let _ = c.rule_for(tag);
        }
    }
});
