//! sim: the simulated system behind an `nrta`-shaped interface
//! (docs/abi.md §4): start, load/unload a model, schedule without blocking,
//! completion by query, fd or wait, the results of a completed handle,
//! execute, reset, stop.

use std::collections::HashMap;
use std::ffi::c_char;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use xunds_core::hal::linux::LinuxHal;
use xunds_core::ring::StatusCell;
use xunds_core::system::{
    MlpSpec, ModelHandle, Nanos, OutputBuf, ScheduleOpts, SlabTarget, System, SystemConfig,
};
use xunds_core::wire::seq_id::SeqId;
use xunds_core::wire::work_item::{InferResp, INFER_RESP_SIZE};
use xunds_core::NrtStatus;

use crate::ring::{already, dup_event};
use crate::status::{
    boxed, c_str, checked, guard, handle, out, slice, unbox, NRT_FAILURE, NRT_INVALID,
    NRT_INVALID_HANDLE, NRT_STATUS, NRT_TIMEOUT,
};

/// The configuration `xunds_system_start` takes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_system_config_t {
    /// `sizeof(xunds_system_config_t)`: NRT_INVALID if not.
    pub struct_size: u32,
    /// NeuronCores (= XUs, one worker thread each): 1..=16.
    pub cores: u32,
    /// Slots per XU ring: 1..=32.
    pub ring_capacity: u32,
    /// Microseconds `xunds_system_wait` re-checks before it blocks.
    pub wait_spin_us: u32,
    /// Execution timeout from submission, ns (0: the default, 1 s).
    pub timeout_ns: u64,
    /// The slab file other processes read (`xunds nds dump`); NULL: an
    /// anonymous slab.
    pub slab_path: *const c_char,
}

/// A model of the example MLP family: `batch` rows of `input` features,
/// `hidden` ReLU units, `output` features, weights from `seed`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_mlp_spec_t {
    /// Rows per execution.
    pub batch: u32,
    /// Input features.
    pub input: u32,
    /// Hidden units.
    pub hidden: u32,
    /// Output features.
    pub output: u32,
    /// Weight seed.
    pub seed: u64,
}

/// `timespec` as the response carries it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_timespec_t {
    /// Seconds.
    pub tv_sec: i64,
    /// Nanoseconds.
    pub tv_nsec: i64,
}

/// `infer_resp_t` (112 bytes, docs/abi.md §1.7): the typed response.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_infer_resp_t {
    /// The execution's status.
    pub status: NRT_STATUS,
    /// 0: no error, else 1 + the error class.
    pub err_class: u32,
    /// Error records harvested from the notification queues.
    pub nq_errors: u32,
    /// Notification records harvested in total.
    pub nq_records: u32,
    /// Submission time.
    pub ts_start: xunds_timespec_t,
    /// Completion time (host clock).
    pub ts_end: xunds_timespec_t,
    /// Device clock at the first engine record, ns.
    pub device_start_ns: u64,
    /// Device clock at the last engine record, ns.
    pub device_end_ns: u64,
    /// Multiply-accumulates performed.
    pub mac_count: u64,
    /// Time in collectives, ns.
    pub cc_time_ns: u64,
    /// Output tensors written.
    pub num_outputs: u32,
    /// Zero.
    pub reserved0: [u8; 20],
    /// Device id.
    pub device_id: u16,
    /// TPB index on the device.
    pub device_tpb_idx: u16,
    /// Zero.
    pub reserved1: [u8; 4],
}

const _: () = assert!(core::mem::size_of::<xunds_infer_resp_t>() == INFER_RESP_SIZE);

/// The response's bytes into the C mirror (same layout, all fields).
fn resp_out(r: &InferResp, p: *mut xunds_infer_resp_t) -> Result<(), NRT_STATUS> {
    if p.is_null() {
        return Ok(());
    }
    if !p.is_aligned() {
        return Err(NRT_INVALID);
    }
    let b = r.encode();
    // SAFETY: `p` is valid for a write of the 112-byte mirror (the entry
    // point's contract), `b` is exactly that long; the mirror is integers.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), p.cast::<u8>(), b.len()) };
    Ok(())
}

