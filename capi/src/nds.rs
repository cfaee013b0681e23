//! Core: the NDS writer over caller memory and the reader over a read-only
//! mapping (docs/abi.md §2); std: slab files with the one-writer lock.
//!
//! Records cross as byte-exact C mirrors of the wire records (the hash word
//! included: the writer computes it, the reader returns it), converted with
//! the wire layer's `parse`/`encode`, so every field check is the Rust one.

use std::ffi::{c_char, c_void};
use std::path::Path;

use xunds_core::nds::{
    Counter, MappedSlab, ModelSlot, NdsError, RawReadSlab, RawSlab, ReadOnlySlab, Reader,
    RecordRead, Writer,
};
use xunds_core::wire::nds::model::{self, ModelRecord};
use xunds_core::wire::nds::process::{self, ProcessInfo};

use crate::status::{
    boxed, c_str, checked, guard, handle, out, unbox, NRT_CLOSED, NRT_FAILURE, NRT_INVALID,
    NRT_RESOURCE, NRT_STATUS, NRT_UNINITIALIZED,
};

/// `NEURON_DATASTORE_SIZE`: a slab file's length.
pub const XUNDS_NDS_SLAB_SIZE: usize = 262_144;
/// The region map's length (docs/abi.md §2.2): the least slab memory.
pub const XUNDS_NDS_REQUIRED_SIZE: usize = 67_200;

/// A record read whose copy is consistent and whose hash matches.
pub const XUNDS_RECORD_FRESH: u32 = 0;
/// A record whose hash word is zero: not published (nothing copied).
pub const XUNDS_RECORD_UNPUBLISHED: u32 = 1;
/// A record torn on both attempts: the stale last copy, never current.
pub const XUNDS_RECORD_TORN: u32 = 2;

/// `nds_mem_usage_info` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_nds_mem_usage_t {
    /// Aggregated bytes.
    pub total_size: u64,
    /// Number of chunks.
    pub chunk_count: u32,
    /// Zero.
    pub reserved: u32,
}

/// `nds_model_node_data_internal` (672 bytes, docs/abi.md §2.6).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_nds_model_record_t {
    /// FNV-1a-32 of the record with this word zeroed (the writer's).
    pub hash: u32,
    /// `node_info.model_id`.
    pub model_id: u32,
    /// `node_info.model_node_id`.
    pub model_node_id: u32,
    /// `node_info.name`: a NUL-padded C string.
    pub name: [u8; 256],
    /// `node_info.uuid`.
    pub uuid: [u8; 16],
    /// `node_info.nc_index`.
    pub nc_index: u8,
    /// `node_info.sg_index`.
    pub sg_index: u8,
    /// Zero.
    pub reserved: [u8; 2],
    /// `mem_usage[location][slot]`: host, then device.
    pub mem_usage: [[xunds_nds_mem_usage_t; 12]; 2],
}

/// `nds_version_info` (8 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_nds_version_t {
    /// Major.
    pub major: u8,
    /// Minor.
    pub minor: u8,
    /// Zero.
    pub reserved: [u8; 2],
    /// Build.
    pub build: u32,
}

/// `nds_process_info_internal` (64 bytes, docs/abi.md §2.7).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct xunds_nds_process_info_t {
    /// FNV-1a-32 of the record with this word zeroed (the writer's).
    pub hash: u32,
    /// The framework type.
    pub framework_type: u32,
    /// A NUL-padded C string.
    pub tag: [u8; 32],
    /// Framework version.
    pub framework_version: xunds_nds_version_t,
    /// FAL version.
    pub fal_version: xunds_nds_version_t,
    /// Runtime version.
    pub runtime_version: xunds_nds_version_t,
}

const _: () = assert!(core::mem::size_of::<xunds_nds_model_record_t>() == model::RECORD_SIZE);
const _: () = assert!(core::mem::size_of::<xunds_nds_mem_usage_t>() == 16);
const _: () = assert!(
    core::mem::size_of::<xunds_nds_process_info_t>() == process::PROCESS_INFO_SIZE
        && core::mem::size_of::<xunds_nds_version_t>() == process::VERSION_INFO_SIZE
);
const _: () = assert!(
    XUNDS_NDS_SLAB_SIZE == xunds_core::nds::SLAB_SIZE
        && XUNDS_NDS_REQUIRED_SIZE == xunds_core::nds::REQUIRED_SIZE
);
const _: () = assert!(
    core::mem::offset_of!(xunds_nds_model_record_t, mem_usage) == model::MEM_USAGE_OFF
        && core::mem::offset_of!(xunds_nds_model_record_t, nc_index) == model::off::NC_INDEX
);

