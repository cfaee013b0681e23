//! `udma`: filled in by the wire-layer issue.
