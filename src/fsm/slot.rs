//! XU ring slot lifecycle FREE -> SUBMITTED -> TRIGGERED -> DONE -> FREE (seed 000 §1, §6). Filled in by the ring issue.