/// The `NRT_STATUS` of an NDS refusal: EINVAL-like causes are NRT_INVALID,
/// ENOSPC and a slab another writer holds NRT_RESOURCE, an uncommitted slab
/// NRT_UNINITIALIZED, a released one NRT_CLOSED, I/O NRT_FAILURE.
fn nds_status(e: NdsError) -> NRT_STATUS {
    match e {
        NdsError::NoSpace | NdsError::Busy { .. } => NRT_RESOURCE,
        NdsError::NotCommitted => NRT_UNINITIALIZED,
        NdsError::Detached => NRT_CLOSED,
        NdsError::Io(_) | NdsError::Shrunk => NRT_FAILURE,
        _ => NRT_INVALID,
    }
}

/// A C struct's bytes (the mirrors have no implicit padding: every byte is
/// a field).
///
/// # Safety
/// `p` is valid for reads of a `T` for the call.
unsafe fn bytes_of<'a, T>(p: *const T) -> Result<&'a [u8], NRT_STATUS> {
    if p.is_null() || !p.is_aligned() {
        return Err(NRT_INVALID);
    }
    // SAFETY: our caller's contract; `T` is a padding-free C mirror.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), core::mem::size_of::<T>()) })
}

/// Copy `bytes` (exactly a `T`'s) into the C struct at `p`.
///
/// # Safety
/// `p` is valid for a write of a `T`.
unsafe fn write_bytes<T>(p: *mut T, bytes: &[u8]) -> Result<(), NRT_STATUS> {
    if p.is_null() || !p.is_aligned() || bytes.len() != core::mem::size_of::<T>() {
        return Err(NRT_INVALID);
    }
    // SAFETY: `p` is valid for `size_of::<T>()` bytes (contract), which is
    // `bytes.len()`; `T` is plain integers, any bytes are a valid value.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), bytes.len()) };
    Ok(())
}

/// Where a writer's slab lives.
enum WriterOver {
    Caller(Writer<RawSlab>),
    File(Writer<MappedSlab>),
}

/// An NDS writer (opaque): counters from any thread; records from any
/// thread of the one process that writes the slab's records.
pub struct xunds_nds_writer_t {
    magic: u64,
    w: WriterOver,
}
checked!(xunds_nds_writer_t, 0x5855_4e44_5357_5254);

/// Run `$e` with `$x` bound to the writer, whatever its slab.
macro_rules! with_writer {
    ($w:expr, $x:ident => $e:expr) => {
        match &$w.w {
            WriterOver::Caller($x) => $e,
            WriterOver::File($x) => $e,
        }
    };
}

/// Where a reader's slab lives.
enum ReaderOver {
    Caller(Reader<RawReadSlab>),
    File(Reader<ReadOnlySlab>),
}

/// An NDS reader (opaque): any thread; it never writes the slab.
pub struct xunds_nds_reader_t {
    magic: u64,
    r: ReaderOver,
}
checked!(xunds_nds_reader_t, 0x5855_4e44_5352_4452);

macro_rules! with_reader {
    ($r:expr, $x:ident => $e:expr) => {
        match &$r.r {
            ReaderOver::Caller($x) => $e,
            ReaderOver::File($x) => $e,
        }
    };
}

fn new_writer(w: WriterOver, out_p: *mut *mut xunds_nds_writer_t) -> Result<(), NRT_STATUS> {
    let h = boxed(xunds_nds_writer_t {
        magic: <xunds_nds_writer_t as crate::status::Checked>::MAGIC,
        w,
    });
    // SAFETY: valid by the entry point's contract (null refused by `out`).
    unsafe { out(out_p, h) }.inspect_err(|_| {
        // SAFETY: `h` was just boxed and never handed out.
        drop(unsafe { Box::from_raw(h) });
    })
}

fn new_reader(r: ReaderOver, out_p: *mut *mut xunds_nds_reader_t) -> Result<(), NRT_STATUS> {
    let h = boxed(xunds_nds_reader_t {
        magic: <xunds_nds_reader_t as crate::status::Checked>::MAGIC,
        r,
    });
    // SAFETY: valid by the entry point's contract (null refused by `out`).
    unsafe { out(out_p, h) }.inspect_err(|_| {
        // SAFETY: `h` was just boxed and never handed out.
        drop(unsafe { Box::from_raw(h) });
    })
}

