//! # docsim-reports: report types and rendering (issue 6)
//!
//! Serde types for runs and torture campaigns and their renderers; not built yet.