/// What a scheduled handle's results will be read from.
struct Pending {
    status: Arc<StatusCell>,
    out: Arc<OutputBuf>,
}

/// A running simulated system (opaque). Every call but `xunds_system_stop`
/// may come from any thread.
pub struct xunds_system_t {
    magic: u64,
    sys: System<LinuxHal>,
    /// Scheduled handles whose results were not collected yet.
    pending: Mutex<HashMap<u64, Pending>>,
}
checked!(xunds_system_t, 0x5855_5359_5354_454d);

/// A loaded model (opaque), the caller's until `xunds_system_unload`.
pub struct xunds_model_t {
    magic: u64,
    m: ModelHandle,
}
checked!(xunds_model_t, 0x5855_4d4f_4445_4c21);

/// The example model's spec into `*spec`. Any thread.
///
/// # Safety
/// `spec` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_mlp_example(spec: *mut xunds_mlp_spec_t) -> NRT_STATUS {
    guard(|| {
        let e = MlpSpec::EXAMPLE;
        let s = xunds_mlp_spec_t {
            batch: e.batch,
            input: e.input,
            hidden: e.hidden,
            output: e.output,
            seed: e.seed,
        };
        // SAFETY: the caller's contract (null refused by `out`).
        unsafe { out(spec, s) }
    })
}

/// Start the system: `cores` workers, device proxies and the NDS publisher
/// on their own threads. NRT_INVALID for a bad configuration (or
/// `struct_size`); NRT_RESOURCE when the slab file is held by another
/// writer. Any thread.
///
/// # Safety
/// `cfg` is valid for a read (its `slab_path` NULL or a NUL-terminated
/// string); `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_start(
    cfg: *const xunds_system_config_t,
    out_p: *mut *mut xunds_system_t,
) -> NRT_STATUS {
    guard(|| {
        if cfg.is_null() || out_p.is_null() || !cfg.is_aligned() {
            return Err(NRT_INVALID);
        }
        // SAFETY: the caller's contract; the first word is read first, so a
        // smaller struct is refused before the rest is read.
        if unsafe { (*cfg).struct_size } as usize != core::mem::size_of::<xunds_system_config_t>() {
            return Err(NRT_INVALID);
        }
        // SAFETY: the caller's contract, size checked.
        let c = unsafe { *cfg };
        let cores = u8::try_from(c.cores).map_err(|_| NRT_INVALID)?;
        let mut sc = SystemConfig::new(cores);
        sc.ring_capacity = c.ring_capacity;
        if c.timeout_ns != 0 {
            sc.timeout = Nanos(c.timeout_ns);
        }
        sc.wait_spin = Duration::from_micros(u64::from(c.wait_spin_us));
        if !c.slab_path.is_null() {
            // SAFETY: the caller's contract.
            sc.slab = SlabTarget::Path(PathBuf::from(unsafe { c_str(c.slab_path) }?));
        }
        let sys = System::start(LinuxHal::new(), sc).map_err(|e| e.status().0)?;
        let h = boxed(xunds_system_t {
            magic: <xunds_system_t as crate::status::Checked>::MAGIC,
            sys,
            pending: Mutex::new(HashMap::new()),
        });
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(out_p, h) }
    })
}