/// The writable slab over the caller's `len` bytes at `slab`.
///
/// # Safety
/// `RawSlab::from_raw`'s.
unsafe fn caller_slab(slab: *mut c_void, len: usize) -> Result<RawSlab, NRT_STATUS> {
    // SAFETY: forwarded contract.
    unsafe { RawSlab::from_raw(slab.cast(), len) }.map_err(nds_status)
}

/// Lay out the `len` bytes at `slab` (8-byte aligned, at least
/// XUNDS_NDS_REQUIRED_SIZE) as a fresh slab and commit its header.
/// NRT_INVALID for an already committed slab (use `_attach`) or bad memory.
/// From now on every access to the memory, by anyone, must be an aligned
/// 4- or 8-byte atomic; it must outlive the writer. Any thread.
///
/// # Safety
/// `slab` is valid for reads and writes of `len` bytes until the writer is
/// closed; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_writer_init(
    slab: *mut c_void,
    len: usize,
    out: *mut *mut xunds_nds_writer_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { caller_slab(slab, len) }?;
        new_writer(WriterOver::Caller(Writer::new(s).map_err(nds_status)?), out)
    })
}

/// Attach a writer to a committed slab in caller memory (any number of
/// attached writers may count; one process writes the records).
/// NRT_UNINITIALIZED when the slab is not committed. Any thread.
///
/// # Safety
/// As `xunds_nds_writer_init`.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_writer_attach(
    slab: *mut c_void,
    len: usize,
    out: *mut *mut xunds_nds_writer_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { caller_slab(slab, len) }?;
        new_writer(
            WriterOver::Caller(Writer::attach(s).map_err(nds_status)?),
            out,
        )
    })
}

/// std. Create (or reuse a stale) slab file at `path` (262,144 bytes,
/// MAP_SHARED), take its one-writer lock for the writer's life and lay it
/// out. NRT_RESOURCE while another live writer holds the lock; NRT_INVALID
/// for an existing file that is not a slab (left untouched). Any thread.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_create(
    path: *const c_char,
    out: *mut *mut xunds_nds_writer_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { c_str(path) }?;
        new_writer(
            WriterOver::File(Writer::create(Path::new(p)).map_err(nds_status)?),
            out,
        )
    })
}

/// std. Open the slab file at `path` and attach a writer to it (its lock
/// taken as by `xunds_nds_create`). NRT_RESOURCE while another live writer
/// holds it. Any thread.
///
/// # Safety
/// As `xunds_nds_create`.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_open(
    path: *const c_char,
    out: *mut *mut xunds_nds_writer_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { c_str(path) }?;
        let slab = MappedSlab::open(Path::new(p)).map_err(nds_status)?;
        new_writer(
            WriterOver::File(Writer::attach(slab).map_err(nds_status)?),
            out,
        )
    })
}

/// Free the writer and leave the slab as it is (committed: readers go on
/// reading it; a file's lock is dropped, the file kept). One call, after
/// every other call on `w` returned.
///
/// # Safety
/// `w` came from this library and is released once.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_writer_close(w: *mut xunds_nds_writer_t) -> NRT_STATUS {
    // SAFETY: the caller's contract.
    guard(|| unsafe { unbox(w) }.map(drop))
}

/// Release the slab as the kernel does when its producer goes away (the
/// header to zero first, so readers report it closed, then the map), then
/// free the writer. One call, after every other call on `w` returned.
///
/// # Safety
/// As `xunds_nds_writer_close`.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_writer_release(w: *mut xunds_nds_writer_t) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let h = unsafe { unbox(w) }?;
        match h.w {
            WriterOver::Caller(w) => drop(w.release()),
            WriterOver::File(w) => drop(w.release()),
        }
        Ok(())
    })
}

/// Which counter: an ND counter (`core` = XUNDS_ND) or an NC counter of
/// `core` 0..=15.
pub const XUNDS_ND: u32 = u32::MAX;

fn counter(core: u32, index: u32) -> Result<Counter, NRT_STATUS> {
    match core {
        XUNDS_ND => Counter::nd_index(index),
        c => Counter::nc_index(c, index),
    }
    .map_err(nds_status)
}

/// Counter update: add (wrapping, `LOCK ADD`).
pub const XUNDS_NDS_ADD: u32 = 0;
/// Counter update: subtract (wrapping, `LOCK SUB`).
pub const XUNDS_NDS_SUB: u32 = 1;
/// Counter update: store.
pub const XUNDS_NDS_SET: u32 = 2;
/// Counter update: OR (`LOCK OR`; the only update of FEATURE_BITMAP).
pub const XUNDS_NDS_OR: u32 = 3;

