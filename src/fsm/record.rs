//! NDS record commit lifecycle (seed 004 §5-§7). Filled in by the datastore issue.