/// Load a model of the MLP family on every core under `name` (its NDS
/// records published). Any thread.
///
/// # Safety
/// `s` is a live system; `spec` valid for a read; `name` a NUL-terminated
/// string; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_load_mlp(
    s: *const xunds_system_t,
    spec: *const xunds_mlp_spec_t,
    name: *const c_char,
    out_p: *mut *mut xunds_model_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let (s, name) = unsafe { (handle(s)?, c_str(name)?) };
        if spec.is_null() || !spec.is_aligned() || out_p.is_null() {
            return Err(NRT_INVALID);
        }
        // SAFETY: the caller's contract.
        let sp = unsafe { *spec };
        let mlp = MlpSpec {
            batch: sp.batch,
            input: sp.input,
            hidden: sp.hidden,
            output: sp.output,
            seed: sp.seed,
            ..MlpSpec::EXAMPLE
        };
        let m = s.sys.load_mlp(&mlp, name).map_err(|e| e.status().0)?;
        let h = boxed(xunds_model_t {
            magic: <xunds_model_t as crate::status::Checked>::MAGIC,
            m,
        });
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(out_p, h) }
    })
}

/// The model's input and output lengths in floats (either pointer may be
/// NULL). Any thread.
///
/// # Safety
/// `m` is a live model; the out pointers are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn xunds_model_lens(
    m: *const xunds_model_t,
    input_len: *mut usize,
    output_len: *mut usize,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let m = unsafe { handle(m) }?;
        // SAFETY: the caller's contract.
        unsafe {
            if !input_len.is_null() {
                out(input_len, m.m.input_len())?;
            }
            if !output_len.is_null() {
                out(output_len, m.m.output_len())?;
            }
        }
        Ok(())
    })
}

/// The outputs the model must give for `input` (a host computation, to
/// check executions against). NRT_INVALID for wrong lengths. Any thread.
///
/// # Safety
/// `m` is a live model; `input` holds `input_len` floats, `output` room for
/// `output_len`.
#[no_mangle]
pub unsafe extern "C" fn xunds_model_reference(
    m: *const xunds_model_t,
    input: *const f32,
    input_len: usize,
    output: *mut f32,
    output_len: usize,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let m = unsafe { handle(m) }?;
        // SAFETY: the caller's contract.
        let x = unsafe { slice(input, input_len) }?;
        if input_len != m.m.input_len() || output_len != m.m.output_len() || output.is_null() {
            return Err(NRT_INVALID);
        }
        let y = m.m.reference(x);
        // SAFETY: `output` has room for `output_len` = `y.len()` floats.
        unsafe { std::ptr::copy_nonoverlapping(y.as_ptr(), output, y.len()) };
        Ok(())
    })
}

/// Unload the model (its NDS records deleted) and free `m`. One call,
/// after every schedule of `m` returned; what is in flight completes.
///
/// # Safety
/// `s` is a live system; `m` a live model of it, released once.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_unload(
    s: *const xunds_system_t,
    m: *mut xunds_model_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        // SAFETY: the caller's contract.
        let m = unsafe { unbox(m) }?;
        s.sys.unload_model(m.m).map_err(|e| e.status().0)
    })
}

/// `nrta_schedule`: queue one execution of `m` on XU `xu` and return its
/// seq_id; never blocks on the device or ring space. `input` is copied
/// before the call returns. NRT_QUEUE_FULL (retry later) or
/// NRT_EXEC_UNIT_UNRECOVERABLE (reset the XU) schedule nothing; NRT_INVALID
/// for a bad XU or input length; NRT_INVALID_HANDLE for a model of another
/// system. The results stay with the system until `xunds_system_collect`.
/// Any thread.
///
/// # Safety
/// `s` is a live system, `m` a live model; `input` holds `input_len`
/// floats; `seq_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_schedule(
    s: *const xunds_system_t,
    xu: u32,
    m: *const xunds_model_t,
    input: *const f32,
    input_len: usize,
    seq_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let (s, m, x) = unsafe { (handle(s)?, handle(m)?, slice(input, input_len)?) };
        if seq_out.is_null() {
            return Err(NRT_INVALID);
        }
        let xu = u8::try_from(xu).map_err(|_| NRT_INVALID)?;
        let opts = ScheduleOpts::for_model(&m.m);
        let (Some(status), Some(out_buf)) = (opts.status.clone(), opts.out.clone()) else {
            return Err(NRT_FAILURE);
        };
        // The entry goes in under the lock before the schedule, so a collect
        // racing the completion finds it.
        let mut pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
        let seq = s.sys.schedule(xu, &m.m, x, opts).map_err(|e| e.0)?;
        pending.insert(
            seq.0,
            Pending {
                status,
                out: out_buf,
            },
        );
        drop(pending);
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(seq_out, seq.0) }
    })
}

