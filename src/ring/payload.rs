//! Moving a work item through a slot's 8-byte `exec_info` word (docs/abi.md §1.6
//! QUIRK: the work item crosses the SPSC boundary by pointer and changes
//! owning thread at the slot).
//!
//! [`Payload::into_word`] gives up ownership into the word at submit;
//! [`Payload::from_word`] takes it back exactly once, at pop (or when the
//! queue is dropped with the item still in flight). A plain `u64` costs
//! nothing and is what the benchmarks and loom models carry; `Box<U>` and
//! `Arc<U>` (with `std`) and `&'static U` carry real work items.

#[cfg(feature = "std")]
use std::sync::Arc;

/// A value that can travel through a slot's `exec_info` word.
///
/// # Examples
///
/// A boxed work item: its address goes through the slot, ownership with it.
///
/// ```
/// use xunds::ring::{RingMem, XuQueue};
/// use xunds::wire::seq_id::XuId;
/// use xunds::NrtStatus;
///
/// let mut queue = XuQueue::<Box<String>>::new(RingMem::owned(XuId::new(0, 0, 1), 2, 1).unwrap());
/// let (mut producer, mut worker) = queue.split();
/// producer.submit(Box::new("job".to_string()), None).unwrap();
/// producer.trigger_next().unwrap();
/// assert_eq!(*worker.pop(NrtStatus::SUCCESS).unwrap().item, "job");
/// ```
///
/// # Safety
/// `from_word(into_word(x))` must give back `x` (ownership included), and
/// `into_word` must not rely on anything but the word to be reconstructed.
pub unsafe trait Payload: Send + Sized + 'static {
    /// Give up ownership into a word.
    fn into_word(self) -> u64;
    /// Take ownership back.
    ///
    /// # Safety
    /// `w` came from `into_word` of this type and is consumed at most once.
    unsafe fn from_word(w: u64) -> Self;
}

// SAFETY: a plain integer is its own word; nothing is owned.
unsafe impl Payload for u64 {
    #[inline]
    fn into_word(self) -> u64 {
        self
    }
    #[inline]
    unsafe fn from_word(w: u64) -> Self {
        w
    }
}

// SAFETY: a shared `'static` reference owns nothing; the word is its address
// and `from_word` gives the same reference back.
unsafe impl<U: Sync + 'static> Payload for &'static U {
    #[inline]
    fn into_word(self) -> u64 {
        core::ptr::from_ref(self) as usize as u64
    }
    #[inline]
    unsafe fn from_word(w: u64) -> Self {
        // SAFETY: the caller guarantees `w` came from `into_word`, so it is
        // the address of a `U` that lives for `'static`.
        unsafe { &*(w as usize as *const U) }
    }
}

// SAFETY: `Box::into_raw`/`Box::from_raw` round-trip the allocation.
#[cfg(feature = "std")]
unsafe impl<U: Send + 'static> Payload for Box<U> {
    #[inline]
    fn into_word(self) -> u64 {
        Box::into_raw(self) as u64
    }
    #[inline]
    unsafe fn from_word(w: u64) -> Self {
        // SAFETY: the caller guarantees `w` came from `into_word` (so from
        // `Box::into_raw`) and is consumed once.
        unsafe { Box::from_raw(w as usize as *mut U) }
    }
}

// SAFETY: `Arc::into_raw`/`Arc::from_raw` round-trip one strong count.
#[cfg(feature = "std")]
unsafe impl<U: Send + Sync + 'static> Payload for Arc<U> {
    #[inline]
    fn into_word(self) -> u64 {
        Arc::into_raw(self) as u64
    }
    #[inline]
    unsafe fn from_word(w: u64) -> Self {
        // SAFETY: the caller guarantees `w` came from `Arc::into_raw` and the
        // strong count it carries is taken back once.
        unsafe { Arc::from_raw(w as usize as *const U) }
    }
}
