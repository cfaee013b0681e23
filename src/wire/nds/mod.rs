//! Seed 004, the NDS wire format: filled in by the wire-layer issue.