/// `nrta_is_completed`. NRT_INVALID_HANDLE for a seq_id no XU of the
/// system issued. Any thread.
///
/// # Safety
/// `s` is a live system; `done` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_is_completed(
    s: *const xunds_system_t,
    seq: u64,
    done: *mut bool,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        let d = s.sys.is_completed(SeqId(seq)).map_err(|e| e.0)?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(done, d) }
    })
}

/// `nrta_get_last_completed` of XU `xu`. Any thread.
///
/// # Safety
/// `s` is a live system; `seq_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_last_completed(
    s: *const xunds_system_t,
    xu: u32,
    seq_out: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        let xu = u8::try_from(xu).map_err(|_| NRT_INVALID)?;
        let q = s.sys.last_completed(xu).map_err(|e| e.0)?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(seq_out, q.0) }
    })
}

/// The completion fd: arm the caller's eventfd `efd` for `seq`, as
/// `xunds_ring_arm` does (a duplicate is installed and signalled once; the
/// caller keeps its own; one eventfd may serve many handles). `*already` is
/// true, nothing installed, when `seq` had completed. Any thread.
///
/// # Safety
/// `s` is a live system; `already_out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_arm(
    s: *const xunds_system_t,
    seq: u64,
    efd: i32,
    already_out: *mut bool,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        if already_out.is_null() {
            return Err(NRT_INVALID);
        }
        let ev = dup_event(efd)?;
        let a = s.sys.arm(SeqId(seq), &ev).map_err(|e| e.0)?;
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(already_out, already(a)) }
    })
}

/// Wait until `seq` completes, at most `timeout_ms` (re-checking for the
/// configured spin, then blocking on a pooled eventfd): NRT_SUCCESS or
/// NRT_TIMEOUT; NRT_FAILURE once the system's threads have stopped. Any
/// thread.
///
/// # Safety
/// `s` is a live system.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_wait(
    s: *const xunds_system_t,
    seq: u64,
    timeout_ms: u32,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        let t = Duration::from_millis(u64::from(timeout_ms));
        match s.sys.wait(SeqId(seq), t).map_err(|e| e.0)? {
            xunds_core::ring::Waited::Completed { .. } => Ok(()),
            _ => Err(NRT_TIMEOUT),
        }
    })
}

/// Take the results of a completed handle: its status into `*status`, its
/// outputs into `output` (`output_len` floats, the model's output length)
/// and its `infer_resp_t` into `*resp` (NULL: not wanted). Once per handle:
/// the system forgets it after. NRT_TIMEOUT when it has not completed yet
/// (nothing written, call again later); NRT_INVALID_HANDLE for a seq_id
/// not scheduled through `xunds_system_schedule` or already collected;
/// NRT_INVALID for a wrong `output_len`. Any thread.
///
/// # Safety
/// `s` is a live system; `status` valid for a write; `output` for
/// `output_len` floats; `resp` NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_collect(
    s: *const xunds_system_t,
    seq: u64,
    status: *mut NRT_STATUS,
    output: *mut f32,
    output_len: usize,
    resp: *mut xunds_infer_resp_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        if status.is_null() || (output.is_null() && output_len != 0) || !output.is_aligned() {
            return Err(NRT_INVALID);
        }
        let mut pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
        let p = pending.get(&seq).ok_or(NRT_INVALID_HANDLE)?;
        if p.out.len() != output_len {
            return Err(NRT_INVALID);
        }
        if !s.sys.is_completed(SeqId(seq)).map_err(|e| e.0)? {
            return Err(NRT_TIMEOUT);
        }
        let p = pending.remove(&seq).ok_or(NRT_INVALID_HANDLE)?;
        drop(pending);
        let r = p.out.response().map_err(|_| NRT_FAILURE)?;
        let st = p.status.get().unwrap_or(r.status);
        let y = p.out.to_vec();
        // SAFETY: the caller's contract: `output` has room for
        // `output_len` = `y.len()` floats; `status` checked non-null.
        unsafe {
            std::ptr::copy_nonoverlapping(y.as_ptr(), output, y.len());
            out(status, st.0)?;
        }
        resp_out(&r, resp)
    })
}