/// Any thread. Update counter `index` of `core` (XUNDS_ND for the ND
/// counters, docs/abi.md §2.4; 0..=15 for a core's NC counters, §2.5) with
/// `op` and `v`. NRT_INVALID for an index out of its band, an unknown `op`,
/// or add/sub/set of FEATURE_BITMAP (OR only).
///
/// # Safety
/// `w` is a live writer.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_counter_update(
    w: *const xunds_nds_writer_t,
    core: u32,
    index: u32,
    op: u32,
    v: u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { handle(w) }?;
        let c = counter(core, index)?;
        with_writer!(w, x => match op {
            XUNDS_NDS_ADD => x.add(c, v).map(drop),
            XUNDS_NDS_SUB => x.sub(c, v).map(drop),
            XUNDS_NDS_SET => x.set(c, v),
            XUNDS_NDS_OR => {
                x.or(c, v);
                Ok(())
            }
            _ => return Err(NRT_INVALID),
        })
        .map_err(nds_status)
    })
}

fn model_from(rec: *const xunds_nds_model_record_t) -> Result<ModelRecord, NRT_STATUS> {
    // SAFETY: the entry point's contract: `rec` valid for a read.
    ModelRecord::parse(unsafe { bytes_of(rec) }?).map_err(|_| NRT_INVALID)
}

/// Publish a model record into a free slot (the hash word given is
/// ignored: the writer computes it); `*slot_out` is its slot 0..=63.
/// NRT_RESOURCE when all 64 slots are live. The record is copied. Any
/// thread of the slab's one record-writing process.
///
/// # Safety
/// `w` is a live writer; `rec` is valid for a read; `slot_out` for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_model_commit(
    w: *const xunds_nds_writer_t,
    rec: *const xunds_nds_model_record_t,
    slot_out: *mut u32,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { handle(w) }?;
        if slot_out.is_null() {
            return Err(NRT_INVALID);
        }
        let r = model_from(rec)?;
        let slot = with_writer!(w, x => x.commit_model(&r)).map_err(nds_status)?;
        // SAFETY: checked non-null; valid by contract.
        unsafe { out(slot_out, slot.index() as u32) }
    })
}

/// Rewrite the live model record in `slot`. NRT_INVALID for a free slot.
/// Any thread of the slab's one record-writing process.
///
/// # Safety
/// `w` is a live writer; `rec` is valid for a read.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_model_update(
    w: *const xunds_nds_writer_t,
    slot: u32,
    rec: *const xunds_nds_model_record_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { handle(w) }?;
        let s = ModelSlot::new(slot as usize).map_err(nds_status)?;
        let r = model_from(rec)?;
        with_writer!(w, x => x.update_model(s, &r)).map_err(nds_status)
    })
}

/// Delete the live model record in `slot`. NRT_INVALID for a free slot.
/// Any thread of the slab's one record-writing process.
///
/// # Safety
/// `w` is a live writer.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_model_delete(
    w: *const xunds_nds_writer_t,
    slot: u32,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { handle(w) }?;
        let s = ModelSlot::new(slot as usize).map_err(nds_status)?;
        with_writer!(w, x => x.delete_model(s)).map_err(nds_status)
    })
}

/// Publish the process-info record (the hash word given is ignored). Any
/// thread of the slab's one record-writing process.
///
/// # Safety
/// `w` is a live writer; `rec` is valid for a read.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_process_info_publish(
    w: *const xunds_nds_writer_t,
    rec: *const xunds_nds_process_info_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let w = unsafe { handle(w) }?;
        // SAFETY: the caller's contract: `rec` valid for a read.
        let p = ProcessInfo::parse(unsafe { bytes_of(rec) }?).map_err(|_| NRT_INVALID)?;
        with_writer!(w, x => x.publish_process_info(&p)).map_err(nds_status)
    })
}

/// Attach a reader to the committed slab in the `len` bytes at `slab` (a
/// read-only mapping will do: the reader only loads, with aligned atomic
/// loads). NRT_UNINITIALIZED when not committed (after one short retry),
/// NRT_INVALID for bad memory or a slab of another layout. Any thread.
///
/// # Safety
/// `slab` is valid for reads of `len` bytes until the reader is closed;
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_reader_attach(
    slab: *const c_void,
    len: usize,
    out: *mut *mut xunds_nds_reader_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let s = unsafe { RawReadSlab::from_raw(slab.cast(), len) }.map_err(nds_status)?;
        new_reader(
            ReaderOver::Caller(Reader::attach(s).map_err(nds_status)?),
            out,
        )
    })
}

