//! The C interface of xunds (`include/xunds.h`, generated from this crate by
//! cbindgen; docs/design.md "The C layer").
//!
//! Three sections, in the library's layer order: **core** (an XU ring in
//! caller memory, an NDS writer over caller memory and a reader over a
//! read-only mapping), **std** (slab files with the one-writer lock, ring
//! completion by eventfd) and **sim** (the simulated system, shaped like the
//! runtime's `nrta_*` calls).
//!
//! Every entry point returns an `NRT_STATUS` and runs under `catch_unwind`
//! ([`status::guard`]): a panic never unwinds into C, it is `NRT_FAILURE`.
//! Results go through out-pointers, written only on `NRT_SUCCESS` (unless a
//! function says otherwise). Handles are opaque heap objects carrying a magic
//! word that their release clears ([`status::Checked`]).

#![allow(non_camel_case_types)]

pub mod nds;
pub mod ring;
pub mod sim;
pub mod status;

/// The contracts C cannot check cheaply from its side: refusals leave
/// nothing changed, a status word is pending until the worker writes it,
/// results are collected once.
#[cfg(test)]
mod tests {
    use std::ffi::{c_void, CStr};
    use std::ptr::{null, null_mut};

    use crate::ring::*;
    use crate::sim::*;
    use crate::status::*;

    #[repr(C, align(64))]
    struct Mem([u8; 256 + 2 * 32]);