/// `nrt_execute`: schedule (retrying a full queue), wait up to
/// `timeout_ms`, then the status, outputs and typed response as
/// `xunds_system_collect` gives them. NRT_TIMEOUT when it did not complete
/// in time (it still runs; its results are dropped). Any thread.
///
/// # Safety
/// As `xunds_system_schedule` and `xunds_system_collect`.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_execute(
    s: *const xunds_system_t,
    xu: u32,
    m: *const xunds_model_t,
    input: *const f32,
    input_len: usize,
    output: *mut f32,
    output_len: usize,
    timeout_ms: u32,
    status: *mut NRT_STATUS,
    resp: *mut xunds_infer_resp_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let (s, m, x) = unsafe { (handle(s)?, handle(m)?, slice(input, input_len)?) };
        if status.is_null() || output.is_null() || output_len != m.m.output_len() {
            return Err(NRT_INVALID);
        }
        let xu = u8::try_from(xu).map_err(|_| NRT_INVALID)?;
        let t = Duration::from_millis(u64::from(timeout_ms));
        let e = s.sys.execute(xu, &m.m, x, t).map_err(|e| e.0)?;
        // SAFETY: the caller's contract: room for `output_len` floats,
        // which is the model's output length (checked).
        unsafe {
            std::ptr::copy_nonoverlapping(e.outputs.as_ptr(), output, e.outputs.len());
            out(status, e.status.0)?;
        }
        resp_out(&e.response, resp)
    })
}

/// Reset XU `xu` (drain it, complete what is in flight, re-initialise its
/// queues, healthy again), waiting up to `timeout_ms`: NRT_TIMEOUT if not
/// done by then (the reset goes on). Any thread.
///
/// # Safety
/// `s` is a live system.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_reset(
    s: *const xunds_system_t,
    xu: u32,
    timeout_ms: u32,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { handle(s) }?;
        let xu = u8::try_from(xu).map_err(|_| NRT_INVALID)?;
        let t = Duration::from_millis(u64::from(timeout_ms));
        s.sys.reset(xu, t).map_err(|e| match e {
            xunds_core::system::RecoverError::TimedOut => NRT_TIMEOUT,
            xunds_core::system::RecoverError::NoSuchXu => NRT_INVALID,
            _ => NRT_FAILURE,
        })
    })
}

/// Wait until everything in flight has completed and the slab agrees (up
/// to 30 s), stop the system's threads and free `s`; `*executed` (NULL: not
/// wanted) is the number of executions the device ran. NRT_FAILURE when
/// executions were still in flight after 30 s or a thread had failed (`s`
/// is freed all the same). One call, after every other call on `s` and its
/// models returned; unload the models first (a model handle not unloaded
/// is never freed).
///
/// # Safety
/// `s` came from `xunds_system_start` and is released once; `executed` is
/// NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_system_stop(
    s: *mut xunds_system_t,
    executed: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { unbox(s) }?;
        let rep = s.sys.shutdown().map_err(|_| NRT_FAILURE)?;
        if !executed.is_null() {
            // SAFETY: checked non-null; valid by contract.
            unsafe { out(executed, rep.device.executed) }?;
        }
        Ok(())
    })
}

const _: () = assert!(NrtStatus::TIMEOUT.0 == NRT_TIMEOUT);
