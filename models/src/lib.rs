//! # docsim-models: the independent reference model (issue 4)
//!
//! An in-memory statement of DocDB's semantics in the plainest data structures, written
//! without the engine's encoders, reader or compaction code, so that a checker built on it
//! proves something. Not built yet: the simulator that needs it arrives with issue 4.
