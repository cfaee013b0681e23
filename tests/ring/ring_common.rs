//! Shared fixtures for the ring test files: one suite, two storages.
#![allow(dead_code)]

use xunds::hal::mem::{Mapping, Region};
use xunds::ring::storage::mapped_len;
use xunds::ring::{MappedStorage, OwnedStorage, Payload, Producer, QueueConfig, Storage, Worker};

/// Reads the full ABI image (header + slots) of a queue.
pub type Bytes = Box<dyn Fn() -> Vec<u8>>;

/// A fresh queue's handles plus its byte reader.
pub type Made<T, S> = (Producer<T, S>, Worker<T, S>, Bytes);

/// A storage backend the suite runs against.
pub trait Backend {
    type S: Storage;
    const NAME: &'static str;
    fn make<T: Payload>(cfg: QueueConfig) -> Made<T, Self::S>;
}

/// Heap atomics; bytes from the storage's ABI image.
pub struct Owned;

impl Backend for Owned {
    type S = OwnedStorage;
    const NAME: &'static str = "owned";
    fn make<T: Payload>(cfg: QueueConfig) -> Made<T, OwnedStorage> {
        let (p, w) = xunds::ring::XuQueue::owned(cfg).expect("owned queue");
        let q = p.queue().clone();
        // SAFETY: the suite calls the byte reader on the thread that owns the
        // producer, between its operations, never while a submit runs.
        (p, w, Box::new(move || unsafe { q.snapshot() }))
    }
}

/// The byte-exact header + slot array in an anonymous mapping; bytes read
/// word by word with atomic loads, independently of the queue.
pub struct Mapped;

impl Mapped {
    pub fn region(cap: u64) -> Region {
        Mapping::anonymous(mapped_len(cap))
            .expect("mmap")
            .into_region()
    }
}

impl Backend for Mapped {
    type S = MappedStorage;
    const NAME: &'static str = "mapped";
    fn make<T: Payload>(cfg: QueueConfig) -> Made<T, MappedStorage> {
        let len = mapped_len(cfg.capacity);
        let region = Self::region(cfg.capacity);
        // SAFETY: a fresh private anonymous mapping; only the queue writes it,
        // the test only reads it.
        let (p, w) =
            unsafe { xunds::ring::XuQueue::mapped(region.clone(), cfg) }.expect("mapped queue");
        (
            p,
            w,
            Box::new(move || {
                // Word by word with atomic loads: waiters store their handle
                // word atomically while tests poll (a plain byte copy would
                // race with that store).
                let mut b = vec![0u8; len];
                for (i, w) in b.chunks_exact_mut(8).enumerate() {
                    let v = region.load_u64(i * 8, std::sync::atomic::Ordering::Relaxed);
                    w.copy_from_slice(&v.expect("read").to_le_bytes());
                }
                b
            }),
        )
    }
}

/// The suite counts open fds (`/proc/self/fd`), which is process-wide: every
/// test that [`both!`] makes runs under this lock, one at a time.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Instantiate `$f::<Owned>` and `$f::<Mapped>` as two `#[test]`s.
macro_rules! both {
    ($($f:ident),* $(,)?) => {
        mod owned {
            $( #[test] fn $f() { let _g = $crate::ring_common::serial(); super::$f::<$crate::ring_common::Owned>() } )*
        }
        mod mapped {
            $( #[test] fn $f() { let _g = $crate::ring_common::serial(); super::$f::<$crate::ring_common::Mapped>() } )*
        }
    };
}
