//! The actors: Producer, Worker, Device-sequencer-proxy and NDS-publisher.
//! Each is a plain struct owning its typed state machine and ring endpoints,
//! with a non-blocking `poll` that reports progress; actors never spawn
//! threads. Mailboxes are bounded rtrb rings (an in-crate SPSC under loom).
