//! `work_item`: filled in by the wire-layer issue.