/// std. Map the slab file at `path` read-only (PROT_READ) and attach a
/// reader to it. Any thread.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_reader_open(
    path: *const c_char,
    out: *mut *mut xunds_nds_reader_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { c_str(path) }?;
        new_reader(
            ReaderOver::File(Reader::open(Path::new(p)).map_err(nds_status)?),
            out,
        )
    })
}

/// Free the reader (a file's mapping is unmapped). One call, after every
/// other call on `r` returned.
///
/// # Safety
/// `r` came from this library and is released once.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_reader_close(r: *mut xunds_nds_reader_t) -> NRT_STATUS {
    // SAFETY: the caller's contract.
    guard(|| unsafe { unbox(r) }.map(drop))
}

/// Any thread. Counter `index` of `core` (XUNDS_ND or 0..=15), as
/// `xunds_nds_counter_update` names it. NRT_CLOSED once the slab was
/// released.
///
/// # Safety
/// `r` is a live reader; `v` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_read_counter(
    r: *const xunds_nds_reader_t,
    core: u32,
    index: u32,
    v: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { handle(r) }?;
        let c = counter(core, index)?;
        let x = with_reader!(r, x => x.counter(c)).map_err(nds_status)?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(v, x) }
    })
}

/// Any thread. The model-slot bitmap (bit n: slot n is live).
///
/// # Safety
/// `r` is a live reader; `bits` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_read_model_bitmap(
    r: *const xunds_nds_reader_t,
    bits: *mut u64,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { handle(r) }?;
        let x = with_reader!(r, x => x.model_bitmap()).map_err(nds_status)?;
        // SAFETY: valid by contract (null refused by `out`).
        unsafe { out(bits, x) }
    })
}

/// Write a record read's verdict, and its copy when there is one.
///
/// # Safety
/// `state` and `rec` are valid for writes.
unsafe fn read_out<R, C>(
    read: RecordRead<R>,
    encode: impl Fn(&R) -> Vec<u8>,
    state: *mut u32,
    rec: *mut C,
) -> Result<(), NRT_STATUS> {
    let (s, copy) = match &read {
        RecordRead::Fresh(r) => (XUNDS_RECORD_FRESH, Some(r)),
        RecordRead::Unpublished => (XUNDS_RECORD_UNPUBLISHED, None),
        RecordRead::Torn(t) => (XUNDS_RECORD_TORN, Some(&t.copy)),
    };
    if state.is_null() || rec.is_null() {
        return Err(NRT_INVALID);
    }
    if let Some(r) = copy {
        // SAFETY: our caller's contract.
        unsafe { write_bytes(rec, &encode(r)) }?;
    }
    // SAFETY: our caller's contract.
    unsafe { out(state, s) }
}

/// Any thread. Read the model record in `slot` (0..=63): `*state` is
/// XUNDS_RECORD_FRESH (`*rec` the record), _UNPUBLISHED (`*rec` untouched)
/// or _TORN (`*rec` the stale last copy, never to be trusted as current).
///
/// # Safety
/// `r` is a live reader; `state` and `rec` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_read_model(
    r: *const xunds_nds_reader_t,
    slot: u32,
    state: *mut u32,
    rec: *mut xunds_nds_model_record_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { handle(r) }?;
        let s = ModelSlot::new(slot as usize).map_err(nds_status)?;
        let read = with_reader!(r, x => x.model(s)).map_err(nds_status)?;
        // SAFETY: the caller's contract.
        unsafe { read_out(read, |m| m.encode().to_vec(), state, rec) }
    })
}

/// Any thread. Read the process-info record, as `xunds_nds_read_model`.
///
/// # Safety
/// `r` is a live reader; `state` and `rec` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn xunds_nds_read_process_info(
    r: *const xunds_nds_reader_t,
    state: *mut u32,
    rec: *mut xunds_nds_process_info_t,
) -> NRT_STATUS {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { handle(r) }?;
        let read = with_reader!(r, x => x.process_info()).map_err(nds_status)?;
        // SAFETY: the caller's contract.
        unsafe { read_out(read, |p| p.encode().to_vec(), state, rec) }
    })
}
