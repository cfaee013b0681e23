//! `nq`: filled in by the wire-layer issue.
