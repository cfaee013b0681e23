//! The NDS datastore protocol (seed 004): slab memory backings, the
//! publisher-side writer and the read-only reader with the FNV-1a record hash
//! protocol. Its own folder because, like the ring, the protocol is generic
//! over where its words live (a real `MAP_SHARED` slab or a heap backing for
//! loom and Miri).
