//! Replay over an untrusted recording: a small deterministic job (two
//! executions on one core) compared, as `xunds replay` compares it, with a
//! recorded trace made of that job's own header line and the input as its
//! records. Never a panic or a hang; the verdict is "identical" exactly
//! when the input is the job's own record stream, byte for byte (a
//! different record, a cut, or anything after the end record is not).
#![no_main]

use std::io::{Seek as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use xunds::system::job::{self, JobConfig};

fn job() -> JobConfig {
    JobConfig {
        executions: 2,
        vncs: 1,
        models: 1,
        seed: 1,
        deterministic: true,
        unnamed_slab: true,
        ..JobConfig::default()
    }
}

/// The recording of [`job`]: (its header line with the newline, its
/// records).
fn recorded() -> &'static (Vec<u8>, Vec<u8>) {
    static REC: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    REC.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("xunds-fuzz-{}.trace", std::process::id()));
        let cfg = JobConfig {
            trace: Some(path.clone()),
            ..job()
        };
        job::run(&cfg, &mut |_, _| {}).expect("the recording run");
        let bytes = std::fs::read(&path).expect("the recording");
        let _ = std::fs::remove_file(&path);
        let nl = bytes
            .iter()
            .position(|&b| b == b'\n')
            .expect("a header line")
            + 1;
        (bytes[..nl].to_vec(), bytes[nl..].to_vec())
    })
}

/// A file with no name, reached by path through `/proc/self/fd`.
fn scratch() -> &'static (std::fs::File, PathBuf) {
    static FILE: OnceLock<(std::fs::File, PathBuf)> = OnceLock::new();
    FILE.get_or_init(|| {
        let f = xunds::hal::mem::unnamed_file().expect("memfd");
        let p = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        (f, p)
    })
}

fuzz_target!(|data: &[u8]| {
    let (header, records) = recorded();
    let (file, path) = scratch();
    let mut f = file;
    f.set_len(0).unwrap();
    f.rewind().unwrap();
    f.write_all(header).unwrap();
    f.write_all(data).unwrap();
    let cfg = JobConfig {
        replay: Some(path.clone()),
        ..job()
    };
    match job::run(&cfg, &mut |_, _| {}) {
        Ok(r) => {
            let d = r.replay.expect("a replay keeps its comparison");
            assert_eq!(
                d.is_identical(),
                data == &records[..],
                "{d} on {} bytes of records",
                data.len()
            );
        }
        Err(e) => assert!(data != &records[..], "the recording itself refused: {e}"),
    }
});