    #[test]
    fn status_names_and_unknown_codes() {
        let name = |s| {
            // SAFETY: a non-null result is a static NUL-terminated string.
            unsafe { CStr::from_ptr(xunds_status_name(s)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(name(NRT_QUEUE_FULL), "QUEUE_FULL");
        assert_eq!(name(NRT_EXEC_UNIT_UNRECOVERABLE), "EXEC_UNIT_UNRECOVERABLE");
        assert!(xunds_status_name(8).is_null());
        assert!(xunds_status_name(XUNDS_STATUS_PENDING).is_null());
    }

    /// A 2-slot ring: the third submit is NRT_QUEUE_FULL and changes
    /// nothing; each status word is pending until its pop writes the
    /// worker's status; exec_info comes back as given; handles of the
    /// wrong kind and NULLs are refused.
    #[test]
    fn ring_status_words_and_refusals() {
        let mut mem = Mem([0xAA; 320]);
        let (mut r, mut p, mut w) = (null_mut(), null_mut(), null_mut());
        let base = mem.0.as_mut_ptr().cast::<c_void>();
        assert_eq!(xunds_ring_mem_size(2), 320);
        // SAFETY: `mem` outlives the ring (fini below) and is used only by it.
        unsafe {
            assert_eq!(
                xunds_ring_init(base, 320, 7, 2, &mut r, &mut p, &mut w),
                NRT_SUCCESS
            );
            let mut st = [0u32; 3];
            let mut seq = [0u64; 3];
            let mut info = [1u64, 2, 3];
            for i in 0..2 {
                let item = (&raw mut info[i]).cast::<c_void>();
                assert_eq!(
                    xunds_producer_submit(p, item, &mut st[i], &mut seq[i]),
                    NRT_SUCCESS
                );
                assert_eq!(st[i], XUNDS_STATUS_PENDING);
            }
            st[2] = 5;
            let item = (&raw mut info[2]).cast::<c_void>();
            assert_eq!(
                xunds_producer_submit(p, item, &mut st[2], &mut seq[2]),
                NRT_QUEUE_FULL
            );
            assert_eq!((st[2], seq[2]), (5, 0), "a refused submit writes nothing");
            assert_eq!(seq[0], 7 << 48 | 1);
            let mut t = 0;
            assert_eq!(xunds_producer_trigger(p, &mut t), NRT_SUCCESS);
            let (mut s, mut got) = (0u64, null_mut());
            assert_eq!(
                xunds_worker_pop(w, NRT_TIMEOUT, &mut s, &mut got),
                NRT_SUCCESS
            );
            assert_eq!((s, got.cast::<u64>().read()), (seq[0], 1));
            assert_eq!(st, [NRT_TIMEOUT, XUNDS_STATUS_PENDING, 5]);
            assert_eq!(xunds_worker_pop(w, 0, &mut s, &mut got), NRT_QUEUE_EMPTY);
            let mut done = true;
            assert_eq!(xunds_ring_is_completed(r, seq[1], &mut done), NRT_SUCCESS);
            assert!(!done);
            assert_eq!(xunds_ring_wait(r, seq[1], 1), NRT_TIMEOUT);
            assert_eq!(xunds_ring_is_completed(r, 1, &mut done), NRT_INVALID_HANDLE);
            // The wrong kind of handle, NULL handles and NULL out-pointers.
            assert_eq!(
                xunds_worker_pop(p.cast(), 0, &mut s, &mut got),
                NRT_INVALID_HANDLE
            );
            assert_eq!(xunds_ring_in_flight(null(), &mut s), NRT_INVALID_HANDLE);
            assert_eq!(xunds_ring_in_flight(r, null_mut()), NRT_INVALID);
            assert_eq!(
                xunds_producer_submit(p, null_mut(), null_mut(), &mut s),
                NRT_INVALID
            );
            assert_eq!(xunds_ring_fini(p.cast()), NRT_INVALID_HANDLE);
            assert_eq!(xunds_ring_fini(r), NRT_SUCCESS);
        }
        assert_eq!(
            &mem.0[..2],
            &7u16.to_le_bytes(),
            "xu_id in the caller's memory"
        );
    }

    /// `collect` before completion is NRT_TIMEOUT (nothing written), after
    /// it the results once, then NRT_INVALID_HANDLE.
    #[test]
    fn system_results_are_collected_once() {
        let cfg = xunds_system_config_t {
            struct_size: core::mem::size_of::<xunds_system_config_t>() as u32,
            cores: 1,
            ring_capacity: 4,
            wait_spin_us: 0,
            timeout_ns: 0,
            slab_path: null(),
        };
        let (mut s, mut m) = (null_mut(), null_mut());
        // SAFETY: every pointer below is a live local or a handle the calls
        // returned; the system is stopped last.
        unsafe {
            let bad = xunds_system_config_t {
                struct_size: 8,
                ..cfg
            };
            assert_eq!(xunds_system_start(&bad, &mut s), NRT_INVALID);
            assert_eq!(xunds_system_start(&cfg, &mut s), NRT_SUCCESS);
            let mut spec = core::mem::zeroed();
            assert_eq!(xunds_mlp_example(&mut spec), NRT_SUCCESS);
            assert_eq!(
                xunds_system_load_mlp(s, &spec, c"m".as_ptr(), &mut m),
                NRT_SUCCESS
            );
            let (mut il, mut ol) = (0, 0);
            assert_eq!(xunds_model_lens(m, &mut il, &mut ol), NRT_SUCCESS);
            let x = vec![0.25f32; il];
            let (mut y, mut want) = (vec![0f32; ol], vec![0f32; ol]);
            assert_eq!(
                xunds_model_reference(m, x.as_ptr(), il, want.as_mut_ptr(), ol),
                NRT_SUCCESS
            );
            let mut seq = 0;
            assert_eq!(
                xunds_system_schedule(s, 0, m, x.as_ptr(), il, &mut seq),
                NRT_SUCCESS
            );
            let mut st = 77;
            let mut resp: xunds_infer_resp_t = core::mem::zeroed();
            let collect = |st: &mut u32, y: &mut [f32], r: &mut xunds_infer_resp_t| {
                xunds_system_collect(s, seq, st, y.as_mut_ptr(), y.len(), r)
            };
            loop {
                match collect(&mut st, &mut y, &mut resp) {
                    NRT_TIMEOUT => assert_eq!(st, 77, "nothing written before completion"),
                    r => {
                        assert_eq!(r, NRT_SUCCESS);
                        break;
                    }
                }
                std::thread::yield_now();
            }
            assert_eq!((st, resp.status), (NRT_SUCCESS, NRT_SUCCESS));
            assert_eq!(y, want);
            assert!(resp.mac_count > 0);
            assert_eq!(collect(&mut st, &mut y, &mut resp), NRT_INVALID_HANDLE);
            assert_eq!(xunds_system_unload(s, m), NRT_SUCCESS);
            let mut n = 0;
            assert_eq!(xunds_system_stop(s, &mut n), NRT_SUCCESS);
            assert_eq!(n, 1);
        }
    }

    /// The core reader over a `PROT_READ` mapping of a slab file another
    /// handle writes: counters and records read, and NRT_CLOSED once the
    /// writer released the slab.
    #[test]
    fn core_reader_over_a_read_only_mapping() {
        use crate::nds::*;
        let path = std::env::temp_dir().join(format!("xunds-capi-ro-{}.nds", std::process::id()));
        let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let (mut w, mut r) = (null_mut(), null_mut());
        // SAFETY: the mapping is read-only, of the whole file, and unmapped
        // after the reader is closed; the handles are live until released.
        unsafe {
            assert_eq!(xunds_nds_create(cpath.as_ptr(), &mut w), NRT_SUCCESS);
            assert_eq!(
                xunds_nds_counter_update(w, 3, 1, XUNDS_NDS_ADD, 9),
                NRT_SUCCESS
            );
            let f = std::fs::File::open(&path).unwrap();
            let len = XUNDS_NDS_SLAB_SIZE;
            let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
            let map = libc::mmap(null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, fd, 0);
            assert_ne!(map, libc::MAP_FAILED);
            assert_eq!(xunds_nds_reader_attach(map, len, &mut r), NRT_SUCCESS);
            let mut v = 0;
            assert_eq!(xunds_nds_read_counter(r, 3, 1, &mut v), NRT_SUCCESS);
            assert_eq!(v, 9);
            assert_eq!(
                xunds_nds_counter_update(w, 3, 1, XUNDS_NDS_OR, 6),
                NRT_SUCCESS
            );
            assert_eq!(xunds_nds_read_counter(r, 3, 1, &mut v), NRT_SUCCESS);
            assert_eq!(v, 15);
            let (mut st, mut m) = (9, core::mem::zeroed());
            assert_eq!(xunds_nds_read_model(r, 5, &mut st, &mut m), NRT_SUCCESS);
            assert_eq!(st, XUNDS_RECORD_UNPUBLISHED);
            assert_eq!(xunds_nds_read_model(r, 64, &mut st, &mut m), NRT_INVALID);
            assert_eq!(xunds_nds_writer_release(w), NRT_SUCCESS);
            assert_eq!(xunds_nds_read_counter(r, 3, 1, &mut v), NRT_CLOSED);
            assert_eq!(xunds_nds_reader_close(r), NRT_SUCCESS);
            libc::munmap(map, len);
            let mut r2 = null_mut();
            assert_eq!(xunds_nds_reader_attach(null(), len, &mut r2), NRT_INVALID);
        }
        std::fs::remove_file(&path).unwrap();
    }
}
