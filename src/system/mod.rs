//! The system: the public async API (load, unload, schedule, is_completed,
//! last_completed, completion fd, blocking execute), the builder that wires
//! the actors, the threaded and deterministic runners, and trace/replay.
