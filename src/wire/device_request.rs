//! `device_request`: filled in by the wire-layer issue.
